// Package bridge lets a protoactor-go ActorSystem use a mailroom node as
// its remote: protoactor actors keep their code (Send, Request,
// RequestFuture, Respond, Watch) and gain mailroom's liveness, pooled
// links and clear errors.
//
// # Usage
//
//	node, err := bridge.StartNode(ctx, bridge.NodeConfig{
//		Name: "orders",
//		Remote: remote.Config{
//			Cookie: os.Getenv("MAILROOM_COOKIE"), // 16+ bytes
//			Seeds:  []string{"billing=10.0.0.6:7400"},
//		},
//		Types: []proto.Message{&pb.Charge{}, &pb.Charged{}},
//	})
//	system := node.Actors // a protoactor *actor.ActorSystem
//	billing := actor.NewPID(bridge.NodeAddress("billing"), "billing")
//	res, err := bridge.Result(system.Root.RequestFuture(billing, &pb.Charge{}, 5*time.Second))
//	err = node.Stop(ctx)
//
// Or attach to a mailroom System and a protoactor ActorSystem you started
// yourself: bridge.Start(actorSystem, mailroomSystem, bridge.Config{}).
//
// # PIDs and names
//
// The bridge sets the actor system's address to Address(node,
// incarnation), "mailroom://orders/9f1c0e2a3b4c5d6e": every PID it spawns
// names its node and that node's incarnation, so after a restart an old
// PID never reaches an actor of the new incarnation (it is refused: not
// executed). A PID built from a name uses NodeAddress(node),
// "mailroom://orders", and reaches the current incarnation. Mailroom
// targets have PIDs too:
//
//	protoactor PID                         is
//	{Address(node, inc), "$12"}            protoactor actor $12 on that incarnation of node
//	{NodeAddress(node), "counter"}         protoactor actor named "counter" on node
//	MailroomPID(pid)                       mailroom actor pid (Send; a request is mailroom's Request)
//	NamePID(node, name)                    mailroom actor registered as name (SendNamed / RequestNamed)
//	FunctionPID(node, fn)                  mailroom function fn (Send is Cast; a request is Call)
//
// The other way, mailroom code reaches protoactor actors with
// Bridge.Send and Bridge.Request (mailroom's error taxonomy, no default
// timeout).
//
// # Liveness
//
// A request from a protoactor future (RequestFuture) is pinned to the
// node incarnation it went to. When mailroom reports that incarnation
// gone (its links closed or went silent, or discovery said so), every
// future waiting on it fails at once, instead of at its timeout, and every
// local actor watching one of its actors gets Terminated with
// AddressTerminated. A future fails by completing with a mailroom
// *actor.Error as its result (a protoactor future can carry no other
// error); Result moves it to the error:
//
//	res, err := bridge.Result(future)
//	errors.Is(err, mractor.ErrNodeDown)             // the incarnation went away
//	mractor.Outcome(err) == mractor.MayHaveExecuted // check before retrying
//
// A request from an actor (Context.Request) gets its answer as a message,
// as in protoactor; a failure the bridge detects (an unreachable node,
// an unregistered type, no such process) arrives as an *actor.Error
// message. Watch the target to hear of node loss.
//
// # Messages
//
// Messages that cross nodes are protobuf, as with protoactor-go's remote.
// The receiving bridge resolves a payload's type in Config.Types (by
// default the mailroom System's registry: register with
// System.RegisterTypes on every node that receives the type). A payload of
// an unknown type is refused: the receiving node logs and counts it, and
// the sender's request fails with mailroom's ErrBadMessage naming the node
// and the type (a plain send is reported back to the sending bridge,
// which logs and counts it).
//
// # Order
//
// Messages from one sender to one target keep their order, requests and
// sends alike, as in protoactor: every message to a target takes the same
// mailroom sender handle and endpoint. A request to a mailroom actor or
// function runs on its own goroutine and may be overtaken by a later send
// to the same target.
//
// # How it works
//
// Each bridge runs eight endpoint actors on its mailroom System
// ("protoactor.v1.0" to "protoactor.v1.7"). The first message for another
// node opens a session: a mailroom request (the hello) to that node's
// endpoint 0, answered by its current incarnation; both bridges then
// watch each other's endpoint 0 through mailroom. Messages travel as
// envelopes (target id, sender PID, payload type and bytes) by mailroom's
// Send through sender handles, so a proxy pool batches them.
//
// # The caller's duties
//
//   - Every node of the cluster runs a bridge to receive protoactor
//     messages; a node without one refuses the session (ErrNoProcess).
//   - Register the message types each node receives (or set Config.Types).
//   - Stop the bridge before the mailroom System (Node.Stop does).
//   - protoactor-go writes a future's result without a lock when an answer
//     races the future's own timeout; keep timeouts generous: the bridge
//     fails requests on node loss without them.
package bridge
