package remote

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// A node stopping says goodbye and waits a while for it to be written;
// to a peer that reads nothing it never is. What was still buffered, or
// cut short in the blocked write, when our side closed is never sent:
// every one of those sends is a dead letter and counted, none vanishes.
func TestStopCountsWhatItsGoodbyeNeverWrote(t *testing.T) {
	mn := memnet.New() // net.Pipe: a write waits for the peer to read
	bsys, b, _ := startNode(t, "b", Config{Network: mn, PoolSize: PoolDisabled, Liveness: Liveness{HeartbeatInterval: time.Hour}})
	var dead atomic.Int64
	unsub := bsys.SubscribeDeadLetters(func(actor.DeadLetter) { dead.Add(1) })
	defer unsub()

	// a is a raw listener: it completes b's handshake, then reads nothing.
	ln, err := mn.Listen("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		if _, err := wire.ServerHandshake(conn, []byte(testCookie), wire.Hello{Node: "a", Inc: 1, Addr: ln.Addr().String()}, soon(), admitAll); err != nil {
			conn.Close()
			return
		}
		accepted <- conn
	}()
	b.onMember(discovery.Event{Type: discovery.MemberUp, Member: discovery.Member{Node: "a", Incarnation: 1, Addr: ln.Addr().String()}})
	bsys.Send(actor.PID{Node: "a", Incarnation: 1, ID: 9}, &testpb.Echo{N: -1}) // dials a
	var conn net.Conn
	select {
	case conn = <-accepted:
		t.Cleanup(func() { conn.Close() })
	case <-time.After(10 * time.Second):
		t.Fatal("b did not dial a")
	}

	// a reads nothing from here: the first write blocks, the rest wait in
	// the link's buffer.
	const sends = 20 // and the first, written or not
	for i := range sends - 1 {
		bsys.Send(actor.PID{Node: "a", Incarnation: 1, ID: 9}, &testpb.Echo{N: int64(i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- bsys.Stop(ctx) }()
	// The lingering close waits a second for a to hang up; a never does,
	// so b closes the connection itself, failing the blocked write.
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("b did not stop")
	}
	waitFor(t, "every unwritten send a dead letter", func() bool { return dead.Load() == sends })
	require.Equal(t, uint64(sends), b.Stats().DroppedUnsent)
}
