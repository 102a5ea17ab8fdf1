// Package rawtcp is the physical reference, two processes on loopback
// with no runtime in between.
//
// Throughput: pre-encoded frames laid out like a mailroom send of the
// data payload (u32be length, kind, a named target, a sender pid, the
// payload's type and bytes) written over one or more TCP connections.
// The receiver reads each connection into a buffer and walks the length
// prefixes, counting frames; the rate is frames counted per second at
// the receiver. WriteBytes sets how many bytes go to the kernel per
// write call: many frames per write is the machine's limit for frames of
// that size; one frame per write is the limit of a path that writes each
// message on its own.
//
// Round trip: one connection, one caller writing a frame laid out like a
// mailroom call of the bytes payload and reading a reply frame laid out
// like its answer (an Ack), one call at a time; the echo side reads each
// call frame whole and writes the reply. Its p50 is the floor of the
// single caller's call latency.
package rawtcp
