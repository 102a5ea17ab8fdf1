package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// Options configure one run.
type Options struct {
	Seed      uint64
	Mutations peers.Mutations // test-only bugs switched on in every Table
	Trace     bool            // record every step and effect (Result.Trace)
}

// Result is what one run did.
type Result struct {
	Seed      uint64
	Steps     int
	Violation *Violation // the first invariant broken; nil if none
	Trace     []string   // with Options.Trace

	calls, executed uint64
}

// Violation is an invariant broken, when and where.
type Violation struct {
	Invariant string // order, stale-reply, class, once, never-ended, bound
	Detail    string
	At        peers.Time
}

func (v *Violation) Error() string {
	return fmt.Sprintf("t=%d %s: %s", v.At, v.Invariant, v.Detail)
}

// Timing of the simulated world, in milliseconds.
const (
	runFor     = 1500 // faults and traffic
	quiesceFor = 2000 // then: healed, thawed, no traffic, until everything settled
	tickEvery  = 25
	heartbeat  = 100
	idleAfter  = 400
)

var names = []string{"a", "b", "c"}

type inst struct {
	name         string
	serial       int
	inc          uint64
	t            *peers.Table
	dead         bool // killed or stopped
	frozenUntil  peers.Time
	ends         map[peers.LinkID]*end
	nextIn       peers.LinkID
	lastSeq      map[uint64]uint64 // per sender: the last seq delivered here
	seq          [3]uint64         // per local sender
	discLast     peers.Time        // discovery events reach it in order
	disc         []discEv
	senderOffset uint64
}

type discEv struct {
	at peers.Time
	ev peers.Event
}

type end struct {
	c        *conn
	side     int // c.e[side] is this end
	in       *inst
	link     peers.LinkID
	closedR  bool // the Table forgot it: nothing more is read
	wclosed  bool // EOF written
	accepted bool
}

type msg struct {
	f   peers.Frame
	eof bool
	at  peers.Time
}

// conn is a TCP connection: FIFO each way. q[i] travels toward e[i].
type conn struct {
	e       [2]*end
	q       [2][]msg
	last    [2]peers.Time
	pumping [2]bool
	reset   bool // reset: nothing written from now on arrives
}

type callRec struct {
	caller   *inst
	to       string // the callee's name and incarnation
	inc      uint64
	executed bool
	ended    bool
	class    peers.Class
}

type item struct {
	at  peers.Time
	seq uint64
	fn  func()
}

type items []item

func (h items) Len() int { return len(h) }
func (h items) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h items) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *items) Push(x any)   { *h = append(*h, x.(item)) }
func (h *items) Pop() any     { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

type world struct {
	o   Options
	rng *rand.Rand
	now peers.Time
	q   items
	seq uint64
	cur map[string]*inst // the running incarnation of each name
	// listed are the incarnations discovery lists up, in start order: a
	// crashed one stays listed until its TTL runs out (kill).
	listed  []*inst
	all     []*inst
	conns   []*conn
	parts   map[[2]string]peers.Time // partitioned pairs, until
	calls   map[peers.CallID]*callRec
	nextCID peers.CallID
	steps   int
	viol    *Violation
	trace   []string
	settled bool
	fx      []peers.Effect // the step's effects, copied: carrying them out never steps the same Table
}

// Run runs one seed and checks every invariant after every step.
func Run(o Options) Result {
	w := &world{o: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)),
		cur: map[string]*inst{}, parts: map[[2]string]peers.Time{}, calls: map[peers.CallID]*callRec{}}
	for _, n := range names {
		w.start(n)
	}
	w.at(1, w.act)
	for w.viol == nil && len(w.q) > 0 {
		it := heap.Pop(&w.q).(item)
		if it.at > runFor+quiesceFor {
			break
		}
		if it.at > w.now {
			w.now = it.at
		}
		if !w.settled && w.now >= runFor {
			w.settle()
		}
		it.fn()
	}
	if w.viol == nil {
		w.final()
	}
	r := Result{Seed: o.Seed, Steps: w.steps, Violation: w.viol, Trace: w.trace}
	for _, c := range w.calls {
		r.calls++
		if c.executed {
			r.executed++
		}
	}
	return r
}

func (w *world) at(t peers.Time, fn func()) {
	w.seq++
	heap.Push(&w.q, item{at: max(t, w.now), seq: w.seq, fn: fn})
}

