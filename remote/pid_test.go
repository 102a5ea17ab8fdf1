package remote_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/actor/pidpb"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/stretchr/testify/require"
)

// A PID crosses the wire alone, with no RegisterTypes on either side, and
// comes back as the same PID: its incarnation included.
func TestABarePIDCrossesTheWire(t *testing.T) {
	_, bn := testnode.Local(t, testnode.Options{Name: "pid-b"})
	a, _ := testnode.Local(t, testnode.Options{Name: "pid-a", Seeds: []string{"pid-b=" + bn.Addr()}})
	b := bn.System()
	self, err := b.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if asker, ok := c.Message().(*pidpb.PID); ok {
			if asker.PID().Node != "pid-a" {
				c.RespondError(fmt.Errorf("asked by %s", asker.PID()))
				return
			}
			c.Respond(pidpb.From(c.Self()))
		}
	}), "whoami")
	require.NoError(t, err)

	h := a.NewSender()
	got, err := actor.RequestNamedAs[*pidpb.PID](ctxT(t, 10*time.Second), h, "pid-b", "whoami", pidpb.From(h.PID()))
	require.NoError(t, err)
	require.Equal(t, self, got.PID())
	require.Equal(t, b.Incarnation(), got.PID().Incarnation)
}
