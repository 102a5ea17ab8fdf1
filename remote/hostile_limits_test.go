package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// The limits a cookie holder could still push on (issue 23): the name
// table, the watchers of an actor, a reader busy on one frame.

// sayHellos links to n from ip as count new names (tag-i) and closes
// each link at once; it returns how many were admitted.
func sayHellos(t *testing.T, n *Node, ip, tag string, count int) int {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	ok := 0
	for i := range count {
		c, err := d.Dial("tcp", n.Addr())
		require.NoError(t, err)
		h := wire.Hello{Node: fmt.Sprintf("%s-%d", tag, i), Inc: uint64(i + 1), Addr: "127.0.0.1:1"}
		if _, err := wire.ClientHandshake(c, []byte(testCookie), h, time.Now().Add(5*time.Second), nil); err == nil {
			ok++
		}
		c.Close()
	}
	return ok
}

// TestOnePeerCannotLockNamesOutOfTheTable: MaxNodes 64, so at most 16
// names per source address. A cookie holder says hello under 300 names
// it made up, from one address, then from the address of the nodes that
// come next: new nodes from either address link (every one of 20), the
// linked peer keeps its name, and the attacker's names are what is
// forgotten. Before: once the table held MaxNodes names whose
// incarnations were not gone, every new name was refused too_many_nodes
// until ForgetNodesAfter (5 minutes) had passed.
func TestOnePeerCannotLockNamesOutOfTheTable(t *testing.T) {
	const maxNodes = 64
	_, victim, _ := startNode(t, "victim", Config{Limits: Limits{MaxNodes: maxNodes}})
	good, goodNode, _ := startNode(t, "good", Config{})
	require.NoError(t, goodNode.Connect(context.Background(), "victim", victim.Addr()))
	lg := startLegit(t, good, "victim")

	for _, c := range []struct{ name, attackerIP string }{
		{"from another address", "127.0.0.2"},
		{"from the newcomers' address", "127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			invented := sayHellos(t, victim, c.attackerIP, "invented-"+c.attackerIP, 300)
			victim.mu.Lock()
			known := len(victim.slots)
			victim.mu.Unlock()
			fresh := sayHellos(t, victim, "127.0.0.1", "fresh-"+c.attackerIP, 20)
			_, linked := victim.Peer("good")
			t.Logf("300 invented names from %s: %d admitted, %d names known after; then 20 new nodes from 127.0.0.1: %d admitted; %d names forgotten in all", c.attackerIP, invented, known, fresh, victim.Stats().NodesForgotten)
			require.Equal(t, 20, fresh, "new nodes link")
			require.True(t, linked, "the linked peer keeps its name")
			require.LessOrEqual(t, known, maxNodes)
		})
	}
	calls, p99, worst := lg.check(t)
	t.Logf("legitimate peer: %d calls, p99 %v, worst %v", calls, p99, worst)
}

// TestWatchesOfAGoneIncarnationLeaveNothingOnTheActor: a cookie holder
// watches one actor 60,000 times (under MaxWatchesPerPeer) and says
// goodbye. Once its incarnation is gone and the actor has handled its
// unwatches, heap and stacks are back within 2 MiB of where they were.
// Before: the actor's watchers map kept its buckets after its entries
// were deleted: 7.4 MB left.
func TestWatchesOfAGoneIncarnationLeaveNothingOnTheActor(t *testing.T) {
	sys, victim, _ := startNode(t, "victim", Config{})
	target, err := sys.SpawnFunc(func(c *actor.Context) {
		if _, ok := c.Message().(*testpb.Echo); ok {
			c.Respond(&testpb.Echo{Text: "here"})
		}
	})
	require.NoError(t, err)
	// roundTrip returns once the actor has handled everything queued
	// before it: its system messages (watches, unwatches) go first.
	roundTrip := func() {
		_, err := sys.Request(context.Background(), target, &testpb.Echo{})
		require.NoError(t, err)
	}
	roundTrip()
	base := heapNow()

	const watches = 60000
	conn := rawLink(t, victim, "watcher", 16, 0)
	e := rawEndsAs(victim, "watcher", 16)
	_, err = conn.Write(frames(e, watches, func(i int) *wire.Element {
		return &wire.Element{Kind: wire.KindControl, Control: &wire.Control{Op: wire.CtlWatch,
			Watcher: actor.PID{Node: "watcher", Incarnation: 16, ID: uint64(i + 1)}, Target: target}}
	}))
	require.NoError(t, err)
	p := victim.peerOf(t, "watcher")
	waitFor(t, "the watches registered", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.inWatches) == watches
	})
	roundTrip()
	held := heapNow() - base

	_, err = conn.Write(e.AppendFrame(nil, &wire.Element{Kind: wire.KindGoodbye, Reason: "bye", Clean: true}))
	require.NoError(t, err)
	waitFor(t, "the incarnation gone", func() bool { return p.isGone() })
	roundTrip()
	var left int64
	// The actor drops its mailbox's large buffers once it is idle.
	waitFor(t, "heap and stacks back within 2 MiB", func() bool { left = heapNow() - base; return left < 2<<20 })
	t.Logf("%d watches on one actor: heap+stacks %+.1f MiB held; after the incarnation went: %+.2f MiB", watches, float64(held)/(1<<20), float64(left)/(1<<20))
}

