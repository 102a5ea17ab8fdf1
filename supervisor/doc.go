// Package supervisor restarts actors that fail, with the semantics of
// Erlang/OTP supervisors: restart strategies, restart types, a restart
// intensity that escalates to the parent when exceeded, ordered startup
// and shutdown, and children added and removed at run time.
//
// A supervisor is an actor. It starts its children in list order, is told
// (actor.Terminated) when one ends, and decides by the child's
// RestartType and the Strategy what to restart. A restarted child is a
// new actor with a new PID: it receives actor.Restarting (the previous
// PID, why it ended, the restart count) just before Started, and its
// registered Name, if any, is registered again. More than Intensity
// restarts within Period and the supervisor gives up: it stops its
// children in reverse start order and ends with an *IntensityError, which
// its own supervisor handles like any abnormal end of a child.
//
// A child with a Backoff in its ChildSpec is restarted after a delay
// that doubles with each failure in a row (jittered, capped, reset once
// the child ran ResetAfter), on the System's clock. Each failure counts
// toward Intensity when the child ends, not when its delayed restart
// happens; while a restart waits, the restarts the supervisor owes wait
// with it.
//
// # Usage
//
//	sys, _ := actor.Start(actor.Config{Name: "orders-1"})
//	sup, err := supervisor.Start(sys, supervisor.Spec{
//		Strategy: supervisor.RestForOne,
//		Children: []supervisor.ChildSpec{
//			{ID: "db", Props: dbProps, Name: "db"},
//			{ID: "cache", Props: cacheProps, Restart: supervisor.Transient},
//			supervisor.Nested("workers", supervisor.Spec{Children: workerSpecs}),
//		},
//	})
//	// ...
//	pid, err := supervisor.StartChild(ctx, sys, sup, supervisor.ChildSpec{ID: "job-7", Props: jobProps, Restart: supervisor.Temporary})
//	kids, err := supervisor.WhichChildren(ctx, sys, sup)
//	trees := supervisor.Trees(ctx, sys) // every tree on sys, restart counts included
//	err = sys.Stop(ctx) // stops the tree: each supervisor stops its children in reverse order
//
// # The caller's duties
//
//   - Refer to children by registered Name (or ask WhichChildren), not by
//     a PID kept from before: every restart makes a new PID.
//   - A child's Started runs on the supervisor's goroutine, inside the
//     supervisor's Receive. Keep it short: while it runs the supervisor
//     handles nothing else. A child must not call the dynamic API of its
//     own supervisor from Started or Stopping: that waits for a
//     supervisor that is waiting for the child (until the child's
//     Shutdown bound, or for ever when it has none).
//   - Set Shutdown to how long a child may take to stop. Go cannot kill a
//     goroutine: a child that does not stop in time is logged and left
//     stopping while the supervisor moves on to the next one; the
//     supervisor still waits for it before it is itself gone. Until it
//     has gone its registered Name stays taken, so a restart of it fails
//     and counts toward the intensity.
//   - Choose Intensity and Period for the failure rate you accept; the
//     zero values mean 3 restarts in 5 seconds. A supervisor always
//     allows at least one restart: for "never restart" use Temporary.
//   - Spawning Props(spec) yourself, like Start, returns a bad spec as a
//     *SpecError and a child that failed to start as a *StartError: the
//     supervisor exits from its Started with the error, and Spawn returns
//     it.
//   - The dynamic API (StartChild, TerminateChild, RestartChild,
//     DeleteChild, WhichChildren) takes the PID of a supervisor on the
//     same node; its requests are Go values that do not cross the wire.
//     Sent to an actor that is not a supervisor, a request fails with
//     ErrNotSupervisor if the actor answers, and waits for ctx if it
//     does not: bound it with ctx. Trees asks every supervisor on the
//     node the same way (each answers between its messages); one that is
//     busy past ctx is reported with Err, the others still are.
//   - A supervisor handles only lifecycle messages and the dynamic API;
//     anything else sent to it is dropped.
//
// # Semantics in detail
//
// When a child ends, the supervisor ignores it if the PID is not the
// current instance (an instance it stopped itself). A Temporary child is
// removed; a Transient child that stopped normally (nil Reason) is kept
// but not restarted; otherwise the restart counts toward the intensity
// and the strategy applies: OneForOne restarts the child alone; OneForAll
// stops every other running child in reverse start order and restarts
// them all in start order; RestForOne does the same for the children
// started after it. Siblings restarted this way receive a Restarting
// whose Reason is a *SiblingError. Children that were not running
// (terminated with TerminateChild, or a Transient child that had stopped
// normally) stay stopped; Temporary siblings are removed. A restart whose
// Spawn fails counts as another failure and is retried with a message to
// the supervisor itself until it succeeds or the intensity is exceeded.
//
// Every restart, failed restart and give-up is logged with the child ID,
// PID and reason, on the system logger with the supervisor's PID.
//
// # When a top-level supervisor gives up
//
// A supervisor with no supervisor above it (started with Start or
// StartNamed) that exceeds its intensity stops its children, logs
// "giving up" with the last child's reason at error level, and ends with
// an *IntensityError, which every actor watching it receives in
// actor.Terminated. Then nothing restarts it: its children's registered
// names are free (a request to one is actor.ErrNoProcess, not executed),
// it leaves Trees and the observer, and the node itself keeps running:
// it is not stopped, it stays in discovery and serves its other actors
// and functions. A node whose work is that tree is then up but useless;
// watch the top-level supervisor and decide: stop the process so that
// the orchestrator restarts it (the usual choice), or Start the tree
// again after a pause of your own.
//
//	down := make(chan struct{})
//	sys.SpawnFunc(func(c *actor.Context) { // in main, after supervisor.Start
//		switch c.Message().(type) {
//		case actor.Started:
//			c.Watch(sup)
//		case actor.Terminated:
//			close(down)
//		}
//	})
//	<-down
//	sys.Stop(ctx)
//	os.Exit(1)
package supervisor
