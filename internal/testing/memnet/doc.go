// Package memnet is an in-memory network for tests: listeners and
// connections addressed by name, private to one Network value (no global
// state).
//
// New makes connections of net.Pipe: a write returns only once the other
// side has read it. NewBuffered makes connections that buffer each
// direction as a kernel's socket buffers do (a write returns once its
// bytes are buffered), support a half-close (CloseWrite), and can be held
// (Conn.Hold): what one end writes, its close included, then waits
// undelivered, as bytes unread in a frozen peer's kernel do, until
// Release. Tests use them to decide by construction what another
// network would leave to timing (remote's fences, SPEC.md).
package memnet
