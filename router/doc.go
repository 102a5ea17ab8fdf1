// Package router spreads messages over a set of actors, the routees:
// round-robin, random, broadcast, consistent-hash (by a key of the
// message), smallest-mailbox and scatter-gather-first (ask every routee,
// take the first answer).
//
// A router is a value, not an actor: Send and Request choose a routee on
// the caller's goroutine and send to it from the caller, with no hop
// through a router actor in between (a routed send costs a direct send
// plus the choice; see BenchmarkRouted). So the routee sees the real
// sender, a Request's error is the routee's own with its outcome (not
// executed, may have executed, executed: actor.Outcome), and order per
// sender holds to each routee, as it does for any send: the messages one
// Caller sends through the router that go to one routee arrive in the
// order sent (with ConsistentHash, every message of one key goes to one
// routee, in order). What a router value cannot give is location
// transparency: to let another node route through it, put an actor of
// your own in front of it that calls Send or Request.
//
// # Usage
//
// A group routes over actors that exist, here or on other nodes, by PID
// or by registered name:
//
//	g, err := router.NewGroup(sys, router.Config{Kind: router.ConsistentHash, Key: orderID},
//		router.Of(pidA), router.Named("orders-2", "orders"), router.Of(remotePID))
//	err = g.Send(sys, &pb.Order{Id: "o-17"})          // from the System's root handle
//	reply, err := g.Request(ctx, c, &pb.Query{Id: "o-17"}) // from an actor's Context c
//	err = g.Add(router.Of(pidD))
//	g.Remove(router.Of(pidA))
//	err = g.Close(ctx)
//
// A pool spawns its routees under a supervisor of its own and keeps the
// set in step with it:
//
//	p, err := router.NewPool(sys, router.Config{Kind: router.SmallestMailbox}, router.PoolSpec{
//		Size:   4,
//		Routee: supervisor.ChildSpec{Props: workerProps, Backoff: &supervisor.Backoff{Min: 10 * time.Millisecond}},
//	})
//	err = p.Resize(ctx, 8)
//
// # Routees that end
//
// The router watches every PID routee (a local watch, or the remote
// layer's over the link): when the actor ends, or its node incarnation
// leaves (the link failed, heartbeats were missed, discovery dropped
// it), the routee is removed and counted (Stats.Died). Until then a send
// to it is what any send to a dead actor is, a counted dead letter, and
// a pending Request fails as the runtime fails it: ErrNoProcess, or
// ErrNodeDown (may have executed) when its node left. A named routee is
// not watched (a new actor may take the name) and stays. A pool's
// routee leaves the set as it stops and its restarted instance joins it
// once started.
//
// # The caller's duties
//
//   - Pass the Caller that sends: the System (its root handle), a
//     Sender handle, or, inside an actor, its Context (the actor is then
//     the sender, and its order to each routee holds).
//   - A router with no routee refuses with ErrNoRoutees (not executed):
//     nothing is dropped silently. Handle it, or Add before sending.
//   - Request on a Broadcast router is refused (ErrBroadcastRequest); use
//     ScatterGatherFirst, or package patterns to gather every answer.
//   - ConsistentHash needs Config.Key; it runs for every message on the
//     sender's goroutine. Choosing costs one hash per routee (rendezvous
//     hashing, no ring to keep): fine for tens of routees.
//   - SmallestMailbox reads the depth of local routees only; remote ones
//     are used, in turn, only when no local routee is alive.
//   - Close the router when done: it stops its watcher (and a pool's
//     supervisor and routees) and waits for its scatter-gather requests.
package router
