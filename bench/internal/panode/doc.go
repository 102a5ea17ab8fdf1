// Package panode runs the protoactor-go side of a point: the receiver
// node spawns counting actors named "r<i>", one per writer or one for all
// (they respond with Ack to requests), and the sender node one writer per
// writer, an actor (Context.Send, RequestFuture) or a plain goroutine on
// the root context (Root.Send, Root.RequestFuture), addressing the
// writer's receiver by its remote PID.
//
// The roles (ServeReceiver, ServeSender) run on a Remote: RunReceiver and
// RunSender on protoactor-go's own gRPC remote (the protoactor path);
// package bridgenode runs the same roles on mailroom's remote through
// the protoactor bridge (the protoactor-bridge path), so both paths have
// the same writers, receivers and counting.
//
// protoactor-go has no cast (no remote function without a reply): a cast
// point here sends to the writer's counting actor, exactly like its send
// points. The report says so.
package panode
