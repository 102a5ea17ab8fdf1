package remote

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// freeAddr is a loopback address nothing listens on (now).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// outLinked is the incarnation of n's current peer node when n has a
// native link it dialed to it (0: none).
func outLinked(n *Node, node string) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.slots[node]
	if s == nil || s.cur == nil || s.cur.isGone() || s.cur.outLink() == nil {
		return 0
	}
	return s.cur.inc
}

// startAt starts a node listening on addr, to be stopped by the test.
func startAt(t *testing.T, name, addr string, seeds []string) (*actor.System, *Node) {
	t.Helper()
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	n, err := Start(context.Background(), sys, Config{Cookie: testCookie, Listen: addr, Seeds: seeds})
	require.NoError(t, err)
	return sys, n
}

func stopNow(t *testing.T, sys *actor.System) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, sys.Stop(ctx))
}

// TestSeedsAreLinkedAndRelinkedWithoutUserCode: three nodes configured
// with seeds only. The first starts before the others exist and keeps
// dialling; all link to each other; one is stopped and started again on
// the same address (a new incarnation), and the others link to it again
// by themselves.
func TestSeedsAreLinkedAndRelinkedWithoutUserCode(t *testing.T) {
	addrA, addrB, addrC := freeAddr(t), freeAddr(t), freeAddr(t)
	seeds := []string{"a=" + addrA, "b=" + addrB, "c=" + addrC} // every node shares the list
	sysA, a := startAt(t, "a", addrA, seeds)
	defer stopNow(t, sysA)
	// b and c are not up: a keeps trying.
	sysB, b := startAt(t, "b", addrB, seeds)
	sysC, c := startAt(t, "c", addrC, seeds)
	defer stopNow(t, sysC)
	nodes := map[string]*Node{"a": a, "b": b, "c": c}
	incs := map[string]uint64{"a": sysA.Incarnation(), "b": sysB.Incarnation(), "c": sysC.Incarnation()}
	allLinked := func() bool {
		for from, n := range nodes {
			for to, inc := range incs {
				if to != from && outLinked(n, to) != inc {
					return false
				}
			}
		}
		return true
	}
	waitFor(t, "every node linked to every seed", allLinked)
	v, err := sysA.Call(context.Background(), "c", "echo", &testpb.Echo{Text: "x"})
	require.ErrorIs(t, err, actor.ErrNoFunction, "these nodes register no echo: c answered over the link")
	require.Nil(t, v)

	stopNow(t, sysB)
	sysB2, b2 := startAt(t, "b", addrB, seeds)
	defer stopNow(t, sysB2)
	require.NotEqual(t, incs["b"], sysB2.Incarnation())
	nodes["b"], incs["b"] = b2, sysB2.Incarnation()
	waitFor(t, "every node linked to the restarted b, and b to them", allLinked)
}

var againTimes = regexp.MustCompile(`msg="dial failed again".* times=(\d+)`)

// TestRepeatedDialFailuresAreOneLineWithACount: 1,000 calls to a node
// whose address refuses connections log the first failure, then one
// line with the count, not a line per call.
func TestRepeatedDialFailuresAreOneLineWithACount(t *testing.T) {
	asys, a, logs := startNode(t, "a", Config{})
	ghost := freeAddr(t)
	err := a.Connect(context.Background(), "ghost", ghost)
	require.ErrorIs(t, err, actor.ErrUnreachable)
	for range 1000 {
		_, err := asys.Call(context.Background(), "ghost", "echo", &testpb.Echo{})
		require.ErrorIs(t, err, actor.ErrUnreachable)
		require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	}
	a.dial.log.close() // what the node's stop does: report what is counted
	out := logs.String()
	first := strings.Count(out, `msg="dial failed" `)
	require.Equal(t, 1, first, "the first failure, at once:\n%s", out)
	total := first
	lines := againTimes.FindAllStringSubmatch(out, -1)
	for _, m := range lines {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		total += n
	}
	require.Equal(t, 1001, total, "every failure counted:\n%s", out)
	require.LessOrEqual(t, len(lines), 3, "one line per 5 s at most (the test takes well under 10 s):\n%s", out)
	require.False(t, errors.Is(err, actor.ErrNodeDown))
}

// scriptedDiscovery reports what the test tells it to.
type scriptedDiscovery struct{ notify func(discovery.Event) }

func (d *scriptedDiscovery) Start(_ context.Context, _ discovery.Member, notify func(discovery.Event)) error {
	d.notify = notify
	return nil
}
func (d *scriptedDiscovery) Update(context.Context, discovery.Member) error { return nil }
func (d *scriptedDiscovery) Stop(context.Context) error                     { return nil }