// peerOf is the current incarnation of name on n.
func (n *Node) peerOf(t *testing.T, name string) *peer {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.slots[name]
	require.NotNil(t, s)
	require.NotNil(t, s.cur)
	return s.cur
}

// TestAReaderWorkingThroughOneFrameIsNotSilent: a batch of 6,000,000
// replies to no call (each a lock and a map lookup, no allocation) keeps
// the reader on CPU for three heartbeat windows, with nothing else
// arriving (the window is a third of what the batch took a node with the
// default window: the machine's speed, -race included, sets it). The link
// is busy, not silent: a ping written after the batch is answered, and
// liveness closed nothing. Before: only a reader delivering into a
// mailbox (or waiting on this node) counted as busy, so a reader busy on
// a frame was closed as silent after the window.
//
// On the wall clock, not a logical one: what is tested is real CPU work
// outlasting the window, so the window is calibrated against the time
// the batch really takes, and the liveness loop must run meanwhile.
func TestAReaderWorkingThroughOneFrameIsNotSilent(t *testing.T) {
	const replies = 6_000_000
	entry := []byte{byte(wire.KindReply), 0, 0, 0, 4, 0, byte(wire.StatusError), 0, 0} // id 0: no call
	body := wire.AppendUvarint([]byte{byte(wire.KindBatch)}, replies)
	body = append(body, bytes.Repeat(entry, replies)...)
	batch := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	// handle sends the batch and a ping to n, and waits for the pong.
	handle := func(n *Node) (time.Duration, error) {
		e := rawEnds(n)
		frame := e.AppendFrame(append([]byte(nil), batch...), &wire.Element{Kind: wire.KindPing})
		conn := rawPeer(t, n, testCookie)
		start := time.Now()
		f := startFlood(conn, frame, 30*time.Second)
		f.wait(t)
		_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
		fr := wire.NewFrameReader(conn, 1<<20)
		for {
			k, _, err := fr.Next()
			if err != nil {
				return time.Since(start), err
			}
			if k == wire.KindPong {
				return time.Since(start), nil
			}
		}
	}
	_, calib, _ := startNode(t, "calibration", Config{})
	took, err := handle(calib)
	require.NoError(t, err)
	window := max(took/3, 60*time.Millisecond)

	_, victim, logs := startNode(t, "victim", Config{Liveness: Liveness{HeartbeatInterval: window / 3, HeartbeatMisses: 3}})
	took, err = handle(victim)
	st := victim.Stats()
	t.Logf("a batch of %d replies to no call (%d bytes) handled in %v (window %v): pong %v (%v); late replies %d; links closed silent %d", replies, len(body), took.Round(time.Millisecond), window.Round(time.Millisecond), err == nil, err, st.LateReplies, st.LinksSilent)
	require.NoError(t, err, "the ping after the batch is answered")
	require.Equal(t, uint64(replies), st.LateReplies, "the whole batch was handled")
	require.Greater(t, took, 2*window, "the batch took the reader more than two windows")
	require.Zero(t, st.LinksSilent)
	require.NotContains(t, logs.String(), "missed 3 heartbeats")
}
