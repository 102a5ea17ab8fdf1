package remote

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/mailroom-go/mailroom/remote/internal/peers"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// idleNodes is b, and a whose discovery lists b: a's links to b are
// dialed for traffic. Both run on one logical clock (clk): links go idle
// when the test moves it, never on their own.
type idleNodes struct {
	asys, bsys   *actor.System
	a, b         *Node
	alogs, blogs *logSink
	clk          *logicalClock
}

// idleLiveness is cfg with a heartbeat interval of an hour unless it
// sets one: liveness is not under test here, and the idle checks move
// the clock by minutes, which on the default window of 3 s would make
// links silent before their pongs came (the clock does not wait for the
// network).
func idleLiveness(cfg Config) Config {
	if cfg.Liveness.HeartbeatInterval == 0 {
		cfg.Liveness.HeartbeatInterval = time.Hour
	}
	return cfg
}

func startIdleNodes(t *testing.T, cfg Config) *idleNodes {
	t.Helper()
	cfg = idleLiveness(cfg)
	clk := newLogicalClock()
	bsys, b, blogs := startNodeAt(t, "b", cfg, clk)
	disc := &scriptedDiscovery{}
	acfg := cfg
	acfg.Discovery = disc
	asys, a, alogs := startNodeAt(t, "a", acfg, clk)
	disc.notify(discovery.Event{Type: discovery.MemberUp, Member: discovery.Member{Node: "b", Incarnation: bsys.Incarnation(), Addr: b.Addr()}})
	return &idleNodes{asys: asys, bsys: bsys, a: a, b: b, alogs: alogs, blogs: blogs, clk: clk}
}

// call calls b's echo from a.
func (x *idleNodes) call(t *testing.T) {
	t.Helper()
	_, err := x.asys.Call(idleCtx(t, 10*time.Second), "b", "echo", &testpb.Echo{Text: "x"})
	require.NoError(t, err)
}

// outLink is a's native link to b (nil: none).
func (x *idleNodes) outLink() *link {
	_, l := x.a.dial.live("b")
	return l
}

// forceIdle moves the clock by a's LinkIdleTimeout twice (the default
// when a's is negative: never idle), a liveness step on each node after
// each: the first notes what the links carried, the second finds them
// idle since, unless something keeps them.
func (x *idleNodes) forceIdle() {
	d := x.a.cfg.Liveness.LinkIdleTimeout
	if d <= 0 {
		d = DefaultLiveness().LinkIdleTimeout
	}
	x.clk.advance(d)
	x.clk.advance(d)
}

// inboundFrom counts n's live links that node dialed.
func inboundFrom(n *Node, node string) int {
	p := (*transport)(n).current(node)
	if p == nil {
		return 0
	}
	return p.inboundLinks()
}

// noWarnings fails if logs has a line at Warn or Error.
func noWarnings(t *testing.T, name string, logs *logSink) {
	t.Helper()
	for line := range strings.SplitSeq(logs.String(), "\n") {
		require.False(t, strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR"), "%s logged: %s", name, line)
	}
}

// watcherOf is an actor that watches target on "watch" and stops on
// "unwatch".
func watcherOf(target actor.PID) actor.ReceiveFunc {
	return func(c *actor.Context) {
		switch c.Message() {
		case "watch":
			c.Watch(target)
			c.Respond(true)
		case "unwatch":
			c.Unwatch(target)
			c.Respond(true)
		}
	}
}

// watchCount is how many of p's actors our actors watch.
func (p *peer) watchCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.watches)
}

// inWatchCount is how many of our actors p's actors watch.
func (p *peer) inWatchCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inWatches)
}

// requireKeptOpen checks that an idle check leaves a's link to b open.
func requireKeptOpen(t *testing.T, x *idleNodes, why string) {
	t.Helper()
	l := x.outLink()
	require.NotNil(t, l, "linked before the check")
	x.forceIdle()
	require.Zero(t, x.a.Stats().LinksIdleClosed, "%s: not closed", why)
	require.Same(t, l, x.outLink(), "%s: the same link, open", why)
	require.False(t, l.writeClosed())
}

