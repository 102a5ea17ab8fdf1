package panode

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/pacer"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
	"github.com/mailroom-go/mailroom/bench/internal/stats"
	"github.com/mailroom-go/mailroom/bench/internal/tally"
	"google.golang.org/protobuf/proto"
)

// callTimeout bounds one RequestFuture: protoactor requires a timeout.
// Long enough never to fire in a healthy point; a fired one is an error.
const callTimeout = 2 * time.Minute

// caller is what performs an operation: a writer actor's Context, or the
// system's root context for goroutine writers.
type caller interface {
	Send(pid *actor.PID, msg any)
	RequestFuture(pid *actor.PID, msg any, timeout time.Duration) *actor.Future
}

var (
	_ caller = actor.Context(nil)
	_ caller = (*actor.RootContext)(nil)
)

// driver is what every writer of a sender shares.
type driver struct {
	op      string
	payload proto.Message
	targets []*actor.PID                     // receivers, by writer
	result  func(*actor.Future) (any, error) // a call's outcome (Remote.Result)
	wheel   *pacer.Wheel
	calls   *tally.Tally
	lat     stats.Hist
	errs    atomic.Int64
	first   atomic.Value
}

type run struct {
	n     int
	pace  time.Duration
	first time.Time
}

type tick struct{}

type writer struct {
	i    int
	d    *driver
	plan pacer.Plan
}

func (w *writer) Receive(c actor.Context) {
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

// do performs one operation of writer i. Cast has no protoactor
// equivalent: it is a send to the counting actor.
func (d *driver) do(c caller, i int) {
	switch d.op {
	case spec.OpSend, spec.OpCast:
		c.Send(d.targets[i], d.payload)
	case spec.OpCall:
		t0 := time.Now()
		_, err := d.result(c.RequestFuture(d.targets[i], d.payload, callTimeout))
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
	root *actor.RootContext
	d    *driver
	n    int
	wg   sync.WaitGroup
}

// start starts one goroutine per writer, each doing perWriter operations
// through the root context, as code outside any actor does.
func (g *goroutines) start(perWriter int) {
	for i := range g.n {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for range perWriter {
				g.d.do(g.root, i)
			}
		}()
	}
}

// RunSender runs the sender role on protoactor-go's remote until the
// controller says quit.
func RunSender(cfg nodeapi.Config) error { return ServeSender(cfg, start()) }

// ServeSender runs the sender role on r until the controller says quit,
// then stops r: one writer per writer, an actor or a goroutine on the
// root context, each addressing its receiver by r.Target.
func ServeSender(cfg nodeapi.Config, r Remote) (err error) {
	s := cfg.Spec
	sys := r.Actors()
	baseRSS := nodeapi.RSS()
	g := &goroutines{root: sys.Root, n: s.Writers}
	stopWheel := func() {}
	defer func() {
		stopWheel()
		err = errors.Join(err, r.Stop())
		g.wg.Wait() // after the stop: a request still waiting ends with it, or its timeout at worst
	}()
	payload, err := benchpb.Payload(s.Payload)
	if err != nil {
		return err
	}
	d := &driver{op: s.Op, payload: payload, targets: make([]*actor.PID, s.Writers), result: r.Result, calls: tally.New(s.Writers)}
	d.first.Store("")
	g.d = d
	var writers []*actor.PID
	for i := range s.Writers {
		d.targets[i] = r.Target(cfg.Peer, nodeapi.TargetOf(s, i))
		if s.WriterKind == spec.KindActor {
			w := &writer{i: i, d: d}
			writers = append(writers, sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return w })))
		}
	}
	if s.Paced() {
		d.wheel, err = pacer.New(time.Millisecond, 2*s.Pace+5*time.Second, func(id int32) { sys.Root.Send(writers[id], tick{}) })
		if err != nil {
			return err
		}
		wctx, wcancel := context.WithCancel(context.Background())
		go d.wheel.Run(wctx)
		stopWheel = wcancel
	}
	h := map[string]ctl.Handler{
		nodeapi.CmdArm: func(arg json.RawMessage) (any, error) {
			var a nodeapi.Arm
			if err := nodeapi.Decode(arg, &a); err != nil {
				return nil, err
			}
			d.calls.Arm(a.PerWriter, 0)
			d.lat.Reset()
			d.errs.Store(0)
			r.Arm()
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
				rn := run{n: a.PerWriter, pace: pace}
				if pace > 0 {
					rn.first = pacer.FirstDue(t0, i, len(writers), pace)
				}
				sys.Root.Send(pid, rn)
			}
			return nodeapi.Started{StartNs: t0.UnixNano()}, nil
		},
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) {
			return nodeapi.Status{Connected: r.Connected(), Tally: d.calls.Read(), Errors: d.errs.Load() + r.Failures()}, nil
		},
		nodeapi.CmdStats: func(json.RawMessage) (any, error) {
			st := nodeapi.Stats{Errors: d.errs.Load() + r.Failures(), Executed: d.calls.Read().Count}
			r.Stats(&st)
			st.LatP50Ns, st.LatP99Ns, st.LatMaxNs = int64(d.lat.Quantile(0.5)), int64(d.lat.Quantile(0.99)), int64(d.lat.Max())
			st.Note = d.first.Load().(string)
			st.Mallocs = nodeapi.Mallocs()
			return st, nil
		},
	}
	nodeapi.AddProfiling(h)
	return ctl.Serve(nodeapi.Ready{Addr: r.Addr(), BaseRSS: baseRSS}, h)
}
