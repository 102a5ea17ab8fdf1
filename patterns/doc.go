// Package patterns makes group calls: the same registered function
// (actor.Handler, registered with System.Register) called on a list of
// nodes, with a policy about which nodes to use and how many answers to
// wait for. The semantics are ecall's group functions in Go shapes.
//
//	pattern      nodes contacted      waits for       success            failure
//	CallOne      one at a time        first success   Result             *AllFailedError, ErrNoneAvailable
//	CallAny      local alone, then    first success   Result             *AllFailedError, ErrNoneAvailable
//	             all in parallel
//	CallAll      all in parallel      all successes   []Result           NodeError, ErrNoneAvailable
//	CallAllWait  all in parallel      all answers     replies, rejects   never fails (see below)
//	CastOne      one                  nothing         the node chosen    ErrNoneAvailable
//	CastAll      all                  nothing         -                  none reported
//
// Every Call pattern also fails with a *CoordinatorError when the group
// call itself fails (ctx ended, its coordinator killed or crashed):
// CallAllWait's third result is nil otherwise.
//
// Results are tagged with their node; a node listed twice is called twice
// and yields one result per entry. Lists are in arrival order, except
// CallOne's failures, which are in the order tried.
//
// # Usage
//
//	sys, _ := actor.Start(actor.Config{Name: "a"})
//	_, _ = remote.Start(ctx, sys, remote.Config{...})
//	pt, err := patterns.Start(sys) // the patterns supervisor; stops with sys
//
//	res, err := pt.CallAny(ctx, []string{"a", "b", "c"}, "read", &pb.Key{...})
//	all, err := pt.CallAll(ctx, replicas, "prepare", txn, patterns.UnreachableIsError())
//	var ne patterns.NodeError
//	if errors.As(err, &ne) { abort(ne.Node, ne.Err) }
//	replies, rejects, err := pt.CallAllWait(ctx, nodes, "status", &pb.Empty{})
//	pt.CastAll(nodes, "invalidate", key)
//
// # What counts as a failure
//
// A node's failure is a rejection (*actor.RemoteError: its function
// returned an error), a crash (*actor.PanicError), or any other error of
// the call. A node is unreachable when the call never got an answer from
// it: actor.ErrUnreachable, actor.ErrNodeDown, actor.ErrNotSent, or its
// caller actor ended before it reported (ErrCallerLost); see
// IsUnreachable. A function that returns such an error from a call of
// its own as-is (its downstream was unreachable or went down; see
// actor.Handler) passes that outcome on, and its node counts as
// unreachable too. Unreachable nodes are skipped, as if they were not in
// the list, unless the call has the UnreachableIsError option (ecall's
// RpcErr), which makes them count as that node's error. CallAllWait lists
// them among its rejects either way.
//
// # Coordinators
//
// Each call of CallOne, CallAny, CallAll and CallAllWait is run by a
// coordinator actor, a Temporary child of the patterns supervisor. The
// coordinator spawns one caller actor per node it calls (its children,
// so it watches them), feeds their results to the pattern's policy (a
// synchronous state machine) and answers the owner, the
// goroutine that made the group call, which waits on a Request to it.
// Nothing is linked to the owner: when the owner is an actor, its
// mailbox and its watches are left as they were.
//
//   - A caller that ends before it reports (stopped or crashed) counts as
//     unreachable for its node.
//   - A coordinator that is stopped or crashes before it answers makes
//     the group call return a *CoordinatorError naming the pattern and
//     its arguments.
//   - When ctx ends before the answer, the coordinator is stopped, its
//     callers' calls are cancelled (remote calls get a cancel), and the
//     call returns a *CoordinatorError whose Reason is ctx.Err() once
//     the coordinator is gone.
//   - After the answer, callers whose results are no longer wanted
//     (CallAny after the first success or after its local success, the
//     casts included; CallAll after a failure) finish their calls and
//     exit; their results are discarded. Their ctx keeps the owner's
//     values and deadline but not its cancellation, so cancelling ctx
//     after the call has returned does not cut them short. The
//     coordinator stops when the last of them is gone; stopping the
//     node stops them all.
//
// CastOne and CastAll need no coordinator: they cast from the calling
// goroutine with System.Cast.
//
// # The caller's duties
//
//   - Start one Patterns per node, after the remote layer (if any), and
//     register the function on every node that is called.
//   - Bound each group call with ctx where a node may be slow: there is
//     no default timeout. A node that dies fails its calls by liveness;
//     a live node that never answers holds the call until ctx ends.
//   - A group call blocks the calling goroutine; made from inside an
//     actor's Receive it blocks that actor (like System.Request).
//   - Arguments and results that cross nodes are proto.Message values
//     whose types every node registered (System.RegisterTypes).
//   - Do not change arg while a call runs (the node list is copied).
//     Results are not copied: a local node's result is the value its
//     function returned.
//   - With CallAny and CallAll, the function may still run on other
//     nodes after the answer (see above): make it safe to run there.
package patterns
