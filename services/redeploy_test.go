package services

import (
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// TestRedeployUnderNewName: the provider goes away and comes back under
// another node name while a call is retrying. "No such service" is
// transient within the budget, and the provider is re-resolved before
// every attempt, so the call reaches the new node.
func TestRedeployUnderNewName(t *testing.T) {
	c := newClient(t, "client", Config{})
	const spec = "geo@1.2.0;b30s,p10ms,x100ms;echo"
	old := c.provider(t, "geo-7f9c", nil, spec)
	res, err := c.svc.Call(ctxT(t, 10*time.Second), "geo", Major(1), "echo", &testpb.Echo{Text: "before"})
	require.NoError(t, err)
	require.Equal(t, "geo-7f9c", res.(*testpb.Echo).From)

	require.NoError(t, old.Stop(20*time.Second))
	eventually(t, "geo-7f9c gone", func() bool { return len(c.svc.Providers("geo")) == 0 })

	done := make(chan error, 1)
	var from string
	go func() {
		res, err := c.svc.Call(ctxT(t, time.Minute), "geo", Major(1), "echo", &testpb.Echo{Text: "during"})
		if err == nil {
			from = res.(*testpb.Echo).From
		}
		done <- err
	}()
	eventually(t, "the call retrying on no_service", func() bool { return c.svc.RetriesFor("geo", "no_service") >= 2 })
	c.provider(t, "geo-b21d", nil, spec)
	require.NoError(t, <-done)
	require.Equal(t, "geo-b21d", from)
}
