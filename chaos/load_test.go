//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"google.golang.org/protobuf/proto"
)

// flood is W writer goroutines, each with its own sender handle, sending
// testpb.Echo{N: 1, 2, 3...} to an ordered sink as fast as the runtime
// takes them (or one per pace).
type flood struct {
	stop    atomic.Bool
	wg      sync.WaitGroup
	running atomic.Int64
	seqs    []atomic.Int64 // sends made, per writer
}

// startFlood starts writers; writer i sends to the sink to(i) names.
// They are halted when the test ends, if the test did not halt them.
func startFlood(t testing.TB, sys *actor.System, writers int, pace time.Duration, to func(i int) (node, name string)) *flood {
	f := &flood{seqs: make([]atomic.Int64, writers)}
	t.Cleanup(func() { f.halt(30 * time.Second) }) // before the nodes stop
	for i := range writers {
		f.wg.Add(1)
		f.running.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.running.Add(-1)
			h := sys.NewSender()
			node, name := to(i)
			if pace > 0 {
				time.Sleep(time.Duration(i) * pace / time.Duration(writers)) // spread the start
			}
			for !f.stop.Load() {
				seq := f.seqs[i].Load() + 1
				h.SendNamed(node, name, &testpb.Echo{N: seq})
				f.seqs[i].Store(seq)
				if pace > 0 {
					time.Sleep(pace)
				}
			}
		}()
	}
	return f
}

// attempted is the number of sends made so far.
func (f *flood) attempted() int64 {
	var n int64
	for i := range f.seqs {
		n += f.seqs[i].Load()
	}
	return n
}

// halt stops the writers and waits up to timeout; it returns how many
// were still blocked in a send after it (hung writers).
func (f *flood) halt(timeout time.Duration) int64 {
	f.stop.Store(true)
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
		return 0
	case <-time.After(timeout):
		return f.running.Load()
	}
}

// call is one finished call.
type call struct {
	err   error
	reply proto.Message
	start time.Time
	end   time.Time
}

// startCalls makes n concurrent calls, each from its own sender handle,
// with no deadline; results arrive on the channel as they end.
func startCalls(sys *actor.System, n int, node, fn string, arg func(i int) proto.Message) <-chan call {
	out := make(chan call, n)
	for i := range n {
		go func() {
			start := time.Now()
			v, err := sys.NewSender().Call(context.Background(), node, fn, arg(i))
			out <- call{err: err, reply: v, start: start, end: time.Now()}
		}()
	}
	return out
}

// collect receives n calls, giving up after timeout: the rest are hung.
func collect(ch <-chan call, n int, timeout time.Duration) (got []call, hung int) {
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case c := <-ch:
			got = append(got, c)
		case <-deadline:
			return got, n - len(got)
		}
	}
	return got, 0
}

// classOf names an error's class for the figures.
func classOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, actor.ErrNodeDown):
		return "node_down"
	case errors.Is(err, actor.ErrNotSent):
		return "not_sent"
	case errors.Is(err, actor.ErrUnreachable):
		return "unreachable"
	case errors.Is(err, actor.ErrDraining):
		return "draining"
	case errors.Is(err, actor.ErrNoProcess):
		return "no_process"
	case errors.Is(err, actor.ErrOverloaded):
		return "overloaded"
	case errors.Is(err, actor.ErrStopped):
		return "stopped"
	}
	return "other"
}

// classes counts errors by class and by outcome.
type classes struct {
	mu      sync.Mutex // protects following
	byClass map[string]int
	byOut   map[actor.Execution]int
	wrong   []string // errors whose outcome contradicts their class
}

func newClasses() *classes {
	return &classes{byClass: map[string]int{}, byOut: map[actor.Execution]int{}}
}

// add records err; a class whose outcome is not the documented one is
// noted as wrong.
func (c *classes) add(err error) {
	cl, out := classOf(err), actor.Outcome(err)
	want := map[string]actor.Execution{
		"ok": actor.Executed, "node_down": actor.MayHaveExecuted, "not_sent": actor.NotExecuted,
		"unreachable": actor.NotExecuted, "draining": actor.NotExecuted, "overloaded": actor.NotExecuted,
		"stopped": actor.NotExecuted,
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byClass[cl]++
	c.byOut[out]++
	if w, ok := want[cl]; (ok && w != out) || cl == "other" {
		c.wrong = append(c.wrong, fmt.Sprintf("%s/%s: %v", cl, out, err))
	}
}

func (c *classes) get(cl string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byClass[cl]
}

func (c *classes) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.byClass))
	for k := range c.byClass {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		if s != "" {
			s += ","
		}
		s += fmt.Sprintf("%s:%d", k, c.byClass[k])
	}
	return s
}

// prober calls echo on a node every few milliseconds from its own sender
// and keeps the figures: a node that must keep serving.
type prober struct {
	once       sync.Once
	ok, failed atomic.Int64
	maxLat     atomic.Int64 // ns
	lastErr    atomic.Value // error
	stop       chan struct{}
	done       chan struct{}
}

func startProber(t testing.TB, sys *actor.System, node string, every time.Duration) *prober {
	p := &prober{stop: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(p.halt) // before the nodes stop, if the test did not
	h := sys.NewSender()
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			start := time.Now()
			_, err := h.Call(ctx, node, "echo", &testpb.Echo{Text: "probe"})
			cancel()
			if lat := time.Since(start).Nanoseconds(); lat > p.maxLat.Load() {
				p.maxLat.Store(lat)
			}
			if err != nil {
				p.failed.Add(1)
				p.lastErr.Store(err)
			} else {
				p.ok.Add(1)
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// halt stops the prober and waits for it. Idempotent.
func (p *prober) halt() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

func (p *prober) err() error {
	e, _ := p.lastErr.Load().(error)
	return e
}
