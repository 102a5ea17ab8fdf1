// Package lean is the reference path "lean": what sending protobuf
// messages between two processes costs with no runtime in the way, the
// ceiling a runtime can approach on this machine with standard protobuf.
// It is not a runtime: no addressing, no type names on the wire, no
// acknowledgements, no liveness; one TCP connection, one receiver.
//
// Sender: every writer goroutine marshals the message with proto
// straight into one buffer shared under a mutex (Outbox), behind a u32be
// length; one writer goroutine takes whatever has accumulated and writes
// it to the connection with one write call. Receiver: one reader
// goroutine parses the frames of each read (FrameReader), unmarshals
// each into a fresh message and appends the run of them to a
// mutex-and-slice mailbox (Mailbox) under one lock; one consumer
// goroutine drains the mailbox and counts every message, as a receiving
// actor does. Completion is counted there, like every other path's.
//
// Both buffers are bounded (Outbox in bytes, Mailbox in messages): a
// producer waits for room, so a slow side slows the other instead of
// growing without limit.
package lean