// TestAnIdleNativeLinkClosesAndTheNextCallDialsANewOne: a calls b (a
// link on demand), then nothing: the idle check closes a's link, b's end
// closes too, with nothing logged above Debug and neither incarnation
// affected; the next call dials a new link.
// The same over TCP (a half-close), TLS (close_notify), an in-memory pipe
// (no half-close: the link closes once its last write was read) and a
// buffered in-memory network (a half-close).
func TestAnIdleNativeLinkClosesAndTheNextCallDialsANewOne(t *testing.T) {
	t.Run("tcp", func(t *testing.T) { idleCloseAndRedial(t, Config{}) })
	t.Run("tls", func(t *testing.T) { idleCloseAndRedial(t, newTestCA(t).tlsConfig(t, "a", "b")) })
	t.Run("pipe", func(t *testing.T) { idleCloseAndRedial(t, Config{Network: memnet.New()}) })
	t.Run("buffered", func(t *testing.T) { idleCloseAndRedial(t, Config{Network: memnet.NewBuffered(1 << 20)}) })
}

func idleCloseAndRedial(t *testing.T, cfg Config) {
	x := startIdleNodes(t, cfg)
	x.call(t)
	l1 := x.outLink()
	require.NotNil(t, l1)
	require.Equal(t, 1, inboundFrom(x.b, "a"))
	bl := onlyLink(t, x.b, "a")
	require.Equal(t, peers.LinkOpen, l1.st.Phase(), "a's end, carrying calls")
	require.Equal(t, peers.LinkOpen, bl.st.Phase(), "b's end, carrying calls")

	x.forceIdle()
	require.Equal(t, uint64(1), x.a.Stats().LinksIdleClosed)
	require.Nil(t, x.outLink(), "a's out link is no longer used")
	require.Contains(t, []peers.LinkState{peers.LinkIdleClosing, peers.LinkEnded}, l1.st.Phase(), "a's end, once the idle check closed it")
	waitFor(t, "a's idle link ended", func() bool {
		select {
		case <-l1.done:
			return true
		default:
			return false
		}
	})
	waitFor(t, "b's end of it closed", func() bool { return inboundFrom(x.b, "a") == 0 })
	require.Equal(t, peers.LinkEnded, l1.st.Phase())
	require.Equal(t, peers.LinkEnded, bl.st.Phase())
	require.True(t, l1.st.Has(peers.BitIdleClosed), "a closed its end for idleness")
	require.True(t, bl.st.Has(peers.BitPeerIdle), "b heard the idle close before its end closed")
	require.True(t, l1.st.Has(peers.BitFenced), "a's end is named in the fence a link dialed after it starts with")
	require.False(t, l1.st.Has(peers.BitGoodbye) || bl.st.Has(peers.BitGoodbye), "nobody said goodbye")
	noWarnings(t, "a", x.alogs)
	noWarnings(t, "b", x.blogs)
	for _, n := range []*Node{x.a, x.b} {
		st := n.Stats()
		require.Zero(t, st.PeersGone, "no incarnation gone on %s", n.sys.Name())
		require.Zero(t, st.FailedByLiveness)
		require.Zero(t, st.LinksSilent)
		require.Zero(t, st.DroppedUnsent)
	}
	pb, ok := x.a.Peer("b")
	require.True(t, ok, "a still knows b's incarnation")
	require.Equal(t, x.bsys.Incarnation(), pb.Incarnation)
	pa, ok := x.b.Peer("a")
	require.True(t, ok, "b still knows a's incarnation")
	require.Equal(t, x.asys.Incarnation(), pa.Incarnation)

	x.call(t)
	l2 := x.outLink()
	require.NotNil(t, l2)
	require.NotSame(t, l1, l2, "a new link")
	require.Equal(t, uint64(1), x.a.Stats().LinksIdleClosed)
}

// TestTheIdleCloseFrameIsWhatTheEncoderWrites: the frame a node writes
// by hand is the encoder's CtlIdleClose.
func TestTheIdleCloseFrameIsWhatTheEncoderWrites(t *testing.T) {
	e := wire.Ends{SelfNode: "a", SelfInc: 1, PeerNode: "b", PeerInc: 2}
	require.Equal(t, e.AppendFrame(nil, &wire.Element{Kind: wire.KindControl, Control: &wire.Control{Op: wire.CtlIdleClose}}), idleCloseFrame)
}

