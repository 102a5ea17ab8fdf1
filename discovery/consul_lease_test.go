package discovery

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/stretchr/testify/require"
)

// These tests run against a real agent: scripts/consul.sh run -- go test ./discovery/...

func acquireCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestConsulLeaseExclusive: one holder at a time; the other is told who
// holds it; Release frees it for the other, closes Lost and makes Valid
// false; a second Acquire by the holder is refused, naming itself.
func TestConsulLeaseExclusive(t *testing.T) {
	addr := consultest.Addr(t)
	svc := testService()
	a := newNode(t, addr, svc, "a")
	b := newNode(t, addr, svc, "b")
	ctx := acquireCtx(t)

	la, err := a.p.Acquire(ctx, "account/user-42")
	require.NoError(t, err)
	require.True(t, la.Valid())
	_, err = b.p.Acquire(ctx, "account/user-42")
	var held *LeaseHeldError
	require.ErrorAs(t, err, &held)
	require.ErrorIs(t, err, ErrLeaseHeld)
	require.Equal(t, a.self.ID(), held.Holder)
	_, err = a.p.Acquire(ctx, "account/user-42")
	require.ErrorIs(t, err, ErrLeaseHeld)
	h, err := b.p.Holder(ctx, "account/user-42")
	require.NoError(t, err)
	require.Equal(t, a.self.ID(), h)

	require.NoError(t, la.Release(ctx))
	require.NoError(t, la.Release(ctx), "idempotent")
	require.False(t, la.Valid())
	select {
	case <-la.Lost():
	default:
		t.Fatal("Lost not closed by Release")
	}
	lb, err := b.p.Acquire(ctx, "account/user-42")
	require.NoError(t, err, "released: no lock delay")
	require.True(t, lb.Valid())
	// a's stale handle must not free b's lease.
	require.NoError(t, la.Release(ctx))
	h, err = a.p.Holder(ctx, "account/user-42")
	require.NoError(t, err)
	require.Equal(t, b.self.ID(), h)
}

// TestConsulLeaseCrash: the holder is killed (no refresh, no
// deregistration): another incarnation takes the lease within TTL + 1s
// of the kill, never while the dead holder's lease was still valid by its
// own clock.
func TestConsulLeaseCrash(t *testing.T) {
	addr := consultest.Addr(t)
	svc := testService()
	a := newNode(t, addr, svc, "a")
	b := newNode(t, addr, svc, "b")
	ctx := acquireCtx(t)
	la, err := a.p.Acquire(ctx, "singleton/scheduler")
	require.NoError(t, err)

	a.p.leases.mu.Lock()
	validUntil := a.p.leases.epoch.Add(a.p.leases.until)
	a.p.leases.mu.Unlock()
	killedAt := time.Now()
	a.crash(t)
	select {
	case <-la.Lost():
	default:
		t.Fatal("Stop did not close Lost")
	}
	takenAt := pollAcquire(t, b, "singleton/scheduler", testTTL+3*time.Second)
	t.Logf("takeover: kill -> lease acquired elsewhere in %v (TTL %v, lock delay %v)", takenAt.Sub(killedAt).Round(time.Millisecond), testTTL, b.p.cfg.LeaseLockDelay)
	require.Less(t, takenAt.Sub(killedAt), testTTL+time.Second)
	require.True(t, takenAt.After(validUntil), "taken at %v, before the old holder's validity ended at %v", takenAt, validUntil)
}

// TestConsulLeaseCutOff: the holder cannot refresh (its updater frozen,
// as when cut off from Consul): its lease turns invalid and Lost closes
// by its own clock before anyone else can take the key, and it gets no
// lease again.
func TestConsulLeaseCutOff(t *testing.T) {
	addr := consultest.Addr(t)
	svc := testService()
	var freeze pauser
	a := newNode(t, addr, svc, "a", func(p *Consul) { p.beforeTick = freeze.hook })
	b := newNode(t, addr, svc, "b")
	ctx := acquireCtx(t)
	la, err := a.p.Acquire(ctx, "grain/7")
	require.NoError(t, err)

	frozenAt := time.Now()
	freeze.pause()
	var lostAt time.Time
	select {
	case <-la.Lost():
		lostAt = time.Now()
	case <-time.After(testTTL + 2*time.Second):
		t.Fatal("lease not lost after the TTL without refresh")
	}
	require.False(t, la.Valid())
	takenAt := pollAcquire(t, b, "grain/7", testTTL+3*time.Second)
	t.Logf("cut off at 0: holder's lease lost at %v, taken elsewhere at %v", lostAt.Sub(frozenAt).Round(time.Millisecond), takenAt.Sub(frozenAt).Round(time.Millisecond))
	require.True(t, lostAt.Before(takenAt), "the old holder must stop first")
	freeze.unpause()
	_, err = a.p.Acquire(ctx, "grain/8")
	require.ErrorIs(t, err, ErrLeaseLost)
}

// pollAcquire retries n's Acquire of key while it is held, and returns
// when it succeeded.
func pollAcquire(t *testing.T, n *node, key string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := n.p.Acquire(ctx, key)
		cancel()
		if err == nil {
			return time.Now()
		}
		if !errors.Is(err, ErrLeaseHeld) {
			t.Fatalf("%s: Acquire %q: %v", n.name, key, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q still held after %v: %v", n.name, key, timeout, err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestConsulManyLeasesAtOnce: 1,500 Acquires and then Releases started at
// once from one provider all succeed. Each would otherwise hold an HTTP
// connection to the agent, past its limit of concurrent connections per
// client (1000 under scripts/consul.sh: Consul answers 429); the provider
// keeps at most maxLeaseOps lease requests in flight.
func TestConsulManyLeasesAtOnce(t *testing.T) {
	addr := consultest.Addr(t)
	a := newNode(t, addr, testService(), "a")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 1500
	leases := make([]Lease, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			l, err := a.p.Acquire(ctx, fmt.Sprintf("many/%d", i))
			leases[i] = l
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	for i := range n {
		go func() { errs <- leases[i].Release(ctx) }()
	}
	for range n {
		require.NoError(t, <-errs)
	}
}
