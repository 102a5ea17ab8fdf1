package remote

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLimitsAndLivenessDefaults: a zero Limits or Liveness takes the
// documented defaults, the ones derived from MaxFrameSize and PoolSize
// included, and DefaultConfig holds them.
func TestLimitsAndLivenessDefaults(t *testing.T) {
	lv := Liveness{}.withDefaults()
	require.Equal(t, DefaultLiveness(), lv)
	require.Equal(t, Liveness{HeartbeatInterval: time.Second, HeartbeatMisses: 3, LinkIdleTimeout: time.Minute, ForgetNodesAfter: 5 * time.Minute}, lv)
	require.Equal(t, 3*time.Second, lv.window())

	lm := Limits{}.withDefaults(4)
	require.Equal(t, Limits{
		MaxFrameSize: 64 << 20, MaxHandshakes: 256, MaxHandshakesPerIP: 32,
		MaxInflightPerPeer: 4096, MaxInflightBytesPerPeer: 64 << 20, MaxMessageSize: 4 << 20,
		ReadBudgetBytes: 256 << 20, MaxLinksPerPeer: 2*(4+1) + 16, MaxAnnounceBytes: 64 << 10,
		MaxWatchesPerPeer: 65536, MaxNodes: 16384,
	}, lm)
	d := DefaultLimits()
	d.MaxLinksPerPeer = lm.MaxLinksPerPeer // its default follows PoolSize
	require.Equal(t, d, lm)

	// Derived defaults follow a smaller frame and a larger message.
	small := Limits{MaxFrameSize: 1 << 20}.withDefaults(0)
	require.Equal(t, 1<<20, small.MaxMessageSize, "at most MaxFrameSize")
	require.Equal(t, 4<<20, small.ReadBudgetBytes, "4 x MaxFrameSize")
	big := Limits{MaxMessageSize: 100 << 20, MaxFrameSize: 200 << 20}.withDefaults(0)
	require.Equal(t, 100<<20, big.MaxInflightBytesPerPeer, "at least MaxMessageSize")
	require.Equal(t, 18, Limits{}.withDefaults(0).MaxLinksPerPeer)

	// A set field is kept.
	require.Equal(t, 7, Limits{MaxNodes: 7}.withDefaults(1).MaxNodes)
	require.Equal(t, -time.Second, Liveness{LinkIdleTimeout: -time.Second}.withDefaults().LinkIdleTimeout, "negative: never")

	dc := DefaultConfig()
	require.Equal(t, DefaultLiveness(), dc.Liveness)
	require.Equal(t, DefaultLimits(), dc.Limits)
}

// TestLimitsAndLivenessValidation: each bad field is refused by an error
// naming it by its path in Config.
func TestLimitsAndLivenessValidation(t *testing.T) {
	for _, tc := range []struct {
		lm   Limits
		want string
	}{
		{Limits{MaxFrameSize: 10}, "remote: config: Limits.MaxFrameSize is 10, want 1 KiB to 1 GiB"},
		{Limits{MaxHandshakes: -1}, "Limits.MaxHandshakes -1"},
		{Limits{MaxHandshakesPerIP: -1}, "Limits.MaxHandshakesPerIP -1"},
		{Limits{MaxInflightPerPeer: -1}, "Limits.MaxInflightPerPeer is -1"},
		{Limits{MaxMessageSize: 512}, "Limits.MaxMessageSize is 512"},
		{Limits{MaxMessageSize: 2 << 20, MaxFrameSize: 1 << 20}, "Limits.MaxMessageSize is 2097152, want 1 KiB up to MaxFrameSize (1048576)"},
		{Limits{MaxInflightBytesPerPeer: 1 << 10}, "Limits.MaxInflightBytesPerPeer is 1024"},
		{Limits{ReadBudgetBytes: 1 << 10}, "Limits.ReadBudgetBytes is 1024"},
		{Limits{MaxLinksPerPeer: 1}, "Limits.MaxLinksPerPeer is 1"},
		{Limits{MaxAnnounceBytes: 10}, "Limits.MaxAnnounceBytes is 10"},
		{Limits{MaxWatchesPerPeer: -1}, "Limits.MaxWatchesPerPeer is -1"},
		{Limits{MaxNodes: -1}, "Limits.MaxNodes is -1"},
	} {
		require.ErrorContains(t, tc.lm.withDefaults(0).validate(), tc.want)
		_, err := Config{Cookie: NewCookie(), Limits: tc.lm}.withDefaultsNoSystem()
		require.ErrorContains(t, err, tc.want, "from Config")
	}
	require.NoError(t, Limits{}.withDefaults(0).validate())

	for _, tc := range []struct {
		lv   Liveness
		want string
	}{
		{Liveness{HeartbeatInterval: -1}, "remote: config: Liveness.HeartbeatInterval is -1ns"},
		{Liveness{HeartbeatMisses: -1}, "Liveness.HeartbeatMisses is -1"},
		{Liveness{ForgetNodesAfter: -1}, "Liveness.ForgetNodesAfter is -1ns"},
	} {
		require.ErrorContains(t, tc.lv.withDefaults().validate(), tc.want)
		_, err := Config{Cookie: NewCookie(), Liveness: tc.lv}.withDefaultsNoSystem()
		require.ErrorContains(t, err, tc.want, "from Config")
	}
	require.NoError(t, Liveness{}.withDefaults().validate())
}

// withDefaultsNoSystem is withDefaults with a logger set, so no System is
// needed.
func (c Config) withDefaultsNoSystem() (Config, error) {
	c.Logger = slog.New(slog.DiscardHandler)
	return c.withDefaults(nil)
}