// TestAnIdleCloseFencesTheNextLinkBehindIt: a's idle link still has
// frames b has not read (held in b's "kernel") when it closes; the next
// send dials a new link, which starts with a fence naming the old one, so
// b delivers it only after everything the old link carried.
func TestAnIdleCloseFencesTheNextLinkBehindIt(t *testing.T) {
	net := memnet.NewBuffered(1 << 20)
	x := startIdleNodes(t, Config{Network: net, Liveness: Liveness{HeartbeatInterval: time.Hour}})
	noDeadLetters(t, x.asys)
	noDeadLetters(t, x.bsys)
	sink := startOrderSink(t, x.bsys)
	s := x.asys.NewSender()
	send := func(ns ...int64) {
		for _, n := range ns {
			s.SendNamed("b", "order", &testpb.Echo{N: n})
		}
	}
	send(1, 2)
	waitFor(t, "1 and 2 delivered", func() bool { return len(sink.received()) == 2 })

	l1 := x.outLink()
	require.NotNil(t, l1)
	conn := net.Conns(x.b.Addr())[0]
	require.Same(t, conn, l1.conn)
	conn.Hold()
	send(3, 4, 5)
	held := sendFrames(t, l1, s.PID(), 3, 4, 5)
	waitFor(t, "3, 4, 5 written to the held connection", func() bool { return conn.Buffered() == held })

	x.forceIdle()
	require.Equal(t, uint64(1), x.a.Stats().LinksIdleClosed)
	waitFor(t, "the idle-close frame written after them", func() bool { return conn.Buffered() == held+len(idleCloseFrame) })

	send(6)
	waitFor(t, "b waits on the fence (or wrongly delivered 6)", func() bool { return x.b.Stats().FenceWaits == 1 || sink.has(6) })
	require.Equal(t, []int64{1, 2}, sink.received(), "nothing overtakes what the idle link carries")

	conn.Release()
	waitFor(t, "six delivered", func() bool { return len(sink.received()) == 6 })
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, sink.received())
	waitFor(t, "b's end of the idle link closed", func() bool { return inboundFrom(x.b, "a") == 1 })
	require.Zero(t, x.b.Stats().FenceTimeouts)
	require.Zero(t, x.a.Stats().DroppedUnsent)
	noWarnings(t, "a", x.alogs)
	noWarnings(t, "b", x.blogs)
}

// TestAnIdleLinkIsKeptWhileSomethingIsPinnedToIt: the idle check leaves
// the link open while a call is pending, while a watches an actor on b
// or b one on a, while a pool is published or being built; and closes
// it once none of these holds.
func TestAnIdleLinkIsKeptWhileSomethingIsPinnedToIt(t *testing.T) {
	x := startIdleNodes(t, Config{PoolSize: 1})
	release := make(chan struct{})
	require.NoError(t, x.bsys.Register("block", func(_ context.Context, arg proto.Message) (proto.Message, error) {
		<-release
		return arg, nil
	}))
	x.call(t)

	t.Run("a call pending", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, err := x.asys.Call(context.Background(), "b", "block", &testpb.Echo{})
			done <- err
		}()
		waitFor(t, "the call pending", func() bool { return x.a.Stats().Pending == 1 })
		requireKeptOpen(t, x, "a call pending")
		close(release)
		require.NoError(t, <-done)
	})

	t.Run("a watches an actor on b", func(t *testing.T) {
		target, err := x.bsys.SpawnNamed(actor.PropsFromFunc(func(*actor.Context) {}), "watched-on-b")
		require.NoError(t, err)
		w, err := x.asys.SpawnFunc(watcherOf(target))
		require.NoError(t, err)
		_, err = x.asys.Request(idleCtx(t, 5*time.Second), w, "watch")
		require.NoError(t, err)
		waitFor(t, "a holds the watch", func() bool { return (*transport)(x.a).current("b").watchCount() == 1 })
		requireKeptOpen(t, x, "a watches an actor on b")
		_, err = x.asys.Request(idleCtx(t, 5*time.Second), w, "unwatch")
		require.NoError(t, err)
		waitFor(t, "the watch gone", func() bool { return (*transport)(x.a).current("b").watchCount() == 0 })
	})

	t.Run("b watches an actor on a", func(t *testing.T) {
		target, err := x.asys.SpawnNamed(actor.PropsFromFunc(func(*actor.Context) {}), "watched-on-a")
		require.NoError(t, err)
		require.NoError(t, x.b.Connect(idleCtx(t, 5*time.Second), "a", x.a.Addr()))
		w, err := x.bsys.SpawnFunc(watcherOf(target))
		require.NoError(t, err)
		_, err = x.bsys.Request(idleCtx(t, 5*time.Second), w, "watch")
		require.NoError(t, err)
		waitFor(t, "a holds b's watch", func() bool { return (*transport)(x.a).current("b").inWatchCount() == 1 })
		requireKeptOpen(t, x, "b watches an actor on a")
		_, err = x.bsys.Request(idleCtx(t, 5*time.Second), w, "unwatch")
		require.NoError(t, err)
		waitFor(t, "b's watch gone", func() bool { return (*transport)(x.a).current("b").inWatchCount() == 0 })
	})

	t.Run("a pool being built, then published", func(t *testing.T) {
		h := dialHandPool(t, x.a, "b")
		requireKeptOpen(t, x, "a pool link dialed")
		h.publish(t, x.asys, x.a, "b")
		requireKeptOpen(t, x, "a pool published")
		(*host)(x.a).unpublishPool(h.pool, fmt.Errorf("test: torn down"))
		h.drain(t)
		waitFor(t, "the pool link ended", func() bool {
			select {
			case <-h.pl.Closed():
				return true
			default:
				return false
			}
		})
	})

	// Nothing pinned any more: it closes.
	x.forceIdle()
	require.Equal(t, uint64(1), x.a.Stats().LinksIdleClosed)
	require.Nil(t, x.outLink())
	x.call(t)
}

