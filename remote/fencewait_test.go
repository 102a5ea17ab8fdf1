package remote

import (
	"context"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// TestLinksThatFenceEachOtherAreClosedAfterTheWindow: a peer opens 401
// links, each carrying a fence that names the next one (a cycle). Every
// reader waits for another: before, they waited for ever and, being busy,
// were never closed by liveness (the issue measured 401 links and 1,217
// goroutines held while silent). A fence now waits at most the heartbeat
// window, then closes the links it waits for; every link ends, the
// goroutines go back to where they were, and a legitimate peer is served
// meanwhile.
func TestLinksThatFenceEachOtherAreClosedAfterTheWindow(t *testing.T) {
	const links = 401
	// The raw links say nothing: the window must outlast registering all
	// 401 of them, which takes seconds on a loaded machine. On the wall
	// clock, not a logical one: the links end by two clocks together, the
	// fence's wait (a real timer, supersede.go) and liveness closing the
	// silent ones once no fence holds their reader.
	hb := Config{Liveness: Liveness{HeartbeatInterval: time.Second, HeartbeatMisses: 4}, Limits: Limits{MaxLinksPerPeer: 1000}}
	_, victim, logs := startNode(t, "victim", hb)
	good, gn, _ := startNode(t, "good", Config{Liveness: Liveness{HeartbeatInterval: hb.Liveness.HeartbeatInterval, HeartbeatMisses: hb.Liveness.HeartbeatMisses}})
	require.NoError(t, gn.Connect(context.Background(), "victim", victim.Addr()))
	healthy(t, good, "victim")
	g0 := runtime.NumGoroutine()
	lg := startLegit(t, good, "victim")

	e := rawEndsAs(victim, "fencer", 13)
	conns := make([]net.Conn, links)
	for i := range conns {
		conns[i] = rawLink(t, victim, "fencer", 13, uint64(i+1))
	}
	// Every link up (and named) before any fence arrives.
	waitFor(t, "every link registered", func() bool { return victim.Stats().Links >= links })
	for i, c := range conns {
		next := uint64((i+1)%links + 1)
		_, err := c.Write(e.AppendFrame(nil, &wire.Element{Kind: wire.KindControl, Control: &wire.Control{Op: wire.CtlFence, Links: []uint64{next}}}))
		require.NoError(t, err)
	}
	var peak int
	start := time.Now()
	for _, c := range conns {
		peak = max(peak, runtime.NumGoroutine())
		assertClosedByPeer(t, c)
	}
	ended := time.Since(start)
	goroutinesSettle(t, g0+8)
	calls, p99, worst := lg.check(t)
	t.Logf("%d links fencing each other: goroutines %d, peak %d, all closed %v after the fences (window %v); legit peer: %d calls, p99 %v, worst %v",
		links, g0, peak, ended.Round(time.Millisecond), victim.Config().window(), calls, p99, worst)
	require.Positive(t, victim.Stats().FenceTimeouts)
	require.True(t, strings.Contains(logs.String(), "a fence waited the heartbeat window"))
	require.Less(t, ended, 10*victim.Config().window(), "the links were held")
}

// TestTooManyLinksFromOnePeerAreRefused: a peer incarnation may have at
// most MaxLinksPerPeer links dialed to the node; one more is refused in
// the handshake, with the reason; when one closes, another may come.
func TestTooManyLinksFromOnePeerAreRefused(t *testing.T) {
	_, victim, _ := startNode(t, "victim", Config{Limits: Limits{MaxLinksPerPeer: 4}})
	var conns []net.Conn
	for i := range 4 {
		conns = append(conns, rawLink(t, victim, "greedy", 14, uint64(i+1)))
	}
	conn, err := net.Dial("tcp", victim.Addr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = wire.ClientHandshake(conn, []byte(testCookie), wire.Hello{Node: "greedy", Inc: 14, LinkID: 5}, soon(), nil)
	require.ErrorContains(t, err, "too many links from greedy")
	require.Equal(t, uint64(1), victim.Stats().LinksRefused)

	require.Contains(t, err.Error(), "MaxLinksPerPeer")

	// Another node is not affected; when one link closes, another may come.
	rawLink(t, victim, "modest", 15, 1)
	conns[0].Close()
	waitFor(t, "the link gone", func() bool { return victim.Stats().Links == 4 })
	rawLink(t, victim, "greedy", 14, 6)
}
