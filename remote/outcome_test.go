package remote_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// fixedSentinels are the sentinels whose outcome never varies, with it.
var fixedSentinels = map[error]actor.Execution{
	actor.ErrUnreachable: actor.NotExecuted, actor.ErrNoFunction: actor.NotExecuted,
	actor.ErrNoService: actor.NotExecuted, actor.ErrNoVersion: actor.NotExecuted,
	actor.ErrNotSent: actor.NotExecuted, actor.ErrMailboxFull: actor.NotExecuted,
	actor.ErrOverloaded: actor.NotExecuted, actor.ErrStopped: actor.NotExecuted,
	actor.ErrDeadlineExceeded: actor.NotExecuted, actor.ErrDraining: actor.NotExecuted,
	actor.ErrNameTaken: actor.NotExecuted, actor.ErrNodeDown: actor.MayHaveExecuted,
	actor.ErrReplyType: actor.Executed,
}

// requireOneOutcome asserts that err's Outcome is want, that errors.Is
// matches no sentinel of another outcome, and that its text states want
// and no other outcome.
func requireOneOutcome(t *testing.T, err error, want actor.Execution) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, want, actor.Outcome(err), "%v", err)
	for s, o := range fixedSentinels {
		if errors.Is(err, s) {
			require.Equal(t, want, o, "errors.Is(err, %v) disagrees with Outcome: %v", s, err)
		}
	}
	text := err.Error()
	advice := map[actor.Execution]string{
		actor.Executed:        ": executed",
		actor.NotExecuted:     "not executed; safe to retry",
		actor.MayHaveExecuted: "may have executed; check before retrying",
	}
	require.True(t, strings.HasSuffix(text, advice[want]), "the text ends with its outcome: %q", text)
	require.Equal(t, 1, strings.Count(text, "executed"), "one outcome in the text: %q", text)
}

// shop is api → orders → stock, three nodes linked over TCP. orders'
// "place" calls stock's function named by its argument and returns
// stock's error as it got it; "place_wrapped" wraps it with %w.
type shop struct {
	api, orders, stock *actor.System
	on                 *remote.Node
}

func newShop(t *testing.T) *shop {
	t.Helper()
	stock, sn := testnode.Local(t, testnode.Options{Name: "stock"})
	orders, on := testnode.Local(t, testnode.Options{Name: "orders"})
	api, an := testnode.Local(t, testnode.Options{Name: "api"})
	require.NoError(t, on.Connect(ctxT(t, 10*time.Second), "stock", sn.Addr()))
	require.NoError(t, an.Connect(ctxT(t, 10*time.Second), "orders", on.Addr()))
	require.NoError(t, orders.Register("place", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		e := arg.(*testpb.Echo)
		if e.Text == "sleep" {
			return orders.Call(ctx, "stock", "sleep", &testpb.Sleep{Millis: 60000})
		}
		return orders.Call(ctx, "stock", e.Text, &testpb.Echo{Text: e.From})
	}))
	require.NoError(t, orders.Register("place_wrapped", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		e := arg.(*testpb.Echo)
		_, err := orders.Call(ctx, "stock", e.Text, &testpb.Echo{Text: e.From})
		return nil, fmt.Errorf("place order: %w", err)
	}))
	return &shop{api: api, orders: orders, stock: stock, on: on}
}

func (s *shop) place(t *testing.T, fn, stockFn string) error {
	t.Helper()
	_, err := s.api.Call(ctxT(t, 20*time.Second), "orders", fn, &testpb.Echo{Text: stockFn})
	return err
}

// TestOutcomesComposeAcrossTwoHops: what stock did reaches api through
// orders, whose handlers return stock's error as-is or wrapped with %w.
func TestOutcomesComposeAcrossTwoHops(t *testing.T) {
	s := newShop(t)
	for _, fn := range []string{"place", "place_wrapped"} {
		// stock has no such function: it never ran, and api is told so.
		err := s.place(t, fn, "reserve")
		requireOneOutcome(t, err, actor.NotExecuted)
		require.ErrorIs(t, err, actor.ErrNoFunction, "%v", err)
		var ae *actor.Error
		require.ErrorAs(t, err, &ae)
		require.Equal(t, "orders", ae.Node, "api's error names the hop that answered it")
		require.Equal(t, fn, ae.Target)
		require.Equal(t, "no_function", actor.ErrorCode(err))

		// stock rejects: executed, its code kept, no sentinel matched.
		err = s.place(t, fn, "reject")
		requireOneOutcome(t, err, actor.Executed)
		var re *actor.RemoteError
		require.ErrorAs(t, err, &re, "%v", err)
		require.Equal(t, "rejected", actor.ErrorCode(err))
		require.NotErrorIs(t, err, actor.ErrNoFunction)
	}

	// stock stopped: orders cannot reach it; not executed at api.
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.stock.Stop(stopCtx))
	for _, fn := range []string{"place", "place_wrapped"} {
		err := s.place(t, fn, "echo")
		requireOneOutcome(t, err, actor.NotExecuted)
		require.True(t, errors.Is(err, actor.ErrUnreachable) || errors.Is(err, actor.ErrNotSent), "%v", err)
	}
}

