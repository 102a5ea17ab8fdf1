package discoverytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/stretchr/testify/require"
)

// Run runs every test of the suite as a subtest.
func Run(t *testing.T, h Harness) {
	t.Run("Discover", func(t *testing.T) { Discover(t, h) })
	t.Run("FrozenNode", func(t *testing.T) { FrozenNode(t, h) })
	t.Run("CrashAndRestart", func(t *testing.T) { CrashAndRestart(t, h) })
	t.Run("WatchResume", func(t *testing.T) { WatchResume(t, h) })
}

// Discover: two nodes see each other and themselves up with the right
// incarnation, address, pool size and meta; Update (Draining, Meta) is
// MemberUpdated; Stop is MemberDown on the other at once, and the stopped
// node never registers again, even with Updates racing Stop.
func Discover(t *testing.T, h Harness) {
	a := h.Start(t, "a")
	b := h.Start(t, "b")
	for _, pair := range [][2]*Node{{a, b}, {b, a}, {a, a}, {b, b}} {
		e, _ := pair[0].Rec.Wait(t, 5*time.Second, discovery.MemberUp, pair[1].Self)
		require.Equal(t, pair[1].Self, e.Member, "%s sees %s", pair[0].Name, pair[1].Name)
	}

	drain := b.Self
	drain.Draining = true
	drain.Meta = map[string]string{"services": "b-svc", "version": "2"}
	require.NoError(t, b.P.Update(context.Background(), drain))
	e, _ := a.Rec.Wait(t, 5*time.Second, discovery.MemberUpdated, b.Self)
	require.Equal(t, drain, e.Member)

	// Updates racing Stop must not re-register b (protoactor-go #377).
	raced := make(chan error, 1)
	go func() {
		for {
			if err := b.P.Update(context.Background(), drain); errors.Is(err, discovery.ErrStopped) {
				raced <- nil
				return
			} else if err != nil {
				raced <- err
				return
			}
		}
	}()
	stopAt := time.Now()
	b.Stop(t)
	require.NoError(t, <-raced)
	_, downAt := a.Rec.Wait(t, 5*time.Second, discovery.MemberDown, b.Self)
	t.Logf("detection: Stop (deregistration) -> MemberDown on the other node in %v", downAt.Sub(stopAt).Round(time.Millisecond))

	// The one bounded wait that is the behaviour under test: b stays
	// absent from the backend for several refresh periods.
	for end := time.Now().Add(4 * h.Refresh); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		registered, _ := h.Registered(t, b.Self)
		require.False(t, registered, "re-registered after Stop")
	}
	require.Equal(t, 1, a.Rec.Count(discovery.MemberUp, b.Self))
	require.Zero(t, a.Rec.Count(discovery.MemberDown, a.Self), "a is fine")
	require.Zero(t, b.Rec.Count(discovery.MemberDown, b.Self), "no self events once Stop began")
}

