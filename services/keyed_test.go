package services

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/idempotency"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// ids are the ids node's "append" and "slow" recorded in dir.
func ids(t *testing.T, dir, node string) []string {
	b, err := os.ReadFile(filepath.Join(dir, node+".ids"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(b))
}

// TestKeyedCallsSettleMayHaveExecuted: a keyed function (":k", a Guard)
// whose declared deadline passes while its handler goes on is not given
// up with "check before retrying": a call carrying a key asks the
// provider's Status until the running attempt is done and returns its
// recorded reply; the handler ran once. Without a key the same failure
// stops the call (ReasonNotIdempotent). A provider killed mid-call with
// an in-memory guard cannot settle the key: ReasonUnsettled, may have
// executed.
func TestKeyedCallsSettleMayHaveExecuted(t *testing.T) {
	dir := t.TempDir()
	c := newClient(t, "client", Config{})
	const spec = "jobs@1.0.0;b5s,p20ms,x100ms;slow:k:d100ms"
	p := c.provider(t, "jobs-1", map[string]string{"dir": dir, "work": "600ms"}, spec)
	pol, _, err := c.svc.Effective("jobs", Major(1), "slow")
	require.NoError(t, err)
	require.False(t, pol.Idempotent)

	t.Run("keyed", func(t *testing.T) {
		ctx := idempotency.WithKey(ctxT(t, 20*time.Second), "job-1")
		res, err := c.svc.Call(ctx, "jobs", Major(1), "slow", &testpb.Echo{Text: "job-1"})
		require.NoError(t, err, "settled by the provider's Status")
		require.Equal(t, "job-1", res.(*testpb.Echo).Text)
		require.Equal(t, "jobs-1", res.(*testpb.Echo).From)
		require.Equal(t, []string{"job-1"}, ids(t, dir, "jobs-1"), "the handler ran once")
		// The same key again: the recorded reply, no run.
		res, err = c.svc.Call(ctx, "jobs", Major(1), "slow", &testpb.Echo{Text: "job-1"})
		require.NoError(t, err)
		require.Equal(t, "job-1", res.(*testpb.Echo).Text)
		require.Equal(t, []string{"job-1"}, ids(t, dir, "jobs-1"))
	})
	t.Run("without a key", func(t *testing.T) {
		_, err := c.svc.Call(ctxT(t, 20*time.Second), "jobs", Major(1), "slow", &testpb.Echo{Text: "job-2"})
		require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err))
		var ce *CallError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, ReasonNotIdempotent, ce.Reason)
		eventually(t, "job-2's handler ending", func() bool { return len(ids(t, dir, "jobs-1")) == 2 })
	})
	t.Run("provider killed", func(t *testing.T) {
		ctx := idempotency.WithKey(ctxT(t, 20*time.Second), "job-3")
		errc := make(chan error, 1)
		go func() {
			_, err := c.svc.Call(ctx, "jobs", Major(1), "slow", &testpb.Echo{Text: "job-3"}, WithBudget(1500*time.Millisecond))
			errc <- err
		}()
		eventually(t, "job-3 running", func() bool {
			pd := c.svc.Pending()
			return len(pd) == 1 && pd[0].Count == 1
		})
		p.Kill()
		err := <-errc
		require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err), "%v", err)
		var ce *CallError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, ReasonUnsettled, ce.Reason, "%v", err)
		require.ErrorContains(t, err, `status of key "job-3"`)
		t.Log(err)
	})
}

// TestKeyedFlagIsAnnounced: ":k" round-trips in the announced record.
func TestKeyedFlagIsAnnounced(t *testing.T) {
	r, err := decodeRecord("jobs@1.2.0;;slow:k:d100ms,plain:i")
	require.NoError(t, err)
	require.True(t, r.Fns[0].Keyed)
	require.False(t, r.Fns[1].Keyed)
	require.Equal(t, "jobs@1.2.0;;slow:k:d100ms,plain:i", r.encode())
}

// TestKeyedCallRerunAfterTheProviderRestarts: the provider (a durable
// guard whose handlers may run again, RerunInterrupted) is SIGKILLed in
// the middle of a keyed call and restarted on its address. The caller
// asks Status until the new incarnation answers: never ran (the
// interrupted claim is fenced), so the call is made again with the next
// attempt number, which the fence lets run: the call succeeds and the
// work is recorded once.
func TestKeyedCallRerunAfterTheProviderRestarts(t *testing.T) {
	dir := t.TempDir()
	c := newClient(t, "client", Config{})
	const spec = "jobs@1.0.0;b20s,p20ms,x200ms;slow:k"
	ln := freeLoopback(t)
	o := testnode.Options{Name: "jobs-r", Listen: ln, Extra: map[string]string{
		"provide": spec, "dir": dir, "work": "300ms", "guarddir": filepath.Join(dir, "guard"),
	}}
	p := testnode.Start(t, o)
	require.NoError(t, c.node.Connect(ctxT(t, 10*time.Second), o.Name, ln))
	c.waitProvider(t, "jobs", o.Name, p.Incarnation)

	ctx := idempotency.WithKey(ctxT(t, 30*time.Second), "job-r")
	type result struct {
		res *testpb.Echo
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.svc.Call(ctx, "jobs", Major(1), "slow", &testpb.Echo{Text: "job-r"})
		r := result{err: err}
		if err == nil {
			r.res = res.(*testpb.Echo)
		}
		done <- r
	}()
	eventually(t, "job-r running", func() bool {
		pd := c.svc.Pending()
		return len(pd) == 1 && pd[0].Count == 1
	})
	p.Kill()
	p = testnode.Start(t, o)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, "job-r", r.res.Text)
	require.Equal(t, []string{"job-r"}, ids(t, dir, o.Name), "the killed attempt did no work; the rerun did it once")
	st, err := idempotency.Status(ctxT(t, 10*time.Second), c.sys, o.Name, "job-r", p.Incarnation)
	require.NoError(t, err)
	require.Equal(t, idempotency.Done, st.State)
}

// freeLoopback is a loopback address nobody listens on now.
func freeLoopback(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}