// TestOutcomeOfAKilledDownstream: stock is SIGKILLed while it runs the
// call orders made for api: api is told "may have executed", matching
// ErrNodeDown and not a not-executed sentinel.
func TestOutcomeOfAKilledDownstream(t *testing.T) {
	stock := testnode.Start(t, testnode.Options{Name: "stock"})
	orders, on := testnode.Local(t, testnode.Options{Name: "orders", Seeds: []string{stock.Seed()}})
	api, an := testnode.Local(t, testnode.Options{Name: "api"})
	require.NoError(t, on.Connect(ctxT(t, 10*time.Second), "stock", ""))
	require.NoError(t, an.Connect(ctxT(t, 10*time.Second), "orders", on.Addr()))
	require.NoError(t, orders.Register("place", func(ctx context.Context, _ proto.Message) (proto.Message, error) {
		return orders.Call(ctx, "stock", "sleep", &testpb.Sleep{Millis: 60000})
	}))

	res := make(chan error, 1)
	go func() {
		_, err := api.Call(ctxT(t, 30*time.Second), "orders", "place", &testpb.Echo{})
		res <- err
	}()
	eventually(t, "stock runs the call", func() bool {
		v, err := orders.Call(ctxT(t, 5*time.Second), "stock", "stats", &testpb.Echo{})
		return err == nil && strings.Contains(v.(*testpb.Echo).Text, "sleeping=1")
	})
	stock.Kill()
	err := <-res
	requireOneOutcome(t, err, actor.MayHaveExecuted)
	require.ErrorIs(t, err, actor.ErrNodeDown)
	require.NotErrorIs(t, err, actor.ErrUnreachable)
}

// TestDeclaredOutcomesTravel: a handler declares its outcome with
// NotExecutedError / MayHaveExecutedError; the declaration wins over
// what it wraps, for Outcome, errors.Is and the text alike.
func TestDeclaredOutcomesTravel(t *testing.T) {
	s := newShop(t)
	require.NoError(t, s.orders.Register("declare", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		switch arg.(*testpb.Echo).Text {
		case "sold_out":
			return nil, actor.NotExecutedError(actor.Reject("sold_out", "nothing left"))
		case "half_done":
			// orders wrote its order, then stock could not be reached.
			_, err := s.orders.Call(ctx, "nowhere", "reserve", &testpb.Echo{})
			return nil, actor.MayHaveExecutedError(fmt.Errorf("order saved, stock not reserved: %w", err))
		}
		return nil, errors.New("unknown")
	}))

	err := s.place(t, "declare", "sold_out")
	requireOneOutcome(t, err, actor.NotExecuted)
	require.Equal(t, "sold_out", actor.ErrorCode(err), "a declared outcome keeps the handler's code")
	require.ErrorIs(t, err, actor.Reject("sold_out", ""))
	require.Contains(t, err.Error(), "nothing left")

	err = s.place(t, "declare", "half_done")
	requireOneOutcome(t, err, actor.MayHaveExecuted)
	require.NotErrorIs(t, err, actor.ErrUnreachable, "the declaration hides the downstream not-executed sentinel")
	require.Contains(t, err.Error(), "order saved, stock not reserved")
	var re *actor.RemoteError
	require.False(t, errors.As(err, &re), "not a rejection: %v", err)

	// A rejection coded like a sentinel is a rejection, not the sentinel.
	require.NoError(t, s.orders.Register("fake_code", func(context.Context, proto.Message) (proto.Message, error) {
		return nil, actor.Reject("unreachable", "a code of our own")
	}))
	_, err = s.api.Call(ctxT(t, 10*time.Second), "orders", "fake_code", &testpb.Echo{})
	requireOneOutcome(t, err, actor.Executed)
	require.NotErrorIs(t, err, actor.ErrUnreachable)
}

