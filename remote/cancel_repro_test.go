package remote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
)

// A native call cancelled right after it was queued on the link must not
// be reported "not executed" if its frame can still be written: whatever
// the caller is told, "not executed" must mean the callee never runs it.
func TestCancelledCallNotExecutedMeansNeverRun(t *testing.T) {
	sys, _, _ := pair(t)
	sleeping := func() bool {
		v, err := sys.Call(ctxT(t, 5*time.Second), "b", "stats", &testpb.Echo{})
		return err == nil && !strings.HasSuffix(v.(*testpb.Echo).Text, "sleeping=0")
	}
	for i := range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := sys.Call(ctx, "b", "sleep", &testpb.Sleep{Millis: 2000})
			done <- err
		}()
		cancel()
		err := <-done
		if actor.Outcome(err) != actor.NotExecuted {
			eventually(t, "b idle", func() bool { return !sleeping() })
			continue
		}
		deadline := time.Now().Add(50 * time.Millisecond)
		for time.Now().Before(deadline) {
			if sleeping() {
				t.Fatalf("attempt %d: Call returned %q (not executed), yet b runs it", i, err)
			}
		}
	}
}
