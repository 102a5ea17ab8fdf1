// Package panode runs the protoactor-go side of a point with its gRPC
// remote: the receiver node spawns one counting actor per writer, named
// "r<i>" (it responds with Ack to requests), and the sender node one
// writer actor per writer, sending with Context.Send and calling with
// RequestFuture to the writer's receiver by its remote PID (address, name).
//
// protoactor-go has no cast (no remote function without a reply): a cast
// point here sends to the writer's counting actor, exactly like its send
// points. The report says so.
package panode