// TestAHandlerWhoseCtxEnded: a handler that returns ctx.Err() once its
// ctx ended gives its caller one outcome, MayHaveExecuted matching the
// context error, whichever clock fired first; NotExecutedError(ctx.Err())
// says the handler did nothing.
func TestAHandlerWhoseCtxEnded(t *testing.T) {
	s := newShop(t)
	require.NoError(t, s.orders.Register("give_up", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		// The handler's own, shorter deadline: its clock fires first.
		ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		<-ctx.Done()
		if arg.(*testpb.Echo).Text == "nothing_done" {
			return nil, actor.NotExecutedError(ctx.Err())
		}
		return nil, ctx.Err()
	}))
	for range 3 { // the same every time
		err := s.place(t, "give_up", "")
		requireOneOutcome(t, err, actor.MayHaveExecuted)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, "context_deadline", actor.ErrorCode(err))
	}
	err := s.place(t, "give_up", "nothing_done")
	requireOneOutcome(t, err, actor.NotExecuted)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// The caller's deadline fires on both sides: the same outcome and
	// error, whichever side's answer counts.
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := s.api.Call(ctx, "orders", "place", &testpb.Echo{Text: "sleep"})
		cancel()
		require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err), "%v", err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
}

// TestDeferredReplyIsRespond: Defer().Reply(nil, err) gives the caller
// what RespondError(err) would, across the wire.
func TestDeferredReplyIsRespond(t *testing.T) {
	s := newShop(t)
	answer := func(text string) (proto.Message, error) {
		switch text {
		case "ok":
			return &testpb.Echo{Text: "done"}, nil
		case "reject":
			return nil, actor.Reject("sold_out", "nothing left")
		case "not_executed":
			return nil, actor.NotExecutedError(errors.New("closed for the night"))
		}
		_, err := s.orders.Call(context.Background(), "stock", "reserve", &testpb.Echo{}) // no such function
		return nil, err
	}
	for _, deferred := range []bool{false, true} {
		name := fmt.Sprintf("clerk%v", deferred)
		_, err := s.orders.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
			e, ok := c.Message().(*testpb.Echo)
			if !ok {
				return
			}
			if !deferred {
				msg, err := answer(e.Text)
				if err != nil {
					c.RespondError(err)
				} else {
					c.Respond(msg)
				}
				return
			}
			r := c.Defer()
			go func() { r.Reply(answer(e.Text)) }()
		}), name)
		require.NoError(t, err)
	}
	ask := func(name, text string) (proto.Message, error) {
		v, err := s.api.RequestNamed(ctxT(t, 10*time.Second), "orders", name, &testpb.Echo{Text: text})
		if err != nil {
			return nil, err
		}
		return v.(proto.Message), nil
	}
	for _, text := range []string{"ok", "reject", "not_executed", "downstream"} {
		direct, derr := ask("clerkfalse", text)
		later, lerr := ask("clerktrue", text)
		if derr == nil {
			require.NoError(t, lerr)
			require.True(t, proto.Equal(direct, later))
			continue
		}
		require.Error(t, lerr, text)
		require.Equal(t, actor.Outcome(derr), actor.Outcome(lerr), "%s: %v / %v", text, derr, lerr)
		require.Equal(t, actor.ErrorCode(derr), actor.ErrorCode(lerr), text)
		require.Equal(t, strings.ReplaceAll(derr.Error(), "clerkfalse", "clerktrue"), lerr.Error())
		requireOneOutcome(t, lerr, map[string]actor.Execution{
			"reject": actor.Executed, "not_executed": actor.NotExecuted, "downstream": actor.NotExecuted,
		}[text])
	}
}

// TestAnUnregisteredReplyTypeNamesTheCaller: the callee ran, and its
// answer is of a type the caller never registered: the error names the
// caller's node as the one lacking it.
func TestAnUnregisteredReplyTypeNamesTheCaller(t *testing.T) {
	s := newShop(t)
	require.NoError(t, s.stock.RegisterTypes(&testpb.Unknown{}))
	require.NoError(t, s.stock.Register("odd", func(context.Context, proto.Message) (proto.Message, error) {
		return &testpb.Unknown{Text: "?"}, nil
	}))
	_, err := s.orders.Call(ctxT(t, 10*time.Second), "stock", "odd", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrBadMessage)
	require.ErrorContains(t, err, `unregistered message type "mailroom.testpb.Unknown" on node orders`)
	require.Equal(t, actor.Executed, actor.Outcome(err), "stock ran the call: %v", err)
}
