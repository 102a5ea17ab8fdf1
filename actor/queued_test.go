package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// queuedBehind starts an actor held at a gate by a first send, queues n
// requests behind it (so the actor takes them as one batch once the gate
// opens), lets kill end the actor on the first request it handles, and
// returns each requester's error, the first request's first.
func queuedBehind(t *testing.T, sys *System, n int, props func(gate chan struct{}) *Props, kill func(pid PID)) []error {
	t.Helper()
	gate := make(chan struct{})
	pid, err := sys.Spawn(props(gate))
	require.NoError(t, err)
	sys.Send(pid, "hold")
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = sys.Request(ctxT(t), pid, i)
		}()
		// The next request is queued after this one: the first handled is 0.
		eventually(t, "request queued", func() bool { return sys.MailboxLen(pid) == i+2 })
	}
	kill(pid)
	close(gate)
	wg.Wait()
	return errs
}

// requireNeverHandled: every request the actor never handled failed with
// ErrNoProcess, not executed, whatever the race between its answer and the
// actor's end.
func requireNeverHandled(t *testing.T, errs []error, what string) {
	t.Helper()
	for i, err := range errs {
		require.ErrorIs(t, err, ErrNoProcess, "%s: request %d", what, i)
		require.Equal(t, NotExecuted, Outcome(err), "%s: request %d: %v", what, i, err)
	}
}

// TestAQueuedRequestWhoseActorDiesIsNotExecuted: requests taken in one
// batch behind the one that crashes the actor were never handled; they
// are not executed, always. Before the fix a crash finalized the actor
// (closing its done channel) before the rest of its batch was answered,
// and a requester that saw the done channel first read "may have
// executed" (4 in 335 in a user's run).
func TestAQueuedRequestWhoseActorDiesIsNotExecuted(t *testing.T) {
	sys := newSystem(t, "n1")
	const rounds, n = 30, 12
	crashOnRequest := func(gate chan struct{}) *Props {
		return PropsFromFunc(func(c *Context) {
			switch m := c.Message().(type) {
			case string:
				<-gate
			case int:
				panic(fmt.Sprintf("poison %d", m))
			}
		})
	}
	for range rounds {
		errs := queuedBehind(t, sys, n, crashOnRequest, func(PID) {})
		var pe *PanicError
		require.ErrorAs(t, errs[0], &pe, "the request it crashed on: executed")
		requireNeverHandled(t, errs[1:], "behind a crash")
	}

	t.Run("a batch receiver", func(t *testing.T) {
		for range rounds {
			errs := queuedBehind(t, sys, n, func(gate chan struct{}) *Props {
				return PropsFromProducer(func() Actor { return &batchCrasher{gate: gate} })
			}, func(PID) {})
			var pe *PanicError
			require.ErrorAs(t, errs[0], &pe)
			requireNeverHandled(t, errs[1:], "behind a batch receiver's crash")
		}
	})

	t.Run("stopped mid-batch", func(t *testing.T) {
		for range rounds {
			var stop func()
			errs := queuedBehind(t, sys, n, func(gate chan struct{}) *Props {
				return PropsFromFunc(func(c *Context) {
					switch c.Message().(type) {
					case string:
						<-gate
					case int:
						stop() // a stop arrives while the batch is in hand
						c.Respond("handled")
					}
				})
			}, func(pid PID) { stop = func() { sys.StopActor(pid) } })
			require.NoError(t, errs[0])
			requireNeverHandled(t, errs[1:], "behind a stop")
		}
	})
}

// batchCrasher takes plain sends in batches and requests one by one; it
// crashes on its first request.
type batchCrasher struct{ gate chan struct{} }

func (b *batchCrasher) Receive(c *Context) {
	if _, ok := c.Message().(int); ok {
		panic("poison")
	}
}

func (b *batchCrasher) ReceiveBatch(c *Context, msgs []any) {
	for _, m := range msgs {
		if m == "hold" {
			<-b.gate
		}
	}
}

func (b *batchCrasher) BatchLimit() int { return 64 }

// TestARequestTheActorTookAndLeftUnansweredMayHaveExecuted: the other side
// of the rule. A request the actor handled without answering (a deferred
// reply it never gave) may have executed when the actor dies.
func TestARequestTheActorTookAndLeftUnansweredMayHaveExecuted(t *testing.T) {
	sys := newSystem(t, "n1")
	taken := make(chan struct{})
	pid, err := sys.SpawnFunc(func(c *Context) {
		switch c.Message().(type) {
		case int:
			c.Defer() // answered later, or never
			close(taken)
		case string:
			panic("crash")
		}
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := sys.Request(ctxT(t), pid, 1)
		done <- err
	}()
	<-taken
	sys.Send(pid, "crash")
	err = <-done
	require.ErrorIs(t, err, ErrNoProcess)
	require.Equal(t, MayHaveExecuted, Outcome(err))
	require.False(t, errors.Is(err, context.Canceled))
}
