// Package rawtcp is the physical reference: pre-encoded frames laid out
// like a mailroom send of the data payload (u32be length, kind, a named
// target, a sender pid, the payload's type and bytes) written over one or
// more loopback TCP connections between two processes, with no runtime
// in between. The receiver reads each connection into a buffer and walks
// the length prefixes, counting frames; the rate is frames counted per
// second at the receiver.
//
// WriteBytes sets how many bytes go to the kernel per write call: many
// frames per write is the machine's limit for frames of that size; one
// frame per write is the limit of a path that writes each message on its
// own.
package rawtcp
