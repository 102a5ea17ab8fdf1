package remote_test

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// Each counter says what it counts: sends and casts apart from calls and
// requests on the sending side; on the receiving side what was read
// (Received) apart from what was handed on (Delivered).
func TestStatsCountEachKindAndDelivery(t *testing.T) {
	_, bn := testnode.Local(t, testnode.Options{Name: "stats-b"})
	a, an := testnode.Local(t, testnode.Options{Name: "stats-a", Seeds: []string{"stats-b=" + bn.Addr()}})
	require.NoError(t, an.Connect(ctxT(t, 10*time.Second), "stats-b", ""))
	a0, b0 := an.Stats(), bn.Stats()

	h := a.NewSender()
	for range 3 {
		h.SendNamed("stats-b", "sink", &testpb.Echo{Text: "send"})
	}
	h.SendNamed("stats-b", "nobody", &testpb.Echo{Text: "lost"}) // read, not delivered
	h.Cast("stats-b", "count", &testpb.Echo{N: 1})
	h.Cast("stats-b", "count", &testpb.Echo{N: 1})
	for range 2 {
		_, err := h.Call(ctxT(t, 10*time.Second), "stats-b", "echo", &testpb.Echo{Text: "call"})
		require.NoError(t, err)
		_, err = h.RequestNamed(ctxT(t, 10*time.Second), "stats-b", "echo", &testpb.Echo{Text: "req"})
		require.NoError(t, err)
	}
	_, err := h.Call(ctxT(t, 10*time.Second), "stats-b", "no_such_fn", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrNoFunction) // read, refused

	a1 := an.Stats()
	require.Equal(t, uint64(6), a1.SendsNative-a0.SendsNative, "3 sends, 1 to nobody, 2 casts")
	require.Equal(t, uint64(5), a1.CallsNative-a0.CallsNative, "2 calls, 2 requests, 1 refused call")
	require.Equal(t, a0.SendsPooled, a1.SendsPooled, "no pool")
	require.Equal(t, a0.CallsPooled, a1.CallsPooled, "no pool")

	var b1 remote.Stats
	eventually(t, "b read all 11", func() bool { b1 = bn.Stats(); return b1.Received-b0.Received == 11 })
	eventually(t, "b delivered 9", func() bool { b1 = bn.Stats(); return b1.Delivered-b0.Delivered == 9 })
}
