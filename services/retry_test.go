package services

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// TestRetryTiming: with an injected clock, the attempts and their start
// times are exactly the configured ones; the budget counts from the
// first attempt's start, and no attempt starts at or past it.
func TestRetryTiming(t *testing.T) {
	clock := newFakeClock()
	c := newClient(t, "client", Config{Clock: clock})
	// echo is announced but not registered: every attempt is a real round
	// trip that fails with ErrNoFunction (not executed).
	c.provider(t, "flaky-1", map[string]string{"unregister": "flaky@1:echo"}, "flaky@1.0.0;b1s,p100ms,x400ms;echo")

	call := func(t *testing.T, opts ...CallOption) *CallError {
		t.Helper()
		_, err := c.svc.Call(ctxT(t, 20*time.Second), "flaky", Major(1), "echo", &testpb.Echo{}, opts...)
		var ce *CallError
		require.ErrorAs(t, err, &ce)
		require.ErrorIs(t, err, actor.ErrNoFunction)
		require.Equal(t, actor.NotExecuted, actor.Outcome(err))
		for _, a := range ce.Attempts {
			require.Equal(t, "flaky-1", a.Node, "every attempt reached the provider")
			require.ErrorIs(t, a.Err, actor.ErrNoFunction)
		}
		return ce
	}

	t.Run("provider policy", func(t *testing.T) {
		ce := call(t)
		// Pauses 100, 200, 400: the next attempt would start at 1.1 s,
		// past the 1 s budget, so there is no "one last try".
		require.Equal(t, []time.Duration{0, 100 * ms, 300 * ms, 700 * ms}, starts(ce))
		require.Equal(t, ReasonBudget, ce.Reason)
		require.ErrorContains(t, ce, "4 attempts, the last 700ms after the first; stopped: retry budget used up (1s from the first attempt)")
	})
	t.Run("budget boundary is exclusive", func(t *testing.T) {
		require.Equal(t, []time.Duration{0, 100 * ms, 300 * ms, 700 * ms}, starts(call(t, WithBudget(1100*ms))))
		require.Equal(t, []time.Duration{0, 100 * ms, 300 * ms, 700 * ms, 1100 * ms}, starts(call(t, WithBudget(1101*ms))))
	})
	t.Run("slow attempts count against the budget", func(t *testing.T) {
		// Each attempt takes 250 ms: the budget runs from the first
		// attempt's start, not from its failure (NETZlive's bug).
		c.svc.testBeforeCall = func() { clock.Advance(250 * ms) }
		defer func() { c.svc.testBeforeCall = nil }()
		ce := call(t)
		require.Equal(t, []time.Duration{0, 350 * ms, 800 * ms}, starts(ce))
		require.Equal(t, ReasonBudget, ce.Reason)
	})
	t.Run("one field overridden, the provider's others kept", func(t *testing.T) {
		// Only the backoff is the caller's; the budget (1 s) and the cap
		// (400 ms) stay the provider's. A shallow merge would fall back
		// to the 30 s default budget and run for dozens of attempts.
		pol, pi, err := c.svc.Effective("flaky", Major(1), "echo", WithBackoff(50*ms))
		require.NoError(t, err)
		require.Equal(t, "flaky-1", pi.Node)
		require.Equal(t, RetryPolicy{Budget: time.Second, Backoff: 50 * ms, MaxBackoff: 400 * ms, MaxAttempts: Unlimited}, pol.Retry)
		ce := call(t, WithBackoff(50*ms))
		require.Equal(t, []time.Duration{0, 50 * ms, 150 * ms, 350 * ms, 750 * ms}, starts(ce))
	})
	t.Run("max attempts", func(t *testing.T) {
		ce := call(t, WithMaxAttempts(2))
		require.Equal(t, []time.Duration{0, 100 * ms}, starts(ce))
		require.Equal(t, ReasonAttempts, ce.Reason)
	})
	require.NotZero(t, c.svc.RetriesFor("flaky", "no_function"))
}

// TestRetryClassification: executed results are never retried,
// may-have-executed ones only for idempotent functions.
func TestRetryClassification(t *testing.T) {
	dir := t.TempDir()
	c := newClient(t, "client", Config{})
	const spec = "work@1.0.0;b20s,p5ms;hold_put,hold_get:i,reject:i,panic:i,wedge:d300ms"
	extra := map[string]string{"dir": dir}
	p1 := c.provider(t, "work-1", extra, spec)
	ctx := ctxT(t, 30*time.Second)

	t.Run("rejection", func(t *testing.T) {
		_, err := c.svc.Call(ctx, "work", Major(1), "reject", &testpb.Echo{})
		var re *actor.RemoteError
		require.ErrorAs(t, err, &re)
		require.Equal(t, "nope", re.Code)
		require.Equal(t, actor.Executed, actor.Outcome(err))
		var ce *CallError
		require.ErrorAs(t, err, &ce)
		require.Len(t, ce.Attempts, 1, "idempotent, but executed: never retried")
		require.Equal(t, ReasonExecuted, ce.Reason)
		require.ErrorContains(t, err, "on node work-1 (incarnation")
		require.ErrorContains(t, err, "version 1.0.0")
		t.Log(err)
	})
	t.Run("panic", func(t *testing.T) {
		_, err := c.svc.Call(ctx, "work", Major(1), "panic", &testpb.Echo{})
		var pe *actor.PanicError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, actor.Executed, actor.Outcome(err))
		var ce *CallError
		require.ErrorAs(t, err, &ce)
		require.Len(t, ce.Attempts, 1)
	})
	t.Run("wedged handler bounded by the provider's deadline", func(t *testing.T) {
		start := time.Now()
		_, err := c.svc.Call(ctx, "work", Major(1), "wedge", &testpb.Echo{Text: "wedge-release"})
		require.Less(t, time.Since(start), 10*time.Second)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))
		var ce *CallError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, ReasonNotIdempotent, ce.Reason)
		require.Len(t, ce.Attempts, 1)
		require.ErrorContains(t, err, "the provider's declared deadline of 300ms passed")
		require.ErrorContains(t, err, "may have executed; check before retrying")
		t.Log(err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "wedge-release"), nil, 0o644))
	})
	t.Run("node death", func(t *testing.T) {
		put := make(chan error, 1)
		get := make(chan error, 1)
		var got *testpb.Echo
		go func() {
			_, err := c.svc.Call(ctx, "work", Major(1), "hold_put", &testpb.Echo{Text: "death-release"})
			put <- err
		}()
		go func() {
			res, err := c.svc.Call(ctx, "work", Major(1), "hold_get", &testpb.Echo{Text: "death-release"})
			if err == nil {
				got = res.(*testpb.Echo)
			}
			get <- err
		}()
		eventually(t, "both calls pending on work-1", func() bool {
			p := c.svc.Pending()
			return len(p) == 1 && p[0].Node == "work-1" && p[0].Count == 2
		})
		c.provider(t, "work-2", extra, spec)
		p1.Kill()

		err := <-put
		require.ErrorIs(t, err, actor.ErrNodeDown)
		require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))
		var ce *CallError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, ReasonNotIdempotent, ce.Reason)
		require.Len(t, ce.Attempts, 1)
		t.Log(err)

		require.NoError(t, os.WriteFile(filepath.Join(dir, "death-release"), nil, 0o644))
		require.NoError(t, <-get, "the idempotent call is retried on work-2")
		require.Equal(t, "work-2", got.From)
		require.NotZero(t, c.svc.RetriesFor("work", "node_down"))
	})
}
