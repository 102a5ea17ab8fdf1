// Package faultnet is a fault-injecting TCP proxy for tests: put one
// between two nodes and the link between them can be partitioned, cut in
// one direction, slowed down or reset, with no privileged networking.
//
// # Usage
//
//	p, err := faultnet.Listen("127.0.0.1:7401") // forwards to the node at 7401
//	defer p.Close()
//	// Dial p.Addr() instead of the node (seeds, Advertise).
//	p.Blackhole(faultnet.Both) // a partition: nothing passes, nothing closes
//	p.Heal()                   // everything held is delivered, in order
//	p.Delay(faultnet.Up, 50*time.Millisecond)
//	p.Reset()                  // every connection through p gets an RST
//
// # What the faults mean
//
// Up is the direction from the dialing side to the upstream, Down the
// reverse. A blackholed direction forwards nothing: bytes wait in the
// proxy and in the kernels' buffers, senders block once those fill, and
// nobody sees a close, which is what TCP does under total packet loss.
// Heal delivers what waited, in order, as TCP retransmission would. A
// close travels like data, in its own direction: a FIN (or an RST) is
// held by a blackholed direction and passes through a working one, so
// with one direction blackholed (one-way loss) the side that still hears
// the other learns of a close, and the other does not. A connection
// accepted while Up is blackholed is not dialed upstream until it heals
// (its SYN is lost, so to speak), and not at all if its client gave up
// meanwhile.
//
// Delay holds each chunk for the given time before forwarding it,
// keeping order. Reset closes every current connection with an RST on
// both sides (SO_LINGER 0); new connections are unaffected.
//
// # The caller's duties
//
// Close the proxy when done: it closes every connection and waits for
// its goroutines. Faults apply to connections already open and to new
// ones alike.
package faultnet