func (w *world) fail(inv, format string, a ...any) {
	if w.viol == nil {
		w.viol = &Violation{Invariant: inv, Detail: fmt.Sprintf(format, a...), At: w.now}
		w.logf("VIOLATION %s", w.viol)
	}
}

func (w *world) logf(format string, a ...any) {
	if w.o.Trace {
		w.trace = append(w.trace, fmt.Sprintf("%5d ", w.now)+fmt.Sprintf(format, a...))
	}
}

func (w *world) delay() peers.Time {
	if w.rng.IntN(20) == 0 {
		return peers.Time(100 + w.rng.IntN(300))
	}
	return peers.Time(1 + w.rng.IntN(20))
}

// start runs a new incarnation of name.
func (w *world) start(name string) {
	in := &inst{name: name, serial: len(w.all), inc: w.rng.Uint64() | 1, ends: map[peers.LinkID]*end{},
		lastSeq: map[uint64]uint64{}, nextIn: peers.InboundBit}
	in.senderOffset = uint64(in.serial) * 8
	pool := 0
	if w.rng.IntN(4) != 0 {
		pool = 2
	}
	in.t = peers.New(peers.Config{Node: name, Inc: in.inc, PoolSize: pool, HeartbeatInterval: heartbeat,
		IdleTimeout: idleAfter, MaxQueued: 16, MaxPending: 32, Mutations: w.o.Mutations})
	w.all = append(w.all, in)
	w.cur[name] = in
	w.logf("start %s/%x pool %d", name, in.inc, pool)
	for _, n := range names {
		if o := w.cur[n]; o != nil && o != in {
			w.discover(o, peers.DiscoveryUp{Node: name, Inc: in.inc, PoolSize: pool})
		}
	}
	w.listAll(in) // what discovery lists, a crashed incarnation still in its TTL included
	w.listed = append(w.listed, in)
	var tick func()
	tick = func() {
		if in.dead {
			return
		}
		if w.frozen(in) {
			w.at(in.frozenUntil, tick)
			return
		}
		w.step(in, peers.Tick{Now: w.now})
		w.step(in, peers.IdleCheck{Now: w.now})
		w.at(w.now+tickEvery, tick)
	}
	w.at(w.now+peers.Time(w.rng.IntN(tickEvery)), tick)
}

func (in *inst) poolSize() int {
	// recorded in the Table's config; the simulator keeps no copy
	return in.t.PoolSize()
}

func (w *world) frozen(in *inst) bool { return in.frozenUntil > w.now }

// discover tells observer ev later, in order with what it was told
// before (a provider's watch is one ordered stream).
func (w *world) discover(obs *inst, ev peers.Event) {
	t := max(obs.discLast, w.now+peers.Time(w.rng.IntN(200)))
	obs.discLast = t
	obs.disc = append(obs.disc, discEv{at: t, ev: ev})
	if len(obs.disc) == 1 {
		w.at(t, func() { w.pumpDisc(obs) })
	}
}

func (w *world) pumpDisc(obs *inst) {
	if obs.dead || len(obs.disc) == 0 {
		return
	}
	d := obs.disc[0]
	if d.at > w.now || w.frozen(obs) {
		w.at(max(d.at, w.now+tickEvery), func() { w.pumpDisc(obs) })
		return
	}
	obs.disc = obs.disc[1:]
	w.step(obs, d.ev)
	if len(obs.disc) > 0 {
		w.at(obs.disc[0].at, func() { w.pumpDisc(obs) })
	}
}

func (w *world) kill(in *inst, graceful bool) {
	if graceful {
		w.step(in, peers.Stop{})
	}
	w.logf("kill %s/%x graceful=%v", in.name, in.inc, graceful)
	in.dead = true
	if w.cur[in.name] == in {
		delete(w.cur, in.name)
	}
	for _, c := range w.connsOf(in) {
		w.reset(c, !graceful)
	}
	down := func() {
		w.listed = slices.DeleteFunc(w.listed, func(x *inst) bool { return x == in })
		for _, n := range names {
			if o := w.cur[n]; o != nil {
				w.discover(o, peers.DiscoveryDown{Node: in.name, Inc: in.inc})
			}
		}
	}
	if graceful {
		down() // it deregistered
		return
	}
	// A crash: discovery lists it until its TTL runs out, beside a
	// successor started meanwhile.
	w.at(w.now+peers.Time(100+w.rng.IntN(700)), down)
}

