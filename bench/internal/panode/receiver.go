package panode

import (
	"encoding/json"
	"errors"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/tally"
	"google.golang.org/protobuf/proto"
)

// counter is a receiver actor: writer i's, or every writer's (any).
type counter struct {
	i   int
	any bool
	t   *tally.Tally
	ack *benchpb.Ack
}

func (r *counter) Receive(c actor.Context) {
	if _, ok := c.Message().(proto.Message); !ok {
		return
	}
	if c.Sender() != nil { // a RequestFuture: the call
		c.Respond(r.ack)
		return
	}
	if r.any {
		r.t.HitAny()
	} else {
		r.t.Hit(r.i)
	}
}

// RunReceiver runs the receiver role on protoactor-go's remote until the
// controller says quit.
func RunReceiver(cfg nodeapi.Config) error { return ServeReceiver(cfg, start()) }

// ServeReceiver runs the receiver role on r until the controller says
// quit, then stops r: counting actors named "r<i>", which respond to a
// request with Ack.
func ServeReceiver(cfg nodeapi.Config, r Remote) error {
	s := cfg.Spec
	sys := r.Actors()
	baseRSS := nodeapi.RSS()
	t := tally.New(s.Writers)
	ack := &benchpb.Ack{N: 1}
	for i := range s.ReceiverActors() {
		c := &counter{i: i, any: s.OneReceiver(), t: t, ack: ack}
		if _, err := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return c }), nodeapi.ReceiverName(i)); err != nil {
			return errors.Join(err, r.Stop())
		}
	}
	h := map[string]ctl.Handler{
		nodeapi.CmdArm: func(arg json.RawMessage) (any, error) {
			var a nodeapi.Arm
			if err := nodeapi.Decode(arg, &a); err != nil {
				return nil, err
			}
			t.Arm(a.PerWriter, int64(a.PerWriter)*int64(s.Writers))
			r.Arm()
			return nil, nil
		},
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) {
			return nodeapi.Status{Connected: r.Connected(), Tally: t.Read(), Errors: r.Failures()}, nil
		},
		nodeapi.CmdStats: func(json.RawMessage) (any, error) {
			st := nodeapi.Stats{Errors: r.Failures(), Executed: t.Read().Count}
			r.Stats(&st)
			st.Mallocs = nodeapi.Mallocs()
			return st, nil
		},
	}
	nodeapi.AddProfiling(h)
	err := ctl.Serve(nodeapi.Ready{Addr: r.Addr(), BaseRSS: baseRSS}, h)
	return errors.Join(err, r.Stop())
}
