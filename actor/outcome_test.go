package actor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// requireAgree asserts that errors.Is matches no fixed-outcome sentinel
// of another outcome than Outcome(err), and that the text says one.
func requireAgree(t *testing.T, err error, want Execution) {
	t.Helper()
	require.Equal(t, want, Outcome(err), "%v", err)
	for _, s := range sentinels {
		if s.fixed && errors.Is(err, s.err) {
			require.Equal(t, want, s.outcome, "errors.Is(err, %v) disagrees with Outcome: %v", s.err, err)
		}
	}
	require.True(t, strings.HasSuffix(err.Error(), want.advice()), "%q", err)
	require.Equal(t, 1, strings.Count(err.Error(), "executed"), "one outcome in %q", err)
}

// TestDeclaredOutcomes: NotExecutedError and MayHaveExecutedError state
// the outcome, hide what in their error contradicts it, keep the rest.
func TestDeclaredOutcomes(t *testing.T) {
	down := NewError("call", "stock", 1, "reserve", ErrUnreachable)
	err := MayHaveExecutedError(fmt.Errorf("saved, then: %w", down))
	requireAgree(t, err, MayHaveExecuted)
	require.NotErrorIs(t, err, ErrUnreachable)
	var ae *Error
	require.False(t, errors.As(err, &ae), "an *Error of another outcome is hidden")
	require.Equal(t, "", ErrorCode(err), "no code of a hidden sentinel")

	err = NotExecutedError(Reject("sold_out", "none left"))
	requireAgree(t, err, NotExecuted)
	require.Equal(t, "sold_out", ErrorCode(err))
	require.ErrorIs(t, err, Reject("sold_out", ""))

	err = NotExecutedError(context.DeadlineExceeded)
	requireAgree(t, err, NotExecuted)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a context error stays visible")

	require.NoError(t, NotExecutedError(nil))
	require.NoError(t, MayHaveExecutedError(nil))

	// A bare context error, and a rejection coded like a sentinel.
	require.Equal(t, MayHaveExecuted, Outcome(context.Canceled))
	rej := &RemoteError{Code: "unreachable", Message: "m"}
	requireAgree(t, rej, Executed)
	require.NotErrorIs(t, rej, ErrUnreachable)
}

// TestHandlerErrorsLocally: a local call gets what a remote caller
// would: a rejection, the declared outcome, the downstream's outcome, or
// MayHaveExecuted for a handler that returned its ended ctx's error.
func TestHandlerErrorsLocally(t *testing.T) {
	s := newSystem(t, "n")
	require.NoError(t, s.Register("f", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		switch arg.(*testpb.Echo).Text {
		case "plain":
			return nil, errors.New("no")
		case "declared":
			return nil, NotExecutedError(errors.New("closed"))
		case "downstream":
			_, err := s.Call(ctx, "elsewhere", "g", &testpb.Echo{})
			return nil, err
		case "ctx":
			ctx, cancel := context.WithTimeout(ctx, time.Millisecond)
			defer cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &testpb.Echo{}, nil
	}))
	for text, want := range map[string]Execution{"plain": Executed, "declared": NotExecuted, "downstream": NotExecuted, "ctx": MayHaveExecuted} {
		_, err := s.Call(ctxT(t), "n", "f", &testpb.Echo{Text: text})
		requireAgree(t, err, want)
		if text == "plain" {
			var re *RemoteError
			require.ErrorAs(t, err, &re)
		}
		if text == "downstream" {
			require.ErrorIs(t, err, ErrUnreachable)
		}
		if text == "ctx" {
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
	}
}

// TestDeferredReplyLocally: Defer().Reply(nil, err) is RespondError(err),
// and a Reply after the first counts as late.
func TestDeferredReplyLocally(t *testing.T) {
	s := newSystem(t, "n")
	replied := make(chan Replier, 1)
	pid, err := s.SpawnFunc(func(c *Context) {
		e, ok := c.Message().(*testpb.Echo)
		if !ok {
			return
		}
		var reason error
		switch e.Text {
		case "plain":
			reason = errors.New("no")
		case "declared":
			reason = NotExecutedError(errors.New("closed"))
		}
		if e.N == 1 {
			c.RespondError(reason)
			return
		}
		r := c.Defer()
		go func() { r.Reply(nil, reason); replied <- r }()
	})
	require.NoError(t, err)
	for text, want := range map[string]Execution{"plain": Executed, "declared": NotExecuted} {
		_, direct := s.Request(ctxT(t), pid, &testpb.Echo{Text: text, N: 1})
		_, later := s.Request(ctxT(t), pid, &testpb.Echo{Text: text, N: 2})
		requireAgree(t, later, want)
		require.Equal(t, direct.Error(), later.Error())
		r := <-replied
		before := s.LateReplies()
		r.Reply(nil, errors.New("again"))
		require.Equal(t, before+1, s.LateReplies())
	}
}

// TestOutcomeLabel: Label is String's words joined by underscores, one
// value per outcome, and a valid Prometheus label value shape.
func TestOutcomeLabel(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range []Execution{Executed, NotExecuted, MayHaveExecuted, Execution(7)} {
		l := o.Label()
		require.Regexp(t, `^[a-z0-9_]+$`, l)
		require.False(t, seen[l], "one label per outcome: %q", l)
		seen[l] = true
		if o <= MayHaveExecuted {
			require.Equal(t, strings.ReplaceAll(o.String(), " ", "_"), l)
		}
	}
	require.Equal(t, "may_have_executed", MayHaveExecuted.Label())
	require.Equal(t, "may have executed", MayHaveExecuted.String())
}
