package discovery

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidLeaseKey(t *testing.T) {
	require.NoError(t, validLeaseKey("account/user-42"))
	for _, bad := range []string{"", "/abs", "with space", "tab\t", "é", strings.Repeat("k", 513)} {
		require.Error(t, validLeaseKey(bad), "%q", bad)
	}
}

// TestStaticHasNoLeases: Static has no arbiter, so it grants none.
func TestStaticHasNoLeases(t *testing.T) {
	var p Provider = &Static{}
	_, ok := p.(Leaser)
	require.False(t, ok)
}

func TestConsulAcquireBeforeStart(t *testing.T) {
	p, err := NewConsul(ConsulConfig{Address: "127.0.0.1:1"})
	require.NoError(t, err)
	_, err = p.Acquire(context.Background(), "k")
	require.ErrorContains(t, err, "before Start")
	require.NoError(t, p.Stop(context.Background()))
	_, err = p.Acquire(context.Background(), "k")
	require.ErrorIs(t, err, ErrStopped)
}

// TestConsulLeasesValidity: the synchronous core: validity runs TTL from
// the last acknowledged refresh's send time, never shrinks, and once
// lost stays lost.
func TestConsulLeasesValidity(t *testing.T) {
	t0 := time.Now()
	l := newConsulLeases(t0, time.Second)
	require.True(t, l.validLocked(t0.Add(999*time.Millisecond)))
	require.False(t, l.validLocked(t0.Add(time.Second)))
	l.extend(t0.Add(500*time.Millisecond), time.Second)
	require.True(t, l.validLocked(t0.Add(1400*time.Millisecond)))
	l.extend(t0.Add(100*time.Millisecond), time.Second) // an older refresh: no shrink
	require.True(t, l.validLocked(t0.Add(1400*time.Millisecond)))
	require.False(t, l.validLocked(t0.Add(1500*time.Millisecond)))
	ls := &consulLease{key: "k", lost: make(chan struct{})}
	l.held["k"] = ls
	got := l.loseAll()
	require.Equal(t, []*consulLease{ls}, got)
	require.Nil(t, l.loseAll(), "once")
	l.extend(t0.Add(time.Hour), time.Second)
	require.False(t, l.validLocked(t0.Add(time.Millisecond)), "lost for good")
}

func TestConsulConfigLockDelay(t *testing.T) {
	c, err := ConsulConfig{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, DefaultConsulLockDelay, c.LeaseLockDelay)
	_, err = ConsulConfig{LeaseLockDelay: time.Hour}.withDefaults()
	require.ErrorContains(t, err, "LeaseLockDelay")
}