// TestLinksKeptOpenWhateverTheirIdleTime: links the node keeps (a seed,
// a Connect), links to a node discovery does not list, and every link
// when LinkIdleTimeout is negative are never closed idle.
func TestLinksKeptOpenWhateverTheirIdleTime(t *testing.T) {
	t.Run("a seed", func(t *testing.T) {
		clk := newLogicalClock()
		bsys, b, _ := startNodeAt(t, "b", idleLiveness(Config{}), clk)
		asys, a, _ := startNodeAt(t, "a", idleLiveness(Config{Seeds: []string{"b=" + b.Addr()}}), clk)
		waitFor(t, "a linked to its seed", func() bool { return outLinked(a, "b") == bsys.Incarnation() })
		x := &idleNodes{asys: asys, bsys: bsys, a: a, b: b, clk: clk}
		x.call(t)
		requireKeptOpen(t, x, "a seed")
	})
	t.Run("Connect", func(t *testing.T) {
		x := startIdleNodes(t, Config{})
		require.NoError(t, x.a.Connect(idleCtx(t, 5*time.Second), "b", ""))
		x.call(t)
		requireKeptOpen(t, x, "Connect")
	})
	t.Run("not listed by discovery", func(t *testing.T) {
		clk := newLogicalClock()
		bsys, b, _ := startNodeAt(t, "b", idleLiveness(Config{}), clk)
		asys, a, _ := startNodeAt(t, "a", idleLiveness(Config{}), clk)
		// b dials a: a learns b's address from its hello, and dials it back.
		require.NoError(t, b.Connect(idleCtx(t, 5*time.Second), "a", a.Addr()))
		x := &idleNodes{asys: asys, bsys: bsys, a: a, b: b, clk: clk}
		x.call(t)
		requireKeptOpen(t, x, "not listed")
	})
	t.Run("disabled", func(t *testing.T) {
		x := startIdleNodes(t, Config{Liveness: Liveness{LinkIdleTimeout: -1}})
		x.call(t)
		requireKeptOpen(t, x, "disabled")
	})
}

// TestOrderAndNoLossAcrossIdleCloses: senders send to b with pauses
// longer than the idle time now and then (the pausing sender moves the
// logical clock past the idle time, a liveness step on each side), so
// their links close between their messages (and sometimes while another
// sender's is being sent). Every send is delivered, in each sender's
// order, and nothing is dropped or failed.
func TestOrderAndNoLossAcrossIdleCloses(t *testing.T) {
	orderAcrossIdleCloses(t, false)
}

// TestOrderAndNoLossWhileIdleClosesRaceSenders: as above, while another
// goroutine moves the clock past the idle time over and over, so that
// links close between any two messages: in the middle of a sender's
// stream, racing its writes and its calls.
func TestOrderAndNoLossWhileIdleClosesRaceSenders(t *testing.T) {
	orderAcrossIdleCloses(t, true)
}

