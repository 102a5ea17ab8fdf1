package idempotency

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// freeAddr is a loopback address nobody listens on now.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestTheCalleeKilledMidHandler: a child node runs a keyed call's handler
// and is SIGKILLed in the middle; the caller gets may have executed. The
// child restarts (a new incarnation, the same address and, for Dir, the
// same directory) and the caller asks Status about the old incarnation:
// with Dir, the killed call is Interrupted, a finished one Done with its
// reply, an unknown one never ran (and is fenced: its late copy is
// refused, not executed); with Memory, the answer is ErrRecordLost, with
// its code.
func TestTheCalleeKilledMidHandler(t *testing.T) {
	for _, store := range []string{"dir", "memory"} {
		t.Run(store, func(t *testing.T) {
			marks := t.TempDir()
			name := "idem-kill-" + store
			o := testnode.Options{Name: name, Listen: freeAddr(t), Extra: map[string]string{
				"store": store, "dir": t.TempDir(), "marks": marks,
			}}
			child := testnode.Start(t, o)
			caller, _ := testnode.Local(t, testnode.Options{Name: "idem-caller-" + store, Seeds: []string{name + "=" + o.Listen}})
			ctx := ctxT(t)

			done, err := caller.Call(WithKey(ctx, "job-done"), name, "idem.echo", &testpb.Echo{Text: "before"})
			require.NoError(t, err)
			errc := make(chan error, 1)
			go func() {
				_, err := caller.Call(WithKey(ctx, "job-killed"), name, "idem.hang", &testpb.Echo{})
				errc <- err
			}()
			eventually(t, 10*time.Second, "the handler running", func() bool {
				_, err := os.Stat(filepath.Join(marks, "job-killed"))
				return err == nil
			})
			st, err := Status(ctx, caller, name, "job-killed", child.Incarnation)
			require.NoError(t, err)
			require.Equal(t, Running, st.State, "asked while it runs")
			old := child.Incarnation
			child.Kill()
			err = <-errc
			require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err), "%v", err)

			child = testnode.Start(t, o)
			require.NotEqual(t, old, child.Incarnation)
			var lastErr error
			eventually(t, 20*time.Second, "the restarted node answering", func() bool {
				_, lastErr = Status(ctx, caller, name, "job-killed", old)
				return actor.Outcome(lastErr) != actor.NotExecuted || lastErr == nil
			})
			if store == "memory" {
				require.ErrorIs(t, lastErr, ErrRecordLost)
				require.Equal(t, "idempotency_record_lost", actor.ErrorCode(lastErr))
				require.Contains(t, lastErr.Error(), "lost with the incarnation")
				_, err = Status(ctx, caller, name, "job-done", old)
				require.ErrorIs(t, err, ErrRecordLost, "a finished call of the old incarnation is lost too")
				return
			}
			require.NoError(t, lastErr)
			st, err = Status(ctx, caller, name, "job-killed", old)
			require.NoError(t, err)
			require.Equal(t, Interrupted, st.State)
			require.Equal(t, old, st.Inc)
			_, err = caller.Call(WithKey(ctx, "job-killed"), name, "idem.hang", &testpb.Echo{})
			require.ErrorIs(t, err, ErrInterrupted, "not run again")
			require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err), "%v", err)

			st, err = Status(ctx, caller, name, "job-done", old)
			require.NoError(t, err)
			require.Equal(t, Done, st.State)
			m, err := st.Result()
			require.NoError(t, err)
			require.Equal(t, done.(*testpb.Echo).Text, m.(*testpb.Echo).Text)
			again, err := caller.Call(WithKey(ctx, "job-done"), name, "idem.echo", &testpb.Echo{Text: "after"})
			require.NoError(t, err)
			require.Equal(t, "ran before", again.(*testpb.Echo).Text, "the restarted node gives the recorded reply")

			st, err = Status(ctx, caller, name, "job-never", old)
			require.NoError(t, err)
			require.Equal(t, NeverRan, st.State)
			_, err = caller.Call(WithKey(ctx, "job-never"), name, "idem.echo", &testpb.Echo{Text: "late"})
			require.ErrorIs(t, err, ErrFenced)
			require.Equal(t, actor.NotExecuted, actor.Outcome(err), "%v", err)
			r, err := caller.Call(ctx, name, "idem.echo", &testpb.Echo{Text: "count"})
			require.NoError(t, err)
			require.Equal(t, int64(1), r.(*testpb.Echo).N, "this incarnation ran only this unkeyed call")
			r, err = caller.Call(WithAttempt(WithKey(ctx, "job-never"), 1), name, "idem.echo", &testpb.Echo{Text: "retry"})
			require.NoError(t, err, "the next attempt runs")
			require.Equal(t, int64(2), r.(*testpb.Echo).N)
		})
	}
}

// TestAFloodOfKeysIsRefused: a peer sends calls with ever new keys to a
// node whose store holds 64: the first 64 run, the rest are refused with
// ErrStoreFull, not executed, without running; a key over MaxKeyBytes is
// ErrBadKey; a flood of Status calls (each would fence a key) is refused
// alike; and the node serves the recorded keys and unkeyed calls still.
func TestAFloodOfKeysIsRefused(t *testing.T) {
	const max = 64
	name := "idem-flood"
	o := testnode.Options{Name: name, Listen: freeAddr(t), Extra: map[string]string{"store": "memory", "maxkeys": strconv.Itoa(max), "marks": t.TempDir()}}
	child := testnode.Start(t, o)
	caller, _ := testnode.Local(t, testnode.Options{Name: "idem-flooder", Seeds: []string{name + "=" + o.Listen}})
	ctx := ctxT(t)
	full := 0
	for i := range 500 {
		_, err := caller.Call(WithKey(ctx, "flood-"+strconv.Itoa(i)), name, "idem.echo", &testpb.Echo{Text: "x"})
		if i < max {
			require.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, ErrStoreFull)
		require.Equal(t, actor.NotExecuted, actor.Outcome(err), "%v", err)
		full++
	}
	require.Equal(t, 500-max, full)
	for i := range 100 {
		_, err := Status(ctx, caller, name, "status-flood-"+strconv.Itoa(i), child.Incarnation)
		require.ErrorIs(t, err, ErrStoreFull)
	}
	_, err := caller.Call(WithKey(ctx, strings.Repeat("k", MaxKeyBytes+1)), name, "idem.echo", &testpb.Echo{})
	require.ErrorIs(t, err, ErrBadKey)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err), "%v", err)

	r, err := caller.Call(ctx, name, "idem.echo", &testpb.Echo{Text: "unkeyed"})
	require.NoError(t, err)
	require.Equal(t, int64(max+1), r.(*testpb.Echo).N, "only the first 64 keyed calls ran")
	r, err = caller.Call(WithKey(ctx, "flood-3"), name, "idem.echo", &testpb.Echo{Text: "again"})
	require.NoError(t, err)
	require.Equal(t, int64(4), r.(*testpb.Echo).N, "a recorded key still answers")
}
