package observer

import (
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
)

const (
	// maxSeriesPoints bounds the points kept per line (Options.SeriesPoints).
	maxSeriesPoints = 3600
)

// Series is the /api/series answer: the node's main rates over the last
// Options.SeriesPoints samples, one every Options.SeriesEvery, sampled
// from the moment Handler was called whether or not anyone watches.
type Series struct {
	EveryMs int64 `json:"everyMs"`
	// Points is how many samples are kept (Options.SeriesPoints): a line
	// has at most Points-1 values, the first sample only starting the rates.
	Points int `json:"points"`
	// AtMs are the samples' times (Unix milliseconds), oldest first; every
	// line has one value per entry.
	AtMs   []int64 `json:"atMs"`
	Charts []Chart `json:"charts"`
}

// Chart is a few lines drawn on one chart.
type Chart struct {
	Name  string `json:"name"`  // stable, for scripts: "messages", "calls", "failures", "pending"
	Title string `json:"title"` // for people
	Unit  string `json:"unit"`  // "/s" for rates; "" for a level
	Lines []Line `json:"lines"`
}

// Line is one series: a rate (per second over the interval before each
// sample) or a level (the value at the sample).
type Line struct {
	Label  string    `json:"label"`
	Values []float64 `json:"values"`
}

// point is one sample of the node's counters.
type point struct {
	at                        time.Time
	sent, received, dead      uint64 // messages to and from other nodes; dead letters
	calls, replies            uint64 // calls and requests made to other nodes; answered for them
	failed                    [3]uint64
	pending, inflight, queued int64 // levels
}

// chartSpec says how a chart's lines are read from points.
type chartSpec struct {
	name, title, unit string
	lines             []lineSpec
}

type lineSpec struct {
	label string
	value func(p *point) float64 // a counter (made a rate) or a level
}

func counterOf(f func(p *point) uint64) func(p *point) float64 {
	return func(p *point) float64 { return float64(f(p)) }
}

// charts are what the page draws; a chart whose unit is "/s" shows its
// counters as rates.
var charts = []chartSpec{
	{"messages", "Messages to and from other nodes", "/s", []lineSpec{
		{"sent", counterOf(func(p *point) uint64 { return p.sent })},
		{"received", counterOf(func(p *point) uint64 { return p.received })},
		{"dead letters", counterOf(func(p *point) uint64 { return p.dead })},
	}},
	{"calls", "Calls and requests to and from other nodes", "/s", []lineSpec{
		{"made", counterOf(func(p *point) uint64 { return p.calls })},
		{"answered", counterOf(func(p *point) uint64 { return p.replies })},
	}},
	{"failures", "Failed calls and requests made here, by outcome", "/s", []lineSpec{
		{actor.NotExecuted.Label(), counterOf(func(p *point) uint64 { return p.failed[actor.NotExecuted] })},
		{actor.MayHaveExecuted.Label(), counterOf(func(p *point) uint64 { return p.failed[actor.MayHaveExecuted] })},
		{actor.Executed.Label(), counterOf(func(p *point) uint64 { return p.failed[actor.Executed] })},
	}},
	{"pending", "Waiting now", "", []lineSpec{
		{"calls pending here", func(p *point) float64 { return float64(p.pending) }},
		{"inbound calls running", func(p *point) float64 { return float64(p.inflight) }},
		{"pool queues", func(p *point) float64 { return float64(p.queued) }},
	}},
}

// sampler keeps the last points of a node's counters, one every period,
// on the System's clock. It owns no goroutine: each sample schedules the
// next with Clock.AfterFunc, and the System's stop hook ends it, waiting
// for a sample in progress.
type sampler struct {
	clock  actor.Clock
	every  time.Duration
	read   func() point
	closed func() bool // the System is stopping: schedule nothing more

	wg sync.WaitGroup // the scheduled or running sample

	mu      sync.Mutex // protects following
	ring    []point    // oldest first once full, from head
	head    int
	size    int
	cancel  func() bool // the scheduled sample's stop
	stopped bool
}

func newSampler(clock actor.Clock, every time.Duration, size int, read func() point, closed func() bool) *sampler {
	s := &sampler{clock: clock, every: every, read: read, closed: closed, size: size, ring: make([]point, 0, min(size, 64))}
	s.mu.Lock()
	s.add(read())
	s.schedule()
	s.mu.Unlock()
	return s
}

// schedule arms the next sample. s.mu is held.
func (s *sampler) schedule() {
	s.wg.Add(1)
	s.cancel = s.clock.AfterFunc(s.every, s.tick)
}

func (s *sampler) tick() {
	defer s.wg.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.add(s.read())
	if s.closed() {
		s.stopped = true
		return
	}
	s.schedule()
}

// add appends p, overwriting the oldest once the ring is full. s.mu is held.
func (s *sampler) add(p point) {
	if len(s.ring) < s.size {
		s.ring = append(s.ring, p)
		return
	}
	s.ring[s.head] = p
	s.head = (s.head + 1) % s.size
}

// stop ends the sampling and waits for a sample in progress. Idempotent.
func (s *sampler) stop() {
	s.mu.Lock()
	if !s.stopped {
		s.stopped = true
		if s.cancel() {
			s.wg.Done() // it will not run
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// series turns the points into charts: the first point only starts the
// rates, so n points give n-1 values per line.
func (s *sampler) series() Series {
	s.mu.Lock()
	pts := make([]point, 0, len(s.ring))
	pts = append(pts, s.ring[s.head:]...)
	pts = append(pts, s.ring[:s.head]...)
	s.mu.Unlock()

	out := Series{EveryMs: s.every.Milliseconds(), Points: s.size, AtMs: []int64{}, Charts: make([]Chart, len(charts))}
	n := max(len(pts)-1, 0)
	for i := 1; i < len(pts); i++ {
		out.AtMs = append(out.AtMs, pts[i].at.UnixMilli())
	}
	for c, spec := range charts {
		ch := Chart{Name: spec.name, Title: spec.title, Unit: spec.unit, Lines: make([]Line, len(spec.lines))}
		for l, ls := range spec.lines {
			vals := make([]float64, n)
			for i := 1; i < len(pts); i++ {
				v := ls.value(&pts[i])
				if spec.unit == "/s" {
					v = 0
					if dt := pts[i].at.Sub(pts[i-1].at).Seconds(); dt > 0 {
						v = max(ls.value(&pts[i])-ls.value(&pts[i-1]), 0) / dt
					}
				}
				vals[i-1] = v
			}
			ch.Lines[l] = Line{Label: ls.label, Values: vals}
		}
		out.Charts[c] = ch
	}
	return out
}

// readPoint samples node's counters (and the queues of its pools, when
// set): atomics and a lock or two per peer, no walk over the actors.
func readPoint(node *remote.Node, pools *proxypool.Manager, clock actor.Clock) point {
	sys := node.System()
	st := node.Stats()
	f := actorhooks.FailedOutcomes(sys)
	var dead uint64
	for _, n := range actorhooks.Counters(sys).DeadLetters {
		dead += n
	}
	p := point{
		at:   clock.Now(),
		sent: st.SendsNative + st.SendsPooled + st.CallsNative + st.CallsPooled, received: st.Received, dead: dead,
		calls: st.CallsNative + st.CallsPooled, replies: st.RepliesNative + st.RepliesPooled,
		failed: f, pending: int64(st.Pending), inflight: st.Inflight,
	}
	if pools != nil {
		for _, peer := range node.Peers() {
			p.queued += int64(pools.Stats(peer.Node).QueueDepth)
		}
	}
	return p
}
