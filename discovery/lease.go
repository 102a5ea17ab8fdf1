package discovery

import (
	"context"
	"errors"
	"fmt"
)

var (
	// ErrLeaseHeld: another incarnation holds the lease, or held it until
	// a moment ago and its lock delay has not passed. Not an error of
	// this node: try again later, or send to the holder.
	ErrLeaseHeld = errors.New("discovery: lease held by another incarnation")
	// ErrLeaseLost: this incarnation can no longer hold leases: its
	// health check may have expired (it was cut off from the arbiter, or
	// frozen), it was declared dead, or the provider stopped. Leases it
	// held are lost for good; the node must stop what it ran under them.
	ErrLeaseLost = errors.New("discovery: this incarnation's leases are lost")
)

// LeaseHeldError is ErrLeaseHeld with the holder.
type LeaseHeldError struct {
	Key string
	// Holder is the holder's Member.ID() ("node/incarnation"), or ""
	// when the lease is free but in the lock delay that follows the end
	// of its previous holder's session.
	Holder string
}

func (e *LeaseHeldError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("discovery: lease %q: its previous holder's session ended moments ago (lock delay); try again shortly", e.Key)
	}
	return fmt.Sprintf("discovery: lease %q is held by %s", e.Key, e.Holder)
}

// Is makes errors.Is(err, ErrLeaseHeld) hold.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// Leaser is implemented by providers that can grant owner leases: named
// locks held by one incarnation at a time, lost when that incarnation
// dies, is declared dead, or is cut off from the arbiter. The cluster
// package runs an activation only under its lease. Consul implements it;
// Static does not (it has no arbiter), and a later provider (etcd,
// Kubernetes leases) plugs in here.
//
// Contract for implementations:
//   - Acquire tries once and does not wait: it returns a Lease, a
//     *LeaseHeldError, ErrLeaseLost, or an error reaching the arbiter.
//   - At most one incarnation holds a key at any moment as the holders
//     judge it: a holder's Lease.Valid turns false, on its own monotonic
//     clock, before the arbiter can grant the key to anyone else.
//   - Only a provider that was started grants leases; its Stop ends
//     them all (their Lost channels close before it deregisters).
//
// Methods are safe for concurrent use.
type Leaser interface {
	// Acquire takes the lease on key for this incarnation. key is 1 to
	// 512 bytes of printable ASCII without a leading '/'.
	Acquire(ctx context.Context, key string) (Lease, error)
	// Holder returns the Member.ID() of the incarnation holding key, or
	// "" when nobody does.
	Holder(ctx context.Context, key string) (string, error)
}

// Lease is one lease held by this incarnation.
type Lease interface {
	// Key is the key given to Acquire.
	Key() string
	// Lost is closed once the lease is, or may be, gone: released, its
	// holder declared dead or stopped, or its validity run out because
	// the arbiter could not be told this incarnation is alive. Whatever
	// ran under the lease must stop when it closes.
	Lost() <-chan struct{}
	// Valid reports whether the lease still holds now, by the holder's
	// monotonic clock. It is cheap: check it before acting under the
	// lease (Lost may be observed late by a busy goroutine).
	Valid() bool
	// Release gives the lease up and closes Lost. Idempotent; releasing
	// a lease already lost is not an error.
	Release(ctx context.Context) error
}

// validLeaseKey checks a lease key.
func validLeaseKey(key string) error {
	if key == "" || len(key) > 512 {
		return fmt.Errorf("discovery: lease key of %d bytes: want 1 to 512", len(key))
	}
	if key[0] == '/' {
		return fmt.Errorf("discovery: lease key %q: must not start with '/'", key)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("discovery: lease key %q: byte %d is %#x, want printable ASCII without spaces", key, i, c)
		}
	}
	return nil
}