// listAll tells obs every incarnation of the other names discovery
// lists, in a random order (one answer's members sorted by random IDs):
// a node's first view, or its watch's after a restart.
func (w *world) listAll(obs *inst) {
	var up []*inst
	for _, x := range w.listed {
		if x.name != obs.name {
			up = append(up, x)
		}
	}
	w.rng.Shuffle(len(up), func(i, j int) { up[i], up[j] = up[j], up[i] })
	for _, x := range up {
		w.discover(obs, peers.DiscoveryUp{Node: x.name, Inc: x.inc, PoolSize: x.poolSize()})
	}
}

func (w *world) connsOf(in *inst) []*conn {
	var cs []*conn
	for _, c := range w.conns {
		if c.e[0].in == in || c.e[1].in == in {
			cs = append(cs, c)
		}
	}
	return cs
}

// reset drops c: what is in flight is lost (if lose), and each live end
// learns later that it ended.
func (w *world) reset(c *conn, lose bool) {
	c.reset = c.reset || lose
	for i, e := range c.e {
		if lose {
			c.q[1-i] = nil
		}
		if e.closedR || e.in.dead {
			continue
		}
		e := e
		var fn func()
		fn = func() {
			if e.closedR || e.in.dead {
				return
			}
			if w.frozen(e.in) {
				w.at(e.in.frozenUntil, fn)
				return
			}
			e.closedR, e.wclosed = true, true
			delete(e.in.ends, e.link)
			if e.accepted || i == 0 {
				w.step(e.in, peers.LinkClosed{Link: e.link, Lost: true})
			}
		}
		w.at(w.now+w.delay(), fn)
	}
}

func (w *world) parted(a, b string) bool {
	if a > b {
		a, b = b, a
	}
	return w.parts[[2]string{a, b}] > w.now
}

// step steps in's Table, carries out its effects and checks invariants.
func (w *world) step(in *inst, ev peers.Event) {
	if in.dead || w.viol != nil {
		return
	}
	w.steps++
	if w.o.Trace {
		w.logf("%s/%x <- %T%+v", in.name, in.inc, ev, ev)
	}
	w.fx = append(w.fx[:0], in.t.Step(ev)...)
	for _, e := range w.fx {
		if w.o.Trace {
			w.logf("    -> %s", e)
		}
		w.effect(in, e)
	}
	if err := in.t.Check(); err != nil {
		w.fail("bound", "%s/%x: %v", in.name, in.inc, err)
	}
}

func (w *world) effect(in *inst, e peers.Effect) {
	switch e.Kind {
	case peers.EffWrite:
		end := in.ends[e.Link]
		if end == nil || end.wclosed {
			return
		}
		c, side := w.connOf(end)
		if e.Frame.Kind == peers.FrameReply {
			if to := c.e[1-side].in; to.inc != e.Frame.CallerInc {
				w.fail("stale-reply", "%s/%x wrote the reply to c%d (caller %x) on a link to %s/%x",
					in.name, in.inc, e.Frame.Call, e.Frame.CallerInc, to.name, to.inc)
			}
		}
		w.push(c, 1-side, msg{f: e.Frame})
	case peers.EffClose:
		end := in.ends[e.Link]
		if end == nil {
			return
		}
		c, side := w.connOf(end)
		if !end.wclosed {
			end.wclosed = true
			w.push(c, 1-side, msg{eof: true})
		}
		if !e.Half {
			end.closedR = true
			delete(in.ends, e.Link)
		}
	case peers.EffDial:
		w.dial(in, e)
	case peers.EffFailCall:
		w.ended(in, e.Call, e.Class)
	case peers.EffDeliver:
		w.deliver(in, e)
	case peers.EffLateReply:
		if r := w.calls[e.Call]; r != nil && r.caller == in && !r.ended {
			w.fail("once", "c%d: reply counted late while still pending", e.Call)
		}
	}
}

func (w *world) connOf(e *end) (*conn, int) { return e.c, e.side }

func (w *world) ended(in *inst, id peers.CallID, class peers.Class) {
	r := w.calls[id]
	if r == nil || r.caller != in {
		w.fail("once", "c%d ended on %s/%x, which did not issue it", id, in.name, in.inc)
		return
	}
	if r.ended {
		w.fail("once", "c%d ended twice (%s, then %s)", id, r.class, class)
		return
	}
	r.ended, r.class = true, class
	if class == peers.Executed && !r.executed {
		w.fail("class", "c%d classed executed but its callee never received it", id)
	}
	if class == peers.NotExecuted && r.executed {
		w.fail("class", "c%d classed not executed but its callee executed it", id)
	}
}

