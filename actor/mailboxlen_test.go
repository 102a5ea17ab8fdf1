package actor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMailboxLenCountsWhatIsQueuedAndTheBatchInHand: a smallest-mailbox
// router must not see an actor busy with a batch as empty, nor a gone
// actor (or another node's PID) as one with room.
func TestMailboxLenCountsWhatIsQueuedAndTheBatchInHand(t *testing.T) {
	sys := newSystem(t, "n1")
	gate, holding := make(chan struct{}), make(chan int, 1)
	pid, err := sys.SpawnFunc(func(c *Context) {
		if n, ok := c.Message().(int); ok && n == 0 {
			holding <- n
			<-gate
		}
	})
	require.NoError(t, err)
	require.Equal(t, 0, sys.MailboxLen(pid), "idle")

	sys.Send(pid, 0)
	<-holding // the actor holds message 0 (a batch of one) at the gate
	require.Equal(t, 1, sys.MailboxLen(pid), "the batch in hand counts")
	for i := 1; i <= 3; i++ {
		sys.Send(pid, i)
	}
	require.Equal(t, 4, sys.MailboxLen(pid), "in hand and queued")
	close(gate)
	eventually(t, "the actor back for more, nothing waiting", func() bool { return sys.MailboxLen(pid) == 0 })

	require.NoError(t, sys.StopActorWait(ctxT(t), pid))
	require.Equal(t, -1, sys.MailboxLen(pid), "gone")
	require.Equal(t, -1, sys.MailboxLen(PID{Node: "elsewhere", Incarnation: sys.Incarnation(), ID: pid.ID}), "not this node's")
}
