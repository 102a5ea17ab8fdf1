package remote

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// A log flood (issue 23, attack 5): links that each come with a new
// incarnation and end on one bad frame, as fast as the attacker can.

// churnLinks runs workers goroutines until stop, each linking to n as
// name(worker) with a new incarnation every time, writing one bad frame
// and waiting for the node to close the link. It returns the links made.
func churnLinks(n *Node, workers int, name func(w int) string, stop <-chan struct{}) (wait func() int64) {
	var wg sync.WaitGroup
	var links atomic.Int64
	var inc atomic.Uint64
	bad := []byte{0, 0, 0, 4, 0x7f, 1, 2, 3} // an unknown frame kind
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				conn, err := net.Dial("tcp", n.Addr())
				if err != nil {
					continue
				}
				h := wire.Hello{Node: name(w), Inc: inc.Add(1), Addr: "127.0.0.1:1"}
				if _, err := wire.ClientHandshake(conn, []byte(testCookie), h, time.Now().Add(5*time.Second), nil); err == nil {
					links.Add(1)
					_, _ = conn.Write(bad)
				}
				_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				var b [512]byte
				for {
					if _, err := conn.Read(b[:]); err != nil {
						break
					}
				}
				conn.Close()
			}
		}()
	}
	return func() int64 { wg.Wait(); return links.Load() }
}

var suppressedCount = regexp.MustCompile(`suppressed=([1-9][0-9]*)`)

// TestLinkChurnDoesNotFloodTheLog: for 3 s, cookie holders link under
// 3 KB names (refused: off the node name rule) and under names of 128
// bytes, each time with a new incarnation and one bad frame. The log
// grows by less than 100 KB/s, its lines say how many were suppressed,
// each carries the peer's name at most once; a linked peer is served and
// a new one's handshakes succeed meanwhile. Before: "link down" and "peer
// incarnation gone" were Warn lines with no limit, each with the peer's
// name twice: 259 MB of log in 10 s.
func TestLinkChurnDoesNotFloodTheLog(t *testing.T) {
	_, victim, logs := startNode(t, "victim", Config{})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	lg := startLegit(t, good, "victim")
	before := len(logs.String())

	stop := make(chan struct{})
	long := func(w int) string { return fmt.Sprintf("%03d", w) + strings.Repeat("m", 3000) }
	valid := func(w int) string { return fmt.Sprintf("%03d", w) + strings.Repeat("v", 125) }
	waitLong := churnLinks(victim, 4, long, stop)
	waitValid := churnLinks(victim, 4, valid, stop)
	start := time.Now()
	ok, errs := freshHandshakes(t, victim, "127.0.0.1", 20, "fresh")
	for time.Since(start) < 3*time.Second {
		time.Sleep(50 * time.Millisecond) // the attack's duration, not synchronisation
	}
	close(stop)
	linked := waitLong() + waitValid()
	elapsed := time.Since(start)
	out := logs.String()[before:]
	rate := float64(len(out)) / elapsed.Seconds()
	suppressed := 0
	for _, m := range suppressedCount.FindAllStringSubmatch(out, -1) {
		var k int
		fmt.Sscan(m[1], &k)
		suppressed += k
	}
	lines := strings.Count(out, "\n")
	calls, p99, worst := lg.check(t)
	t.Logf("%v of churn: %d links up (%d handshakes refused meanwhile); log +%d bytes in %d lines (%.1f KB/s), %d lines reported suppressed; fresh handshakes %d of 20; legitimate peer %d calls, p99 %v, worst %v",
		elapsed.Round(time.Millisecond), linked, victim.Stats().HandshakeFailures, len(out), lines, rate/1000, suppressed, ok, calls, p99, worst)
	if len(errs) > 0 {
		t.Logf("first failed handshake: %v", errs[0])
	}
	require.Less(t, rate, 100e3, "log bytes per second")
	require.Positive(t, suppressed, "the lines say what they suppressed")
	for _, line := range strings.Split(out, "\n") {
		require.LessOrEqual(t, strings.Count(line, strings.Repeat("v", 125)), 1, "the peer's name at most once: %s", line)
		require.NotContains(t, line, strings.Repeat("m", 100), "a name off the rule is shown cut")
	}
	require.GreaterOrEqual(t, ok, 19, "the new peer's handshakes")
}
