// Package bridgenode runs the protoactor-bridge path's nodes:
// protoactor-go actors, unchanged, over mailroom's remote through the
// protoactor bridge (github.com/mailroom-go/mailroom/protoactor/bridge).
// Each node is bridge.StartNode: a mailroom System with its remote and
// proxy pool (defaults), a protoactor ActorSystem, and the bridge.
//
// The roles are package panode's (ServeReceiver, ServeSender) on a
// Remote of this package, so the writers, the counting actors "r<i>" and
// the counting are the protoactor path's, as is the workload: a cast is a
// send to the writer's counting actor, a call RequestFuture to it. What
// differs is the start, the receiver's PIDs (bridge.NodeAddress of the
// receiver node and the actor's name), readiness (the bridge's session
// with the receiver open and the proxy pool toward it connected), what a
// failure is, and the runtime's figures (mailroom's remote and pool
// stats, as on the pooled path).
package bridgenode