func (w *world) deliver(in *inst, e peers.Effect) {
	f := e.Frame
	switch f.Kind {
	case peers.FrameSend, peers.FrameCall:
		if last := in.lastSeq[f.Sender]; f.Seq <= last {
			w.fail("order", "%s/%x delivered #%d of sender s%d after #%d", in.name, in.inc, f.Seq, f.Sender, last)
		}
		in.lastSeq[f.Sender] = f.Seq
		if f.Kind == peers.FrameSend {
			return
		}
		r := w.calls[f.Call]
		r.executed = true
		if r.ended && r.class == peers.NotExecuted {
			w.fail("class", "c%d executed after it was classed not executed", f.Call)
		}
		caller, link := r.caller, e.Link
		var fn func()
		fn = func() {
			if in.dead {
				return
			}
			if w.frozen(in) {
				w.at(in.frozenUntil, fn)
				return
			}
			w.step(in, peers.ReplySend{Call: f.Call, Node: caller.name, Inc: caller.inc, Link: link})
		}
		d := peers.Time(w.rng.IntN(30))
		if w.rng.IntN(8) == 0 {
			d = peers.Time(200 + w.rng.IntN(600))
		}
		w.at(w.now+d, fn)
	case peers.FrameReply:
		w.ended(in, f.Call, peers.Executed)
	}
}

func (w *world) push(c *conn, side int, m msg) {
	if c.reset {
		return
	}
	m.at = max(c.last[side], w.now+w.delay())
	c.last[side] = m.at
	c.q[side] = append(c.q[side], m)
	if !c.pumping[side] {
		c.pumping[side] = true
		w.at(m.at, func() { w.pump(c, side) })
	}
}

// pump delivers the head of what travels toward c.e[side].
func (w *world) pump(c *conn, side int) {
	r := c.e[side]
	again := func(t peers.Time) { w.at(t, func() { w.pump(c, side) }) }
	if len(c.q[side]) == 0 || r.closedR || r.in.dead {
		c.q[side], c.pumping[side] = nil, false
		return
	}
	m := c.q[side][0]
	switch {
	case m.at > w.now:
		again(m.at)
		return
	case w.frozen(r.in):
		again(r.in.frozenUntil)
		return
	case w.parted(c.e[0].in.name, c.e[1].in.name):
		again(w.now + 50)
		return
	}
	if side == 1 && !r.accepted {
		r.accepted = true
		w.step(r.in, peers.Accepted{Link: r.link})
	}
	if !m.eof && !r.in.t.Reading(r.link) && !r.closedR {
		again(w.now + 10) // held by a fence: the reader waits
		return
	}
	c.q[side] = c.q[side][1:]
	if !r.closedR {
		switch {
		case m.eof:
			r.closedR = true
			delete(r.in.ends, r.link)
			if !r.wclosed {
				r.wclosed = true
				w.push(c, 1-side, msg{eof: true})
			}
			w.step(r.in, peers.LinkClosed{Link: r.link})
		case m.f.Kind == peers.FrameHello || m.f.Kind == peers.FrameWelcome:
			w.step(r.in, peers.HelloRead{Link: r.link, Hello: *m.f.Hello})
		default:
			w.step(r.in, peers.FrameRead{Link: r.link, Frame: m.f})
		}
	}
	if len(c.q[side]) > 0 {
		again(c.q[side][0].at)
	} else {
		c.pumping[side] = false
	}
}

func (w *world) dial(in *inst, e peers.Effect) {
	var fn func()
	fn = func() {
		if in.dead {
			return
		}
		if w.frozen(in) {
			w.at(in.frozenUntil, fn)
			return
		}
		to := w.cur[e.Node]
		if to == nil || w.parted(in.name, e.Node) || w.rng.IntN(50) == 0 {
			w.step(in, peers.DialDone{Link: e.Link, Failed: true})
			return
		}
		to.nextIn++
		c := &conn{}
		c.e = [2]*end{{c: c, in: in, link: e.Link}, {c: c, side: 1, in: to, link: to.nextIn}}
		in.ends[e.Link] = c.e[0]
		to.ends[to.nextIn] = c.e[1]
		w.conns = append(w.conns, c)
		w.step(in, peers.DialDone{Link: e.Link})
	}
	w.at(w.now+w.delay(), fn)
}

