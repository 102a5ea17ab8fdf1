package remote

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/memnet"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/stretchr/testify/require"
)

// (fix) A link's reader answers a ping even when the link's buffer is
// full: the pong takes the control headroom past LinkBufferBytes. When
// both directions of a link are full and each reader meets a ping, each
// would otherwise wait for room that only the other's reader can make,
// and liveness would close a link whose peer is alive. Past the
// headroom (a peer that pings without reading) the reader waits again,
// which is silence to liveness (the end of this test).
func TestAPongTakesHeadroomInAFullLink(t *testing.T) {
	net := memnet.NewBuffered(1 << 10)
	cfg := Config{Network: net, Liveness: Liveness{HeartbeatInterval: time.Hour}, LinkBufferBytes: 4 << 10}
	_, b, _ := startNode(t, "b", cfg)
	cfg.Seeds = []string{"b=" + b.Addr()}
	_, a, _ := startNode(t, "a", cfg)
	require.NoError(t, a.Connect(context.Background(), "b", ""))
	_, l := a.dial.live("b")
	conn := net.Conns(b.Addr())[0]
	conn.Hold()

	// Fill the connection (the writer blocks in its write), then the
	// link's buffer.
	frame := l.ends.AppendFrame(nil, &wire.Element{Kind: wire.KindSend, ToName: "nobody"})
	_, err := l.enqueue(bytes.Repeat(frame, 2<<10/len(frame)), 2<<10/len(frame), false, nil)
	require.NoError(t, err)
	waitFor(t, "the writer blocked on a full connection", func() bool { return conn.Buffered() == 1<<10 })
	for {
		if _, err := l.enqueue(frame, 1, false, nil); errors.Is(err, actor.ErrOverloaded) {
			break
		}
	}

	ping := func() chan error {
		done := make(chan error, 1)
		go func() { done <- l.handle(&wire.Element{Kind: wire.KindPing}) }()
		return done
	}
	pongs := 0
	for {
		l.mu.Lock()
		fits := len(l.buf)+len(pongFrame) <= l.limit+ctlHeadroom
		l.mu.Unlock()
		if !fits {
			break
		}
		require.NoError(t, within(t, ping()), "a pong within the headroom does not wait")
		l.mu.Lock()
		require.True(t, bytes.HasSuffix(l.buf, pongFrame), "the pong is queued")
		l.mu.Unlock()
		pongs++
	}
	require.GreaterOrEqual(t, pongs, ctlHeadroom/len(pongFrame)-len(frame)/len(pongFrame))

	// Past the headroom the reader waits for room, until the peer reads.
	done := ping()
	waitFor(t, "the next pong waits for room", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.room != nil
	})
	select {
	case err := <-done:
		t.Fatalf("a pong past the headroom did not wait: %v", err)
	default:
	}
	conn.Release()
	require.NoError(t, within(t, done), "the pong goes once the peer reads")
}

// within waits for done, failing the test after 30 s.
func within(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting after 30s")
		return nil
	}
}
