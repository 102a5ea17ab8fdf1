package peers

import (
	"slices"
	"testing"
)

func kinds(fx []Effect) []EffectKind {
	var k []EffectKind
	for _, e := range fx {
		k = append(k, e.Kind)
	}
	return k
}

func find(t *testing.T, fx []Effect, k EffectKind) Effect {
	t.Helper()
	for _, e := range fx {
		if e.Kind == k {
			return e
		}
	}
	t.Fatalf("no %s in %v", k, fx)
	return Effect{}
}

// upAndDial makes b/7 known and issues a call to it, which dials.
func upAndDial(t *testing.T, tb *Table) LinkID {
	tb.Step(DiscoveryUp{Node: "b", Inc: 7, PoolSize: 2})
	fx := tb.Step(CallIssued{Call: 1, Sender: 1, Seq: 1, Node: "b", Inc: 7})
	return find(t, fx, EffDial).Link
}

func TestCallClasses(t *testing.T) {
	tb := New(Config{Node: "a", Inc: 1})
	l := upAndDial(t, tb)
	// Never written: the dial failed.
	if e := find(t, tb.Step(DialDone{Link: l, Failed: true}), EffFailCall); e.Call != 1 || e.Class != NotExecuted {
		t.Fatalf("queued call ended %v", e)
	}
	// Written, then its link lost: may have executed.
	fx := tb.Step(CallIssued{Call: 2, Sender: 1, Seq: 2, Node: "b", Inc: 7})
	l = find(t, fx, EffDial).Link
	tb.Step(DialDone{Link: l})
	fx = tb.Step(HelloRead{Link: l, Hello: Hello{Node: "b", Inc: 7, PoolSize: 2}})
	if w := find(t, fx, EffWrite); w.Frame.Kind != FrameCall || w.Frame.Call != 2 {
		t.Fatalf("open did not write the queued call: %v", fx)
	}
	tb.Step(CallIssued{Call: 3, Sender: 1, Seq: 3, Node: "b", Inc: 7})
	fx = tb.Step(FrameRead{Link: l, Frame: Frame{Kind: FrameReply, Call: 3, CallerInc: 1}})
	if d := find(t, fx, EffDeliver); d.Frame.Call != 3 {
		t.Fatalf("reply not delivered: %v", fx)
	}
	if fx = tb.Step(FrameRead{Link: l, Frame: Frame{Kind: FrameReply, Call: 3}}); find(t, fx, EffLateReply).Call != 3 {
		t.Fatal("second reply not late")
	}
	fx = tb.Step(LinkClosed{Link: l, Lost: true})
	if e := find(t, fx, EffFailCall); e.Call != 2 || e.Class != MayHaveExecuted {
		t.Fatalf("written call ended %v", fx)
	}
	if tb.Pending("b", 7) != 0 {
		t.Fatal("calls still pending")
	}
}

func TestSilentLinkClosesAtWindow(t *testing.T) {
	tb := New(Config{Node: "a", Inc: 1, HeartbeatInterval: 10, HeartbeatMisses: 3})
	l := upAndDial(t, tb)
	tb.Step(DialDone{Link: l})
	tb.Step(HelloRead{Link: l, Hello: Hello{Node: "b", Inc: 7}})
	if fx := tb.Step(Tick{Now: 30}); slices.Contains(kinds(fx), EffClose) {
		t.Fatalf("closed within the window: %v", fx)
	}
	fx := tb.Step(Tick{Now: 31})
	if c := find(t, fx, EffClose); c.Link != l || c.Reason != ReasonSilent {
		t.Fatalf("silent link: %v", fx)
	}
	if find(t, fx, EffFailCall).Class != MayHaveExecuted {
		t.Fatal("call pinned to the silent link")
	}
}

func TestPoolWaitsForBarrier(t *testing.T) {
	tb := New(Config{Node: "a", Inc: 1, PoolLinks: 1})
	tb.Step(DiscoveryUp{Node: "b", Inc: 7, PoolSize: 1})
	n := find(t, tb.Step(Send{Sender: 1, Seq: 1, Node: "b", Inc: 7}), EffDial).Link
	tb.Step(DialDone{Link: n})
	tb.Step(HelloRead{Link: n, Hello: Hello{Node: "b", Inc: 7, PoolSize: 1}})
	p := find(t, tb.Step(BuildPool{Node: "b"}), EffDial).Link
	tb.Step(DialDone{Link: p})
	fx := tb.Step(HelloRead{Link: p, Hello: Hello{Node: "b", Inc: 7, PoolSize: 1}})
	find(t, fx, EffPublishRoute)
	if w := find(t, fx, EffWrite); w.Link != n || w.Frame.Kind != FramePing {
		t.Fatalf("no barrier ping on the native link: %v", fx)
	}
	if fx = tb.Step(Send{Sender: 1, Seq: 2, Node: "b", Inc: 7}); len(fx) != 0 {
		t.Fatalf("the pool wrote before its fence: %v", fx)
	}
	fx = tb.Step(FrameRead{Link: n, Frame: Frame{Kind: FramePong}})
	if w := find(t, fx, EffWrite); w.Link != p || w.Frame.Seq != 2 {
		t.Fatalf("the pong did not release the pool: %v", fx)
	}
}

