// Package services lets a node provide named, versioned services and any
// node call them by name and compatible version, without knowing which
// node serves them, with retries that are safe by construction and a
// graceful drain that fails no call.
//
// # Usage
//
//	sys, _ := actor.Start(actor.Config{Name: "search-7f9c"})
//	node, _ := remote.Start(ctx, sys, remote.Config{Cookie: c, Discovery: consul})
//	svc, err := services.Start(ctx, node, services.Config{})
//
//	// Provide: functions with their contract, defaults for callers.
//	err = svc.Provide(ctx, services.Service{
//		Name:    "search",
//		Version: services.MustVersion("2.3.1"),
//		Defaults: services.Defaults{
//			Retry:    services.RetryPolicy{Budget: 10 * time.Second},
//			Deadline: 2 * time.Second, // bounds a wedged handler
//		},
//		Functions: []services.Function{
//			{Name: "query", Handler: query, Idempotent: true},
//			{Name: "reindex", Handler: reindex}, // not idempotent
//		},
//	})
//
//	// Call: any provider of search 2.x, per-call options on top.
//	res, err := svc.Call(ctx, "search", services.Major(2), "query", q,
//		services.WithBackoff(100*time.Millisecond))
//	search := svc.Ref("search", services.AtLeast("2.3"))
//	res, err = search.Call(ctx, "reindex", r)
//
//	err = sys.Stop(ctx) // drains: see "Graceful drain"
//
// # Announcing
//
// Provide registers each function (under "svc:<name>@<major>:<fn>") and
// announces the node's services with remote.Node.Announce: through
// discovery (Consul service meta; the static provider has none) and over
// every link, late joiners included. The encoding is compact and fits
// Consul's limits: one meta entry per service ("s0", "s1", ...; a record
// over 512 bytes continues in "s0_1", ...), each
// "<name>@<version>;<defaults>;<functions>", for example
// "search@2.3.1;b10s,p50ms,d2s;query:i,suggest:i:d200ms,reindex" (i marks
// an idempotent function, k one run under an idempotency guard
// (Function.Guard), d a deadline; b, p, x, a are the retry
// defaults), plus "sv" marking a node that runs the layer. A node's
// services take at most 59 entries; Provide refuses more, naming the
// service. Every node learns what the
// others provide from those announcements; a node that leaves (link
// gone, goodbye, discovery down) leaves the registry with it.
//
// # Calling and versions
//
// A call names a service and a Constraint: Major(2) accepts 2.x.y,
// AtLeast("2.3") accepts 2.3.0 up to 3.0.0. Before every attempt the
// provider is resolved again among the registry's providers: the right
// name, a version the constraint accepts, the function, not draining;
// random among those, avoiding the node that just failed. A failed lookup
// is not executed and distinct: actor.ErrNoService (nobody announces the
// name), actor.ErrNoVersion (no accepted version), actor.ErrNoFunction
// (no accepted version has the function), actor.ErrDraining (every one
// is draining). Lookups are retried within the budget like any
// not-executed failure, so a provider being redeployed, even under a new
// node name, is reached when it comes back.
//
// # Options merge field by field
//
// A RetryPolicy field left zero is taken from the next level: the call's
// options, then the provider's Defaults.Retry (announced with the
// service), then Config.Retry, then DefaultRetryPolicy. A caller that sets
// only the backoff keeps the provider's budget and attempts. The policy
// of a call is fixed at its first attempt (Effective shows it).
//
// # Retries
//
//	outcome of the attempt                          retried?
//	not executed (lookup, ErrUnreachable,           yes, within the budget
//	  ErrNotSent, ErrDraining, ErrNoFunction, ...,
//	  a handler's actor.NotExecutedError, or a
//	  not-executed error of a call it made,
//	  returned as-is)
//	may have executed (ErrNodeDown, the             only if the provider declared
//	  provider's Deadline passed mid-call)            the function Idempotent; for
//	                                                  a keyed function (Guard) and
//	                                                  a call carrying a key
//	                                                  (idempotency.WithKey), settled
//	                                                  by the provider's Status: its
//	                                                  recorded result, or a retry
//	                                                  with the next attempt number
//	                                                  once never ran fenced the key
//	executed (a rejection, a panic)                 never
//	the caller's ctx ended                          never
//
// The budget is an absolute deadline counted from the start of the first
// attempt: no attempt starts at or after it, and a pause that would end
// past it is not taken (no hidden last try). Pauses start at Backoff and
// double up to MaxBackoff; MaxAttempts caps the count. Time comes from
// Config.Clock, so tests can check the attempts' start times exactly.
//
// # Deadlines
//
// There is no default timeout. ctx bounds the whole call and its deadline
// travels with each attempt as an absolute time. A provider may declare a
// Deadline on its contract (per service, or per function): the handler's
// ctx ends then, and the caller stops waiting then, with a
// may-have-executed error. That is what bounds a wedged handler; a node
// that dies is caught by liveness, not by a deadline.
//
// # Graceful drain
//
// System.Stop runs this layer's stop hook first: the node stops picking
// itself, remote.Node.Drain marks it draining in discovery and on every
// link (new calls are refused with ErrDraining, not executed), and every
// node that sees the drain stops choosing it. A call that still reaches
// it is refused and retried elsewhere. Then, if the node provides
// anything, it waits (Config.DrainAckWait, and the Stop ctx) for every
// linked services node to acknowledge: a node acknowledges once it no
// longer picks the provider and has no call pending on it, so the
// provider's goodbye cannot overtake a reply or a refusal those calls are
// waiting for. Then the remote layer finishes the running calls within
// the Stop ctx, says goodbye, deregisters and closes its links. A call
// that finished before the node left never fails.
//
// # Observability
//
// Go accessors: Pending (calls waiting per provider incarnation, with the
// oldest age), InFlight (calls running in each function provided here),
// Calls and Retries (by result and by reason), Providers, DrainAcks. The
// same through Collector, a prometheus.Collector to register.
//
// # Reading the errors
//
// A failed call is a *CallError: the service, the constraint, the
// function, the provider of the last attempt (node, incarnation,
// version), every attempt with its start, why it stopped, and the last
// error, wrapped, so errors.Is, errors.As and actor.Outcome work. When an
// earlier attempt may have executed and the last did not, actor.Outcome
// says MayHaveExecuted for the whole call.
//
//	in the message                       means                                       outcome
//	lookup failed: no such service       nobody announces it: provider down, not     not executed
//	                                     started, withdrawn, another cluster
//	lookup failed: no compatible version providers exist, none the constraint        not executed
//	                                     accepts (they are listed)
//	lookup failed: no such function      accepted versions lack it (listed with      not executed
//	                                     their functions)
//	lookup failed: every ... draining    all providers are stopping                   not executed
//	node unreachable / not sent          no link, or it died before sending           not executed
//	node draining                        the provider refused it while stopping       not executed
//	node down                            the provider that took it left               may have executed
//	declared deadline of D passed        the provider's contract ran out mid-call     may have executed
//	rejected [code]: msg                 the handler returned an error                executed
//	panicked                             the handler crashed                          executed
//
// The bracket at the end says how many attempts were made, how long after
// the first the last one started, and why it stopped (executed, not
// idempotent, budget used up, max attempts, ctx ended, stopped, unsettled).
//
// # The caller's duties
//
//   - Start one Services per node, after remote.Start; it stops with the
//     System. Provide after Start; Withdraw before removing a handler's
//     dependencies.
//   - Declare Idempotent only for functions that are: it allows a second
//     run after a failure that may have executed. Otherwise give the
//     function a Guard (idempotency.NewGuard over a store; one per node)
//     and the calls a key (idempotency.WithKey(ctx, job.Id)): a call whose
//     attempt may have executed then asks the provider what became of it
//     (idempotency.Status) instead of failing, and ends with
//     ReasonUnsettled only when that cannot be known (the provider's
//     in-memory record went with its incarnation, or the attempt was
//     interrupted). docs/FAILURES.md.
//   - Bound calls with ctx where waiting forever is wrong; declare a
//     Deadline on functions that can wedge.
//   - Arguments and results are proto.Message values whose types every
//     node registered (System.RegisterTypes).
//   - Stop nodes with System.Stop and a ctx long enough for the running
//     calls and DrainAckWait; a killed node fails its calls as
//     may-have-executed.
//   - This layer owns the node's announced metadata (remote.Node.Announce
//     replaces it as a whole).
package services
