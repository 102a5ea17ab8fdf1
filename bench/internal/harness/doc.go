// Package harness is the controller: for every point it starts a fresh
// receiver process and a fresh sender process (this binary re-executed in
// a node role), waits until the path is connected, runs the warm-up and
// then the measured phase, samples both processes from /proc around the
// measured phase, collects the nodes' own figures, and stops them. It
// prints one line per finished point and a heartbeat while a long one
// runs.
//
// What is measured, the same way for every path:
//   - the measured phase starts when the sender is told to start (its
//     wall clock, before the first writer is told) and ends on the node
//     that counts: the receiver for send and cast (every receiver has its
//     count, every cast has run), the sender for call (every call
//     returned);
//   - warm-up: WarmupFor(writers) unpaced operations per writer of the
//     same op and payload, counted to completion, before any sample;
//   - CPU: utime+stime of both processes over the measured phase;
//   - wire bytes: wchar of both processes over the measured phase (every
//     write call: data, acknowledgements, heartbeats, and a few hundred
//     bytes of control-pipe answers);
//   - memory: VmHWM of each process (its peak over the whole point);
//   - allocations: each node's runtime.MemStats.Mallocs right after the
//     warm-up and right after the phase, per operation.
//
// The raw TCP references run first (throughput) and right before each
// round of the single caller (the ping-pong it is compared with); the
// decoded message's own allocations of every payload are measured in
// this process.
package harness