func TestFenceHoldsUntilNamedLinkEnds(t *testing.T) {
	tb := New(Config{Node: "b", Inc: 7})
	old, nw := InboundBit|1, InboundBit|2
	for i, l := range []LinkID{old, nw} {
		tb.Step(Accepted{Link: l})
		tb.Step(HelloRead{Link: l, Hello: Hello{Node: "a", Inc: 1, DialID: LinkID(10 + i)}})
	}
	tb.Step(FrameRead{Link: nw, Frame: Frame{Kind: FrameFence, Links: []LinkID{10}}})
	if tb.Reading(nw) || tb.LinkState(nw) != LinkHeld {
		t.Fatal("a fence naming an open link did not hold the reader")
	}
	tb.Step(FrameRead{Link: old, Frame: Frame{Kind: FrameSend, Sender: 1, Seq: 1}})
	tb.Step(LinkClosed{Link: old})
	if !tb.Reading(nw) {
		t.Fatal("still held after the named link ended")
	}
}

func TestNewerIncarnationSupersedes(t *testing.T) {
	tb := New(Config{Node: "a", Inc: 1})
	upAndDial(t, tb)
	fx := tb.Step(DiscoveryUp{Node: "b", Inc: 8})
	if e := find(t, fx, EffFailCall); e.Class != NotExecuted {
		t.Fatalf("call to the superseded incarnation: %v", fx)
	}
	find(t, fx, EffPeerGone)
	if inc, _ := tb.Current("b"); inc != 8 {
		t.Fatalf("current %x", inc)
	}
	tb.Step(DiscoveryUp{Node: "b", Inc: 7}) // buried: refused
	if inc, _ := tb.Current("b"); inc != 8 {
		t.Fatal("a buried incarnation came back")
	}
	if err := tb.Check(); err != nil {
		t.Fatal(err)
	}
}

// A call written after we closed one of the peer's links to us (silent)
// may have its reply written there: the peer writes on it until it
// learns. Its fence naming that link would fail the call, but a peer
// with no other link to us writes none, so the window ends the wait
// (make sim: seed 517568).
func TestCallWrittenAfterLostLinkFailsAtWindow(t *testing.T) {
	tb := New(Config{Node: "a", Inc: 1, HeartbeatInterval: 10, HeartbeatMisses: 3})
	l := upAndDial(t, tb)
	tb.Step(DialDone{Link: l})
	tb.Step(HelloRead{Link: l, Hello: Hello{Node: "b", Inc: 7, PoolSize: 2}})
	tb.Step(FrameRead{Link: l, Frame: Frame{Kind: FrameReply, Call: 1, CallerInc: 1}})
	// b's pool link to us, which falls silent while the native one lives.
	in := InboundBit | 1
	tb.Step(Accepted{Link: in})
	tb.Step(HelloRead{Link: in, Hello: Hello{Node: "b", Inc: 7, Role: RolePool, DialID: 5, PoolSize: 2}})
	tb.Step(FrameRead{Link: l, Frame: Frame{Kind: FramePing}})
	tb.Step(Tick{Now: 20})
	tb.Step(FrameRead{Link: l, Frame: Frame{Kind: FramePing}})
	fx := tb.Step(Tick{Now: 31})
	if c := find(t, fx, EffClose); c.Link != in || c.Reason != ReasonSilent {
		t.Fatalf("silent pool link: %v", fx)
	}
	fx = tb.Step(CallIssued{Call: 2, Sender: 1, Seq: 2, Node: "b", Inc: 7})
	if w := find(t, fx, EffWrite); w.Link != l || w.Frame.Call != 2 {
		t.Fatalf("call not written on the native link: %v", fx)
	}
	for now := Time(40); now <= 61; now += 7 {
		tb.Step(FrameRead{Link: l, Frame: Frame{Kind: FramePing}})
		if fx = tb.Step(Tick{Now: now}); slices.Contains(kinds(fx), EffFailCall) {
			t.Fatalf("failed within the window at %d: %v", now, fx)
		}
	}
	tb.Step(FrameRead{Link: l, Frame: Frame{Kind: FramePing}})
	fx = tb.Step(Tick{Now: 62})
	if e := find(t, fx, EffFailCall); e.Call != 2 || e.Class != MayHaveExecuted || e.Reason != ReasonLost {
		t.Fatalf("call written after the lost link: %v", fx)
	}
	if slices.Contains(kinds(fx), EffClose) {
		t.Fatalf("the native link closed: %v", fx)
	}
	// Later calls wait for their replies again.
	tb.Step(CallIssued{Call: 3, Sender: 1, Seq: 3, Node: "b", Inc: 7})
	tb.Step(FrameRead{Link: l, Frame: Frame{Kind: FramePing}})
	if fx = tb.Step(Tick{Now: 90}); slices.Contains(kinds(fx), EffFailCall) {
		t.Fatalf("a later call failed: %v", fx)
	}
}

// A listing of another incarnation does not end a linked one; once its
// links have closed, it does.
func TestListingBesideALinkedIncarnationKeepsIt(t *testing.T) {
	tb := New(Config{Node: "a", Inc: 1})
	l := upAndDial(t, tb)
	tb.Step(DialDone{Link: l})
	tb.Step(HelloRead{Link: l, Hello: Hello{Node: "b", Inc: 7, PoolSize: 2}})
	if fx := tb.Step(DiscoveryUp{Node: "b", Inc: 8}); len(fx) != 0 {
		t.Fatalf("a listing beside linked b/7 did: %v", fx)
	}
	if inc, _ := tb.Current("b"); inc != 7 {
		t.Fatalf("current %x", inc)
	}
	tb.Step(LinkClosed{Link: l, Lost: true})
	fx := tb.Step(DiscoveryUp{Node: "b", Inc: 8})
	find(t, fx, EffPeerGone)
	if inc, _ := tb.Current("b"); inc != 8 {
		t.Fatalf("current %x after b/7's link closed", inc)
	}
	if err := tb.Check(); err != nil {
		t.Fatal(err)
	}
}