func orderAcrossIdleCloses(t *testing.T, hammer bool) {
	const senders, each = 3, 80
	cfg := Config{Liveness: Liveness{LinkIdleTimeout: 20 * time.Millisecond}}
	x := startIdleNodes(t, cfg)
	stop := make(chan struct{})
	var hammering sync.WaitGroup
	if hammer {
		hammering.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				x.forceIdle()
				time.Sleep(time.Millisecond) // a pace, not a synchronisation
			}
		})
	}
	noDeadLetters(t, x.asys)
	noDeadLetters(t, x.bsys)
	var mu sync.Mutex
	got := map[actor.PID][]int64{}
	// A slow receiver with a mailbox of one: b's readers wait to deliver,
	// so an old link's reader still holds frames when a new link's
	// reader starts (without the fence, they would race).
	_, err := x.bsys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if e, ok := c.Message().(*testpb.Echo); ok {
			mu.Lock()
			got[c.Sender()] = append(got[c.Sender()], e.N)
			mu.Unlock()
			time.Sleep(200 * time.Microsecond) // work, not synchronisation
		}
	}).WithMailbox(1, actor.Block), "order")
	require.NoError(t, err)
	var calls atomic.Int64
	// Without the hammer the senders send in rounds, and between two
	// rounds the clock moves past the idle time: the link closes then,
	// every time (nothing is pinned to it: each call has returned), and
	// the next round dials a new one. With the hammer, one round, paced.
	rounds := 10
	if hammer {
		rounds = 1
	}
	per := int64(each / rounds)
	pids := make([]actor.PID, senders)
	ss := make([]*actor.Sender, senders)
	rs := make([]*rand.Rand, senders)
	for i := range senders {
		ss[i] = x.asys.NewSender()
		pids[i] = ss[i].PID()
		rs[i] = rand.New(rand.NewPCG(uint64(i), 18))
	}
	for round := range int64(rounds) {
		var wg sync.WaitGroup
		for i := range senders {
			s, r := ss[i], rs[i]
			wg.Go(func() {
				for n := round * per; n < (round+1)*per; n++ {
					s.SendNamed("b", "order", &testpb.Echo{N: n})
					if r.IntN(8) == 0 { // now and then a call too, on the same path
						if _, err := s.Call(context.Background(), "b", "echo", &testpb.Echo{}); err == nil {
							calls.Add(1)
						} else {
							t.Errorf("call: %v", err)
						}
					}
					if !hammer {
						continue
					}
					// A pace, not a synchronisation: now and then a pause
					// in which the hammer's steps find the links quiet.
					switch r.IntN(3) {
					case 0:
						time.Sleep(time.Duration(30+r.IntN(50)) * time.Millisecond)
					case 1:
						time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		if hammer {
			continue
		}
		waitFor(t, "a's link to b up, its dial done", func() bool {
			x.a.mu.Lock()
			s := x.a.slots["b"]
			dialed := s != nil && s.dialing == nil
			x.a.mu.Unlock()
			return dialed && x.outLink() != nil
		})
		x.forceIdle()
		require.Equal(t, uint64(round+1), x.a.Stats().LinksIdleClosed, "round %d: the link closed idle between the senders' messages", round)
	}
	close(stop)
	hammering.Wait()
	waitFor(t, "every send delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		total := 0
		for _, ns := range got {
			total += len(ns)
		}
		return total == senders*each
	})
	mu.Lock()
	for _, pid := range pids {
		ns := got[pid]
		require.Len(t, ns, each)
		for i, n := range ns {
			require.Equal(t, int64(i), n, "sender %v: in order", pid)
		}
	}
	mu.Unlock()
	st := x.a.Stats()
	require.NotZero(t, st.LinksIdleClosed, "links closed idle between sends")
	require.Zero(t, st.DroppedUnsent)
	require.Zero(t, st.FailedByLiveness)
	require.Zero(t, x.b.Stats().PeersGone)
	noWarnings(t, "a", x.alogs)
	noWarnings(t, "b", x.blogs)
	t.Logf("%d links closed idle, %d calls", st.LinksIdleClosed, calls.Load())
}

// idleCtx is a context that ends after d or with the test.
func idleCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
