package panode

import (
	"encoding/json"

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

// RunReceiver runs the receiver role until the controller says quit.
func RunReceiver(cfg nodeapi.Config) error {
	s := cfg.Spec
	b := start()
	baseRSS := nodeapi.RSS()
	t := tally.New(s.Writers)
	ack := &benchpb.Ack{N: 1}
	for i := range s.ReceiverActors() {
		r := &counter{i: i, any: s.OneReceiver(), t: t, ack: ack}
		if _, err := b.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return r }), nodeapi.ReceiverName(i)); err != nil {
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
			b.arm()
			return nil, nil
		},
		nodeapi.CmdStatus: func(json.RawMessage) (any, error) {
			return nodeapi.Status{Connected: true, Tally: t.Read(), Errors: b.failures()}, nil
		},
		nodeapi.CmdStats: func(json.RawMessage) (any, error) {
			return nodeapi.Stats{Errors: b.failures(), Executed: t.Read().Count, Mallocs: nodeapi.Mallocs()}, nil
		},
	}
	nodeapi.AddProfiling(h)
	err := ctl.Serve(nodeapi.Ready{Addr: b.sys.Address(), BaseRSS: baseRSS}, h)
	b.stop()
	return err
}
