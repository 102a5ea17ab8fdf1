package mrnode

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/tally"
	"google.golang.org/protobuf/proto"
)

// counter is a receiver actor: it counts what it is sent, as writer i's
// when each writer has its own receiver, else against the total.
type counter struct {
	i   int
	any bool
	t   *tally.Tally
}

func (r *counter) Receive(c *actor.Context) {
	if _, ok := c.Message().(proto.Message); ok {
		if r.any {
			r.t.HitAny()
		} else {
			r.t.Hit(r.i)
		}
	}
}

// RunReceiver runs the receiver role until the controller says quit.
func RunReceiver(cfg nodeapi.Config) error {
	s := cfg.Spec
	b, err := start(nodeapi.ReceiverNode, nodeapi.SenderNode, s, nil)
	if err != nil {
		return err
	}
	baseRSS := nodeapi.RSS()
	t := tally.New(s.Writers)
	var executed, castsDone atomic.Int64
	ack := &benchpb.Ack{N: 1}
	if err := b.sys.Register(nodeapi.FnCast, func(context.Context, proto.Message) (proto.Message, error) {
		castsDone.Add(1)
		t.HitAny()
		return nil, nil
	}); err != nil {
		return err
	}
	if err := b.sys.Register(nodeapi.FnCall, func(context.Context, proto.Message) (proto.Message, error) {
		executed.Add(1)
		return ack, nil
	}); err != nil {
		return err
	}
	for i := range s.ReceiverActors() {
		r := &counter{i: i, any: s.OneReceiver(), t: t}
		if _, err := b.sys.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return r }), nodeapi.ReceiverName(i)); err != nil {
			return err
		}
	}
	h := map[string]ctl.Handler{
		nodeapi.CmdArm: func(arg json.RawMessage) (any, error) {
			var a nodeapi.Arm
			if err := nodeapi.Decode(arg, &a); err != nil {
				return nil, err
			}
			t.Arm(a.PerWriter, int64(a.PerWriter)*int64(s.Writers))
			executed.Store(0)
			castsDone.Store(0)
			b.arm()
			return nil, nil
		},
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) {
			return nodeapi.Status{Connected: b.connected(), Tally: t.Read(), Errors: b.failures()}, nil
		},
		nodeapi.CmdStats: func(json.RawMessage) (any, error) {
			var st nodeapi.Stats
			b.stats(&st)
			st.Executed = executed.Load() + castsDone.Load()
			st.Errors = b.failures()
			st.Mallocs = nodeapi.Mallocs()
			return st, nil
		},
	}
	nodeapi.AddProfiling(h)
	if err := ctl.Serve(nodeapi.Ready{Addr: b.node.Addr(), BaseRSS: baseRSS}, h); err != nil {
		return err
	}
	return b.stop()
}