// TestDiallingStopsWhenDiscoverySaysTheIncarnationIsGone: once discovery
// reports an incarnation down, its address is not dialled again: calls
// fail at once, not executed, with no dial.
func TestDiallingStopsWhenDiscoverySaysTheIncarnationIsGone(t *testing.T) {
	disc := &scriptedDiscovery{}
	asys, a, logs := startNode(t, "a", Config{Discovery: disc})
	dead := freeAddr(t)
	m := discovery.Member{Node: "orders", Incarnation: 0x5, Addr: dead}
	disc.notify(discovery.Event{Type: discovery.MemberUp, Member: m})
	_, err := asys.Call(context.Background(), "orders", "echo", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrUnreachable)
	require.Contains(t, err.Error(), "dial orders at "+dead, "listed up: dialled")

	disc.notify(discovery.Event{Type: discovery.MemberDown, Member: m})
	before := logs.String()
	for range 100 {
		_, err = asys.Call(context.Background(), "orders", "echo", &testpb.Echo{})
		require.ErrorIs(t, err, actor.ErrUnreachable)
		require.Equal(t, actor.NotExecuted, actor.Outcome(err))
		require.NotContains(t, err.Error(), "dial", "down: not dialled")
	}
	a.dial.log.close()
	require.NotContains(t, strings.TrimPrefix(logs.String(), before), "dial failed again", "no dial after the incarnation went down")

	// The next incarnation's Up brings its address back.
	next := discovery.Member{Node: "orders", Incarnation: 0x6, Addr: dead}
	disc.notify(discovery.Event{Type: discovery.MemberUp, Member: next})
	_, err = asys.Call(context.Background(), "orders", "echo", &testpb.Echo{})
	require.Contains(t, err.Error(), "dial orders at "+dead)
}

// TestConnectToANewAddressIsNotFailedByADialToTheOld: a dial to a node's
// old address is in flight (it hangs in the handshake) when Connect gives
// the node a new address: Connect dials the new one instead of sharing the
// old dial's failure (a restarted peer on a new address was reported
// unreachable this way).
func TestConnectToANewAddressIsNotFailedByADialToTheOld(t *testing.T) {
	_, b, _ := startNode(t, "b", Config{})
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	held := make(chan net.Conn, 16)
	defer func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held <- c // says nothing: the dial waits for its handshake
		}
	}()
	_, a, _ := startNode(t, "a", Config{HandshakeTimeout: 2 * time.Second})
	oldDone := make(chan error, 1)
	go func() { oldDone <- a.Connect(context.Background(), "b", silent.Addr().String()) }()
	waitFor(t, "the dial to the old address in flight", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		s := a.slots["b"]
		return s != nil && s.dialing != nil
	})
	require.NoError(t, a.Connect(context.Background(), "b", b.Addr()), "the new address is dialled")
	require.Equal(t, b.System().Incarnation(), outLinked(a, "b"))
	require.Error(t, <-oldDone, "the old address never answered")
}

// TestNoDialWithoutAnAddressAfterALinkedIncarnationGoes: a peer that was
// linked is reported down by discovery, which takes its address with it.
// Calls to it fail at once as unreachable (not executed) and nothing is
// dialled: before, each call dialled the empty address ("dial tcp:
// missing address", 141 log lines in 5 s in a scale run).
func TestNoDialWithoutAnAddressAfterALinkedIncarnationGoes(t *testing.T) {
	bsys, b, _ := startNode(t, "b", Config{})
	disc := &scriptedDiscovery{}
	asys, a, logs := startNode(t, "a", Config{Discovery: disc})
	m := discovery.Member{Node: "b", Incarnation: bsys.Incarnation(), Addr: b.Addr()}
	disc.notify(discovery.Event{Type: discovery.MemberUp, Member: m})
	_, err := asys.Call(context.Background(), "b", "echo", &testpb.Echo{})
	require.NoError(t, err, "listed up: linked and called")
	require.NotZero(t, outLinked(a, "b"))

	disc.notify(discovery.Event{Type: discovery.MemberDown, Member: m})
	before := logs.String()
	for range 100 {
		_, err = asys.Call(context.Background(), "b", "echo", &testpb.Echo{})
		require.ErrorIs(t, err, actor.ErrUnreachable)
		require.Equal(t, actor.NotExecuted, actor.Outcome(err))
		require.Contains(t, err.Error(), "no address known")
	}
	a.dial.log.close()
	require.NotContains(t, strings.TrimPrefix(logs.String(), before), "dial failed", "nothing dialled once the incarnation went down")
}
