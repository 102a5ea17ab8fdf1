package mrnode

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/pacer"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
	"github.com/mailroom-go/mailroom/bench/internal/stats"
	"github.com/mailroom-go/mailroom/bench/internal/tally"
	"google.golang.org/protobuf/proto"
)

// caller is what performs an operation: a writer actor's Context, or the
// System itself (its root handle) for goroutine writers.
type caller interface {
	SendNamed(node, name string, msg any)
	Cast(node, fn string, arg proto.Message)
	Call(ctx context.Context, node, fn string, arg proto.Message) (proto.Message, error)
}

var (
	_ caller = (*actor.Context)(nil)
	_ caller = (*actor.System)(nil)
)

// driver is what every writer of a sender shares.
type driver struct {
	op      string
	payload proto.Message
	names   []string     // the receiver each writer sends to
	wheel   *pacer.Wheel // paced points only
	calls   *tally.Tally // calls returned, by writer
	lat     stats.Hist   // call latency
	errs    atomic.Int64 // calls that failed
	first   atomic.Value // the first call error, for the log
}

// run starts a phase on a writer.
type run struct {
	n     int
	pace  time.Duration
	first time.Time
}

// tick: the writer's next paced operation is due.
type tick struct{}

// writer is one writer actor.
type writer struct {
	i    int
	d    *driver
	plan pacer.Plan
}

func (w *writer) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case run:
		if m.pace == 0 {
			for range m.n {
				w.d.do(c, w.i)
			}
			return
		}
		w.plan = pacer.Plan{Left: m.n, Due: m.first, Pace: m.pace}
		w.d.wheel.At(m.first, int32(w.i))
	case tick:
		w.d.do(c, w.i)
		if next, ok := w.plan.Next(time.Now()); ok {
			w.d.wheel.At(next, int32(w.i))
		}
	}
}

// do performs one operation of writer i through c.
func (d *driver) do(c caller, i int) {
	switch d.op {
	case spec.OpSend:
		c.SendNamed(nodeapi.ReceiverNode, d.names[i], d.payload)
	case spec.OpCast:
		c.Cast(nodeapi.ReceiverNode, nodeapi.FnCast, d.payload)
	case spec.OpCall:
		t0 := time.Now()
		_, err := c.Call(context.Background(), nodeapi.ReceiverNode, nodeapi.FnCall, d.payload)
		d.lat.Record(time.Since(t0))
		if err != nil {
			d.errs.Add(1)
			d.first.CompareAndSwap("", err.Error())
		}
		d.calls.Hit(i)
	}
}

// goroutines runs the goroutine writers' phases; wg owns them.
type goroutines struct {
	sys *actor.System
	d   *driver
	n   int
	wg  sync.WaitGroup
}

// start starts one goroutine per writer, each doing perWriter operations
// through the system's root handle, as code outside any actor does.
func (g *goroutines) start(perWriter int) {
	for i := range g.n {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for range perWriter {
				g.d.do(g.sys, i)
			}
		}()
	}
}

// RunSender runs the sender role until the controller says quit.
func RunSender(cfg nodeapi.Config) error {
	s := cfg.Spec
	b, err := start(nodeapi.SenderNode, nodeapi.ReceiverNode, s, []string{nodeapi.ReceiverNode + "=" + cfg.Peer})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = b.node.Connect(ctx, nodeapi.ReceiverNode, cfg.Peer)
	cancel()
	if err != nil {
		return fmt.Errorf("mrnode: connect to the receiver: %w", err)
	}
	baseRSS := nodeapi.RSS()
	payload, err := benchpb.Payload(s.Payload)
	if err != nil {
		return err
	}
	d := &driver{op: s.Op, payload: payload, names: make([]string, s.Writers), calls: tally.New(s.Writers)}
	d.first.Store("")
	for i := range s.Writers {
		d.names[i] = nodeapi.TargetOf(s, i)
	}
	g := &goroutines{sys: b.sys, d: d, n: s.Writers}
	var writers []actor.PID
	if s.WriterKind == spec.KindActor {
		writers = make([]actor.PID, s.Writers)
		for i := range s.Writers {
			w := &writer{i: i, d: d}
			if writers[i], err = b.sys.Spawn(actor.PropsFromProducer(func() actor.Actor { return w })); err != nil {
				return err
			}
		}
	}
	stopWheel := func() {}
	if s.Paced() {
		d.wheel, err = pacer.New(time.Millisecond, 2*s.Pace+5*time.Second, func(id int32) { b.sys.Send(writers[id], tick{}) })
		if err != nil {
			return err
		}
		wctx, wcancel := context.WithCancel(context.Background())
		go d.wheel.Run(wctx)
		stopWheel = wcancel
	}
	defer stopWheel()
	h := map[string]ctl.Handler{
		nodeapi.CmdArm: func(arg json.RawMessage) (any, error) {
			var a nodeapi.Arm
			if err := nodeapi.Decode(arg, &a); err != nil {
				return nil, err
			}
			d.calls.Arm(a.PerWriter, 0)
			d.lat.Reset()
			d.errs.Store(0)
			b.arm()
			return nil, nil
		},
		nodeapi.CmdStart: func(arg json.RawMessage) (any, error) {
			var a nodeapi.Start
			if err := nodeapi.Decode(arg, &a); err != nil {
				return nil, err
			}
			t0 := time.Now()
			if s.WriterKind == spec.KindGoroutine {
				g.start(a.PerWriter)
				return nodeapi.Started{StartNs: t0.UnixNano()}, nil
			}
			pace := time.Duration(a.PaceNs)
			for i, pid := range writers {
				r := run{n: a.PerWriter, pace: pace}
				if pace > 0 {
					r.first = pacer.FirstDue(t0, i, len(writers), pace)
				}
				b.sys.Send(pid, r)
			}
			return nodeapi.Started{StartNs: t0.UnixNano()}, nil
		},
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) {
			return nodeapi.Status{Connected: b.connected(), Tally: d.calls.Read(), Errors: d.errs.Load() + b.failures()}, nil
		},
		nodeapi.CmdStats: func(json.RawMessage) (any, error) {
			var st nodeapi.Stats
			b.stats(&st)
			st.Errors = d.errs.Load() + b.failures()
			st.Executed = d.calls.Read().Count
			st.LatP50Ns, st.LatP99Ns, st.LatMaxNs = int64(d.lat.Quantile(0.5)), int64(d.lat.Quantile(0.99)), int64(d.lat.Max())
			st.Note = d.first.Load().(string)
			st.Mallocs = nodeapi.Mallocs()
			return st, nil
		},
	}
	nodeapi.AddProfiling(h)
	if err := ctl.Serve(nodeapi.Ready{Addr: b.node.Addr(), BaseRSS: baseRSS}, h); err != nil {
		return err
	}
	stopWheel()
	err = b.stop()
	g.wg.Wait() // the system's stop ends whatever a goroutine writer still waits for
	return err
}
