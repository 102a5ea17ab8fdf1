package services

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

func TestVersionAndConstraint(t *testing.T) {
	v, err := ParseVersion("2.3.1")
	require.NoError(t, err)
	require.Equal(t, Version{2, 3, 1}, v)
	for _, bad := range []string{"", "2.x", "1.2.3.4", "-1", "02"} {
		_, err := ParseVersion(bad)
		require.Error(t, err, bad)
	}
	require.True(t, Major(2).Allows(MustVersion("2.0.0")))
	require.True(t, Major(2).Allows(MustVersion("2.9.3")))
	require.False(t, Major(2).Allows(MustVersion("3.0.0")))
	require.False(t, Major(2).Allows(MustVersion("1.9.9")))
	require.True(t, AtLeast("2.3").Allows(MustVersion("2.3.0")))
	require.False(t, AtLeast("2.3").Allows(MustVersion("2.2.9")))
	c, err := ParseConstraint("^2.3")
	require.NoError(t, err)
	require.Equal(t, "^2.3.0", c.String())
}

// TestMergeFieldByField pins the NETZlive bug: a caller that overrides
// one retry field keeps the provider's other fields (a shallow merge
// would drop them and fall back to library defaults).
func TestMergeFieldByField(t *testing.T) {
	provider := RetryPolicy{Budget: 5 * time.Second, Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, MaxAttempts: 4}
	node := RetryPolicy{Budget: 9 * time.Second}
	var co callOptions
	WithBackoff(20 * time.Millisecond)(&co)
	got := co.retry.over(provider).over(node).over(DefaultRetryPolicy())
	require.Equal(t, RetryPolicy{Budget: 5 * time.Second, Backoff: 20 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, MaxAttempts: 4}, got)

	// WithRetry overlays its non-zero fields only.
	co = callOptions{}
	WithRetry(RetryPolicy{MaxAttempts: 2})(&co)
	got = co.retry.over(provider).over(DefaultRetryPolicy())
	require.Equal(t, RetryPolicy{Budget: 5 * time.Second, Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, MaxAttempts: 2}, got)

	// Nothing set anywhere: the package defaults; the node's defaults
	// fill what the provider leaves open.
	got = RetryPolicy{}.over(RetryPolicy{Backoff: time.Millisecond}).over(node).over(DefaultRetryPolicy())
	d := DefaultRetryPolicy()
	require.Equal(t, RetryPolicy{Budget: 9 * time.Second, Backoff: time.Millisecond, MaxBackoff: d.MaxBackoff, MaxAttempts: d.MaxAttempts}, got)
}

func TestPauses(t *testing.T) {
	p := RetryPolicy{Backoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, p.pause(n))
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 400 * ms, 400 * ms}, got)
	// A cap below the first pause does not shorten it.
	require.Equal(t, 100*ms, RetryPolicy{Backoff: 100 * ms, MaxBackoff: 10 * ms}.pause(3))
}

func TestPolicyValidation(t *testing.T) {
	require.ErrorContains(t, RetryPolicy{Budget: -1}.validate("X"), "X.Budget")
	require.ErrorContains(t, RetryPolicy{MaxAttempts: -2}.validate("X"), "X.MaxAttempts")
	require.NoError(t, RetryPolicy{MaxAttempts: Unlimited}.validate("X"))
	s := Service{Name: "a b", Version: MustVersion("1")}
	require.ErrorContains(t, s.validate(), "Service.Name")
	s = Service{Name: "ok", Functions: []Function{{Name: "f"}}}
	require.ErrorContains(t, s.validate(), "Service.Functions[0].Handler")
	_, err := Config{DrainAckWait: -1}.withDefaults(nil)
	require.ErrorContains(t, err, "Config.DrainAckWait")
}

func TestMetaRoundTrip(t *testing.T) {
	r := &record{
		Name: "search", Version: MustVersion("2.3.1"),
		Defaults: Defaults{Retry: RetryPolicy{Budget: 10 * time.Second, Backoff: 50 * time.Millisecond, MaxAttempts: Unlimited}, Deadline: 2 * time.Second},
		Fns:      []fnRecord{{Name: "query", Idempotent: true}, {Name: "suggest", Idempotent: true, Deadline: 200 * time.Millisecond}, {Name: "reindex"}},
	}
	require.Equal(t, "search@2.3.1;b10s,p50ms,a-1,d2s;query:i,suggest:i:d200ms,reindex", r.encode())
	meta, err := encodeMeta([]*record{r}, 7)
	require.NoError(t, err)
	require.Equal(t, "1:7", meta["sv"])
	marker, recs, errs := decodeMeta(meta)
	require.True(t, marker)
	require.Empty(t, errs)
	require.Equal(t, []*record{r}, recs)
	require.Equal(t, uint64(7), markerSeq(meta["sv"]))

	// A record longer than one Consul value is split and joined again.
	big := &record{Name: "big", Version: MustVersion("1")}
	for i := range 60 {
		big.Fns = append(big.Fns, fnRecord{Name: strings.Repeat("f", 20) + string(rune('a'+i%26)) + strings.Repeat("x", i%3)})
	}
	meta, err = encodeMeta([]*record{r, big}, 1)
	require.NoError(t, err)
	require.Contains(t, meta, "s1_1")
	for k, v := range meta {
		require.LessOrEqual(t, len(v), 512, k)
		require.Regexp(t, `^[A-Za-z0-9_-]+$`, k)
	}
	_, recs, errs = decodeMeta(meta)
	require.Empty(t, errs)
	require.Equal(t, []*record{r, big}, recs)

	// A missing chunk or a bad record is reported, the rest still read.
	delete(meta, "s1_1")
	meta["s2"] = "junk"
	_, recs, errs = decodeMeta(meta)
	require.Equal(t, []*record{r}, recs)
	require.Len(t, errs, 2)

	// Too many services for Consul's meta: the error names the service.
	var many []*record
	for i := range 60 {
		many = append(many, &record{Name: "svc" + strings.Repeat("x", i), Version: MustVersion("1"), Fns: []fnRecord{{Name: "f"}}})
	}
	_, err = encodeMeta(many, 1)
	require.ErrorContains(t, err, "svc"+strings.Repeat("x", 58)+"@1.0.0")
}

// TestCallErrorOutcome: when an earlier attempt may have executed and the
// last did not, the whole call reads as may-have-executed, and errors.Is
// agrees (the last error's not-executed sentinel no longer matches); the
// last error and the caller's ctx error stay reachable.
func TestCallErrorOutcome(t *testing.T) {
	c := &callState{s: &Services{stats: newStats()}, service: "ledger", want: Major(1), fn: "get", mayHave: true}
	c.pol.Budget = time.Second
	c.attempts = []Attempt{{Node: "a"}, {Node: "b"}}
	err := c.fail(ReasonContext, actor.NewError("call", "b", 1, "get", actor.ErrNotSent), context.Canceled)
	require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))
	require.NotErrorIs(t, err, actor.ErrNotSent, "errors.Is must not say not executed")
	var oe *actor.OutcomeError
	require.ErrorAs(t, err, &oe)
	require.ErrorIs(t, oe.Err, actor.ErrNotSent, "the last error as it was")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "not sent: not executed; safe to retry [2 attempts, the last 0s after the first; stopped: the caller's ctx ended; an earlier attempt may have executed: check before retrying]")

	// Without an earlier may-have-executed attempt the last one decides.
	c.mayHave = false
	err = c.fail(ReasonBudget, actor.NewError("call", "b", 1, "get", actor.ErrNotSent), nil)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	require.NotContains(t, err.Error(), "earlier attempt")
}
