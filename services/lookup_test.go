package services

import (
	"errors"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestLookupErrors: no such service, no compatible version and no such
// function are distinct, not executed, and say what was found.
func TestLookupErrors(t *testing.T) {
	c := newClient(t, "client", Config{})
	c.provider(t, "cat-1", nil, "catalog@1.4.0;;echo")

	res, err := c.svc.Call(ctxT(t, 10*time.Second), "catalog", Major(1), "echo", &testpb.Echo{Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, "cat-1", res.(*testpb.Echo).From)

	cases := []struct {
		name     string
		service  string
		want     Constraint
		fn       string
		sentinel error
		says     string
	}{
		{"no service", "nosuch", Major(1), "echo", actor.ErrNoService, "no such service: no node announces it"},
		{"no version", "catalog", Major(2), "echo", actor.ErrNoVersion, "no compatible version: providers have 1.4.0 on cat-1 (incarnation"},
		{"no newer minor", "catalog", AtLeast("1.5"), "echo", actor.ErrNoVersion, "providers have 1.4.0 on cat-1"},
		{"no function", "catalog", Major(1), "frob", actor.ErrNoFunction, "no such function in any compatible provider: 1.4.0 on cat-1 (incarnation"},
	}
	all := []error{actor.ErrNoService, actor.ErrNoVersion, actor.ErrNoFunction}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.svc.Call(ctxT(t, 10*time.Second), tc.service, tc.want, tc.fn, &testpb.Echo{}, NoRetry())
			require.ErrorIs(t, err, tc.sentinel)
			for _, other := range all {
				if other != tc.sentinel {
					require.NotErrorIs(t, err, other)
				}
			}
			require.Equal(t, actor.NotExecuted, actor.Outcome(err))
			var le *LookupError
			require.ErrorAs(t, err, &le)
			var ce *CallError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, ReasonAttempts, ce.Reason)
			require.Len(t, ce.Attempts, 1)
			require.Empty(t, ce.Node, "no provider was chosen")
			require.ErrorContains(t, err, tc.says)
			require.ErrorContains(t, err, "not executed; safe to retry")
			require.ErrorContains(t, err, tc.service)
			require.ErrorContains(t, err, tc.fn)
			t.Log(err)
		})
	}

	// Within a budget, a lookup failure is retried: it may be transient.
	_, err = c.svc.Call(ctxT(t, 10*time.Second), "nosuch", Major(1), "echo", &testpb.Echo{},
		WithBudget(200*time.Millisecond), WithBackoff(10*time.Millisecond))
	var ce *CallError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, ReasonBudget, ce.Reason)
	require.Greater(t, len(ce.Attempts), 2)
	require.ErrorIs(t, err, actor.ErrNoService)
	require.True(t, errors.Is(err, actor.ErrNoService))
	require.NotZero(t, c.svc.RetriesFor("nosuch", "no_service"))
}