// act is the scheduler's own move: traffic or a fault.
func (w *world) act() {
	if w.settled {
		return
	}
	defer w.at(w.now+peers.Time(1+w.rng.IntN(8)), w.act)
	var live []*inst
	for _, n := range names {
		if in := w.cur[n]; in != nil {
			live = append(live, in)
		}
	}
	x := w.rng.IntN(1000)
	if len(live) == 0 || x >= 990 {
		w.restart()
		return
	}
	in := live[w.rng.IntN(len(live))]
	if w.frozen(in) {
		return
	}
	to := names[w.rng.IntN(len(names))]
	if to == in.name {
		return
	}
	switch {
	case x < 700:
		inc, ok := in.t.Current(to)
		if !ok || w.rng.IntN(20) == 0 {
			inc = w.anyInc(to)
		}
		k := w.rng.IntN(3)
		in.seq[k]++
		sender, seq := in.senderOffset+uint64(k), in.seq[k]
		if x < 250 {
			w.nextCID++
			w.calls[w.nextCID] = &callRec{caller: in, to: to, inc: inc}
			w.step(in, peers.CallIssued{Call: w.nextCID, Sender: sender, Seq: seq, Node: to, Inc: inc})
		} else {
			w.step(in, peers.Send{Sender: sender, Seq: seq, Node: to, Inc: inc})
		}
	case x < 780:
		w.step(in, peers.BuildPool{Node: to})
	case x < 800:
		w.step(in, peers.TeardownPool{Node: to})
	case x < 810 && len(live) > 1:
		w.kill(in, false)
	case x < 815 && len(live) > 1:
		w.kill(in, true)
	case x < 830:
		in.frozenUntil = w.now + peers.Time(50+w.rng.IntN(550))
		w.logf("freeze %s/%x until %d", in.name, in.inc, in.frozenUntil)
	case x < 845:
		if cs := w.connsOf(in); len(cs) > 0 {
			c := cs[w.rng.IntN(len(cs))]
			w.logf("drop %s L%d", in.name, c.e[0].link)
			w.reset(c, true)
		}
	case x < 852:
		a, b := min(in.name, to), max(in.name, to)
		w.parts[[2]string{a, b}] = w.now + peers.Time(100+w.rng.IntN(700))
		w.logf("partition %s-%s until %d", a, b, w.parts[[2]string{a, b}])
	case x < 858:
		w.logf("relist at %s", in.name)
		w.listAll(in)
	case x < 875:
		// A caller gives up on its latest pending call (its ctx ended).
		for id := w.nextCID; id > 0 && id+20 > w.nextCID; id-- {
			if r := w.calls[id]; r != nil && r.caller == in && !r.ended {
				w.logf("cancel c%d at %s", id, in.name)
				w.step(in, peers.CallCancelled{Call: id, Node: r.to, Inc: r.inc})
				break
			}
		}
	}
}

func (w *world) restart() {
	for _, n := range names {
		if w.cur[n] == nil {
			w.start(n)
			return
		}
	}
}

// anyInc is some incarnation name ever had (a stale PID).
func (w *world) anyInc(name string) uint64 {
	var incs []uint64
	for _, in := range w.all {
		if in.name == name {
			incs = append(incs, in.inc)
		}
	}
	return incs[w.rng.IntN(len(incs))]
}

// settle ends the faults: partitions heal, frozen nodes thaw, no new
// traffic; what remains must end within the quiesce time.
func (w *world) settle() {
	w.settled = true
	clear(w.parts)
	for _, in := range w.all {
		in.frozenUntil = 0
	}
	w.logf("settle")
}

// final checks what must hold once everything settled: every call of a
// live caller ended, and no Table keeps a peer that is dead.
func (w *world) final() {
	ids := make([]peers.CallID, 0, len(w.calls))
	for id := range w.calls {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if r := w.calls[id]; !r.ended && !r.caller.dead {
			w.fail("never-ended", "c%d of %s/%x never ended", id, r.caller.name, r.caller.inc)
			return
		}
	}
	for _, in := range w.all {
		if in.dead {
			continue
		}
		for _, o := range w.all {
			if o.dead && o.name != in.name && in.t.PeerState(o.name, o.inc) != peers.PeerGone {
				w.fail("pinned", "%s/%x still holds %s/%x, which is dead", in.name, in.inc, o.name, o.inc)
				return
			}
		}
	}
}
