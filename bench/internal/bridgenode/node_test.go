package bridgenode

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	mr "github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// protoactor's dead-letter log throttle holds a goroutine for its
		// interval (1 s) after a dead letter: not ours, and it ends. Its
		// name depends on inlining.
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewThrottle.func1"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pair starts a receiver and a sender node as the roles do, the
// sender's session with the receiver open, and stops both at the end.
func pair(t *testing.T) (recv, send *node) {
	t.Helper()
	recv, err := start(nodeapi.ReceiverNode, nodeapi.SenderNode, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := recv.Stop(); err != nil {
			t.Error(err)
		}
	})
	send, err = start(nodeapi.SenderNode, nodeapi.ReceiverNode, []string{nodeapi.ReceiverNode + "=" + recv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := send.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := connect(send); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both nodes connected", func() bool { return send.Connected() && recv.Connected() })
	return recv, send
}

// TestTheBridgePathCarriesAndCountsWhatItLoses: a send to the receiver's
// named actor arrives; a send to no such actor is a failure on the
// receiver, a request to it a failed call whose error Result returns (not
// a successful result); the figures are mailroom's.
func TestTheBridgePathCarriesAndCountsWhatItLoses(t *testing.T) {
	recv, send := pair(t)
	var got atomic.Int64
	ack := &benchpb.Ack{N: 1}
	props := actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*benchpb.Ack); ok {
			if c.Sender() != nil {
				c.Respond(ack)
				return
			}
			got.Add(1)
		}
	})
	if _, err := recv.Actors().Root.SpawnNamed(props, nodeapi.ReceiverName(0)); err != nil {
		t.Fatal(err)
	}
	send.Arm()
	recv.Arm()
	var st0 nodeapi.Stats
	send.Stats(&st0)

	to := send.Target("ignored", nodeapi.ReceiverName(0))
	for range 100 {
		send.Actors().Root.Send(to, ack)
	}
	eventually(t, "100 sends delivered", func() bool { return got.Load() == 100 })
	res, err := send.Result(send.Actors().Root.RequestFuture(to, ack, time.Minute))
	if err != nil || res.(*benchpb.Ack).N != 1 {
		t.Fatalf("request: %v, %v", res, err)
	}
	if send.Failures() != 0 || recv.Failures() != 0 {
		t.Fatalf("failures %d + %d with nothing lost", send.Failures(), recv.Failures())
	}
	var st1 nodeapi.Stats
	send.Stats(&st1)
	if st1.BytesOut <= st0.BytesOut || st1.Batches <= st0.Batches || st1.BatchedMsgs-st0.BatchedMsgs < 100 {
		t.Fatalf("mailroom's figures did not move: %+v then %+v", st0, st1)
	}

	nobody := send.Target("ignored", "nobody")
	send.Actors().Root.Send(nobody, ack)
	eventually(t, "a send to no such actor counted", func() bool { return recv.Failures() >= 1 })
	res, err = send.Result(send.Actors().Root.RequestFuture(nobody, ack, time.Minute))
	if !errors.Is(err, mr.ErrNoProcess) || res != nil {
		t.Fatalf("request to no such actor: %v, %v; want ErrNoProcess as the error", res, err)
	}
	send.Arm()
	recv.Arm()
	if send.Failures() != 0 || recv.Failures() != 0 {
		t.Fatalf("Arm did not start a new count: %d + %d", send.Failures(), recv.Failures())
	}
}
