// Package sim is a deterministic simulator for the remote core
// (remote/internal/peers): three nodes' Tables wired through a simulated
// network and clock, driven from one seed.
//
// The network is TCP-like: each connection is FIFO both ways, with
// random delays (sometimes longer than the heartbeat window), so frames
// reorder only across links. The scheduler (math/rand/v2, seeded) issues
// sends and calls (to current incarnations and sometimes stale ones),
// cancels pending calls (their callers give up), builds and tears down
// pools, drops links, partitions node pairs, freezes nodes, kills them
// (reset) or stops them (goodbye), restarts them as new incarnations,
// and delivers discovery events (each observer's in order, at random
// delays) racing the links. Discovery lists as Consul does: a killed
// incarnation stays listed until its TTL runs out, a node that starts
// is told every listed incarnation in a random order, and a node's
// watch sometimes lists everything again. After
// runFor it heals and thaws everything, stops issuing, and lets the
// world settle.
//
// Invariants, checked after every step (Violation.Invariant names them):
//   - stale-reply: a reply is written only toward the incarnation whose
//     call it answers: never into a pool built for another (dead or
//     newer) incarnation;
//   - order: per sender, what one receiving incarnation delivers has
//     increasing sequence numbers, across fences, pool takeovers and
//     teardowns, idle closes and link losses;
//   - once: every call ends exactly once (a failure, or its reply), and
//     a late reply is only counted for a call that ended;
//   - class: a call the callee never received is never "executed"; one
//     it executed is never "not executed";
//   - bound: peers.Table.Check (every bound, nothing pinned to a gone or
//     buried incarnation);
//   - at the end, never-ended and pinned: every call of a live caller
//     ended, and no Table still holds an incarnation that is dead.
//
// Same seed, same run: Run(Options{Seed: s, Trace: true}) replays a
// failing seed with its trace (go test -run TestSeeds -sim.seed=s).
// Many runs seeds in parallel; cmd/sim (make sim) runs a million.
package sim
