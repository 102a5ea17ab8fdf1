// Package proxypool is mailroom's pooled remote path: with many
// concurrent senders, one link per peer becomes the single point; batching
// before the link and pooling both ends removes it.
//
// For every peer node a connection master (an actor under the proxy pool
// supervisor) follows the peer's current incarnation and builds one proxy
// actor per worker of that incarnation's receiver pool, each with its own
// link paired with its worker, then publishes the pool. From then on,
// sends, casts, calls and requests to that node go through the pool:
//
//   - a caller is mapped to a proxy by hashing its identity (an actor's
//     PID; outside actors, an actor.Sender handle's PID; the System's own
//     methods are one sender), so one caller keeps one proxy and its order;
//     the exception is the blocking calls and requests made through the
//     System's own methods (System.Call, Request, RequestNamed from plain
//     goroutines, e.g. HTTP handlers): they need no order between them and
//     take the proxies in turn;
//   - a proxy blocks only when it has nothing; once it has one message it
//     takes whatever else is waiting, up to BatchSize, writes it as one
//     frame, and blocks in that write: backpressure from the link is the
//     batching clock, there are no timers;
//   - the peer's worker replays the batch in order: a send is delivered,
//     a cast runs in its own goroutine, a call runs and its reply comes
//     back through the peer's own pool toward this node, if that pool
//     belongs to this node's current incarnation (the incarnation guard),
//     else natively;
//   - when the incarnation goes (link lost, discovery, a new incarnation)
//     or a proxy dies, the pool is unpublished at once: traffic falls back
//     to the native path, calls still queued fail with actor.ErrNotSent
//     (not executed), calls written fail with actor.ErrNodeDown, queued
//     sends and casts become counted dead letters (their Message an
//     *Outgoing; Stats.DeadLetters). The master builds a fresh pool when
//     it can;
//   - when the pool goes while its peer lives (StopConnection, a proxy
//     died), the native path is fenced behind the pool's links, the
//     proxies write the sends they hold and end their links with a
//     half-close: per-sender order holds and every send arrives or is
//     counted (internal/wire/SPEC.md, "Fences").
//
// # Which peers get a pool
//
// Lazy (the default): a master only for a peer traffic goes to: the
// first Send, Cast, Request or Call to it that takes the native path
// builds one (that message goes natively), and a pool that carried
// nothing for Config.IdleTimeout (30 s) is torn down as StopConnection
// does it, so links follow the peers a node talks to (the native link
// then closes too once idle, after remote.Config.Liveness.LinkIdleTimeout). Eager
// (Config.Eager, ecall's behaviour): a master for every peer the node
// links to or discovery reports, so a node holds a pool toward every
// member and a receiver pool for every member's pool: about 2 × pool
// size × (members − 1) links (docs/SCALE.md measures both).
// ManualConnect: only StartConnection.
// Config.MaxPoolLinks caps the pool links a node dials, whatever the mode:
// a peer over the cap is served natively, and Summary counts it.
//
// # Usage
//
//	sys, _ := actor.Start(actor.Config{Name: "a"})
//	node, _ := remote.Start(ctx, sys, remote.Config{Cookie: c, Seeds: seeds})
//	pools, err := proxypool.Start(node, proxypool.Config{})
//	info := pools.ConnectionInfo("b") // Status Connected, 2 proxies, incarnation ...
//
// # The caller's duties
//
//   - Give code outside actors its own actor.Sender handle
//     (System.NewSender) per goroutine that sends in parallel and needs its
//     own order: sends and casts through the System's own methods are one
//     sender and so share one proxy (their calls and requests spread).
//   - Choose ProxyQueue and Policy: a full proxy makes callers wait
//     (Block) or fail fast with actor.ErrOverloaded (FailFast); memory is
//     bounded either way.
//   - Ordering holds per caller and target, as on the native path; casts
//     and calls run concurrently on the peer.
//
// # Inside
//
// remote.Node exports no pool hooks: the package reaches a node's pooled
// path (dialing pool links, publishing and unpublishing pools, their
// queues and counters) through internal/poolpath, the one interface
// between the two layers, whose Host remote hands out through
// internal/hooks.
package proxypool