// FrozenNode: a node whose liveness refresh stops (as if frozen) is
// reported down by the other within TTL + 1 s; thawed, it reports itself
// down, stops refreshing (the backend never sees it alive again) and never
// comes back up.
func FrozenNode(t *testing.T, h Harness) {
	a := h.Start(t, "a")
	b := h.Start(t, "b")
	a.Rec.Wait(t, 5*time.Second, discovery.MemberUp, b.Self)
	b.Rec.Wait(t, 5*time.Second, discovery.MemberUp, b.Self)

	frozenAt := time.Now()
	b.P.Freeze()
	_, downAt := a.Rec.Wait(t, h.TTL+time.Second+h.Refresh, discovery.MemberDown, b.Self)
	detect := downAt.Sub(frozenAt)
	t.Logf("detection: liveness refresh frozen -> MemberDown on the other node in %v (TTL %v, refresh %v)", detect.Round(time.Millisecond), h.TTL, h.Refresh)
	require.Less(t, detect, h.TTL+time.Second)

	b.P.Thaw()
	e, _ := b.Rec.Wait(t, 5*time.Second, discovery.MemberDown, b.Self)
	require.Equal(t, b.Self.ID(), e.Member.ID())
	dead, cause := b.P.Dead()
	require.True(t, dead)
	t.Logf("self declared dead: %s", cause)
	require.ErrorIs(t, b.P.Update(context.Background(), b.Self), discovery.ErrDeclaredDead)

	// b never makes itself alive again, and a never sees it up again.
	for end := time.Now().Add(4 * h.Refresh); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		registered, alive := h.Registered(t, b.Self)
		require.False(t, alive, "alive again after it was declared dead")
		if h.FrozenStaysRegistered {
			require.True(t, registered, "its registration is gone")
		}
	}
	require.Equal(t, 1, a.Rec.Count(discovery.MemberUp, b.Self))
	require.Equal(t, 1, a.Rec.Count(discovery.MemberDown, b.Self))
	require.Equal(t, 1, b.Rec.Count(discovery.MemberDown, b.Self))
	require.Zero(t, b.Rec.Count(discovery.MemberDown, a.Self))
}

// CrashAndRestart: a killed node (no deregistration) is reported down
// once its TTL expires; restarted under the same name it is a new
// incarnation, up while the old one is down.
func CrashAndRestart(t *testing.T, h Harness) {
	a := h.Start(t, "a")
	b1 := h.Start(t, "b")
	a.Rec.Wait(t, 5*time.Second, discovery.MemberUp, b1.Self)

	killedAt := time.Now()
	b1.Crash(t)
	b2 := h.Start(t, "b")
	require.NotEqual(t, b1.Self.Incarnation, b2.Self.Incarnation)
	e, _ := a.Rec.Wait(t, 5*time.Second, discovery.MemberUp, b2.Self)
	require.Equal(t, b2.Self, e.Member)
	_, downAt := a.Rec.Wait(t, h.TTL+time.Second+h.Refresh, discovery.MemberDown, b1.Self)
	t.Logf("detection: kill -> MemberDown on the other node in %v (TTL %v, refresh %v)", downAt.Sub(killedAt).Round(time.Millisecond), h.TTL, h.Refresh)
	require.Zero(t, a.Rec.Count(discovery.MemberDown, b2.Self))
	b2.Rec.Wait(t, 5*time.Second, discovery.MemberUp, a.Self)
}

// WatchResume: the backend interrupts every watch (Harness.Disrupt).
// Nobody is reported down, nobody declares itself dead, and the watch
// carries on: an Update afterwards is seen, and so is a node that starts
// afterwards.
func WatchResume(t *testing.T, h Harness) {
	a := h.Start(t, "a")
	b := h.Start(t, "b")
	a.Rec.Wait(t, 5*time.Second, discovery.MemberUp, b.Self)
	b.Rec.Wait(t, 5*time.Second, discovery.MemberUp, a.Self)

	disruptAt := time.Now()
	h.Disrupt(t, []*Node{a, b})
	t.Logf("watch resume: the backend serves again %v after the disruption began", time.Since(disruptAt).Round(time.Millisecond))

	drain := b.Self
	drain.Draining = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.P.Update(ctx, drain))
	a.Rec.Wait(t, 10*time.Second, discovery.MemberUpdated, b.Self, func(m discovery.Member) bool { return m.Draining })
	c := h.Start(t, "c")
	a.Rec.Wait(t, 10*time.Second, discovery.MemberUp, c.Self)
	b.Rec.Wait(t, 10*time.Second, discovery.MemberUp, c.Self)
	c.Rec.Wait(t, 10*time.Second, discovery.MemberUp, a.Self)
	for _, n := range []*Node{a, b, c} {
		for _, e := range n.Rec.Events() {
			require.NotEqual(t, discovery.MemberDown, e.Type, "%s got %v", n.Name, e)
		}
		dead, cause := n.P.Dead()
		require.False(t, dead, cause)
	}
}
