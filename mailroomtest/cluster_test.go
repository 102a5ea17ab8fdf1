package mailroomtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/mailroomtest"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

var echo = actor.PropsFromFunc(func(c *actor.Context) {
	if m, ok := c.Message().(*wrapperspb.StringValue); ok {
		c.Respond(wrapperspb.String(c.System().Name() + ": " + m.Value))
	}
})

func startEchoes(t *testing.T, nodes int) *mailroomtest.Cluster {
	c := mailroomtest.StartCluster(t, mailroomtest.ClusterConfig{Nodes: nodes, Types: []proto.Message{&wrapperspb.StringValue{}}})
	for _, n := range c.Nodes() {
		_, err := n.System().SpawnNamed(echo, "echo")
		require.NoError(t, err)
	}
	return c
}

func ask(t *testing.T, c *mailroomtest.Cluster, from, to string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Node(from).System().RequestNamed(ctx, to, "echo", wrapperspb.String(from))
	if err != nil {
		return "", err
	}
	return res.(*wrapperspb.StringValue).Value, nil
}

// A killed node's actors are Terminated for their remote watchers, and
// its restart is a new incarnation that answers at the same name.
func TestKillThenRestartIsANewIncarnation(t *testing.T) {
	c := startEchoes(t, 2)
	old := c.Node("n2").System().Incarnation()
	target, ok := c.Node("n2").System().Lookup("echo")
	require.True(t, ok)
	probe, err := mailroomtest.NewProbe(c.Node("n1").System())
	require.NoError(t, err)
	require.NoError(t, probe.Watch(target))
	got, err := ask(t, c, "n1", "n2")
	require.NoError(t, err)
	require.Equal(t, "n2: n1", got)

	require.NoError(t, c.Kill("n2"))
	require.Nil(t, c.Node("n2"))
	_, err = c.Restart("n1")
	require.Error(t, err, "n1 is running")
	term, err := probe.ExpectTerminated(target, 20*time.Second)
	require.NoError(t, err)
	require.Error(t, term.Reason, "a killed node's actor did not stop normally")

	n2, err := c.Restart("n2")
	require.NoError(t, err)
	require.NotEqual(t, old, n2.System().Incarnation())
	_, err = n2.System().SpawnNamed(echo, "echo")
	require.NoError(t, err)
	got, err = ask(t, c, "n1", "n2")
	require.NoError(t, err)
	require.Equal(t, "n2: n1", got)
}

// A partition cuts only the links between sides, and a dial across it is
// refused until Heal.
func TestPartitionCutsOnlyBetweenSides(t *testing.T) {
	c := startEchoes(t, 3)
	require.NoError(t, c.Partition([]string{"n1"}, []string{"n2", "n3"}))
	_, err := ask(t, c, "n1", "n2")
	require.Error(t, err)
	_, err = ask(t, c, "n3", "n1")
	require.Error(t, err)
	require.Error(t, c.Link("n1", "n2"), "a dial across the partition")
	got, err := ask(t, c, "n2", "n3")
	require.NoError(t, err)
	require.Equal(t, "n3: n2", got)

	c.Heal()
	require.NoError(t, c.Link("n2", "n1"))
	// The first request may still meet a link the partition is closing.
	require.Eventually(t, func() bool {
		got, err = ask(t, c, "n2", "n1")
		return err == nil
	}, 20*time.Second, 5*time.Millisecond)
	require.Equal(t, "n1: n2", got)

	require.Error(t, c.Partition([]string{"n9"}), "an unknown node")
	require.Error(t, c.Delay("n1", "n9", time.Second))
	require.Error(t, c.Kill("n9"))
}

// A delayed link carries requests late (both ways), and an undelayed one
// is unaffected.
func TestDelayHoldsEachWrite(t *testing.T) {
	c := startEchoes(t, 2)
	require.NoError(t, c.Delay("n1", "n2", 100*time.Millisecond))
	start := time.Now()
	_, err := ask(t, c, "n1", "n2")
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "a write each way, each delayed")
	require.NoError(t, c.Delay("n1", "n2", 0))
}

// The probe's expectations fail with a reason when what they expect does
// not come, and take messages in order with their sender.
func TestProbeExpectations(t *testing.T) {
	sys, err := actor.Start(actor.Config{Name: "n", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	defer func() { require.NoError(t, sys.Stop(context.Background())) }()
	p, err := mailroomtest.NewProbe(sys)
	require.NoError(t, err)

	_, err = p.ExpectMessage("x", 5*time.Millisecond)
	require.ErrorIs(t, err, mailroomtest.ErrNoMessage)

	sender, err := sys.SpawnFunc(func(c *actor.Context) {
		if s, ok := c.Message().(string); ok {
			c.Send(p.PID(), s)
		}
	})
	require.NoError(t, err)
	sys.Send(sender, "a")
	sys.Send(sender, "b")
	from, err := p.ExpectMessage("a", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, sender, from)
	_, err = p.ExpectMessage("a", 5*time.Second)
	require.ErrorContains(t, err, "got string b")

	sys.Send(sender, "c")
	err = p.ExpectNoMessage(5 * time.Second)
	require.ErrorContains(t, err, "got string c")

	_, err = p.ExpectTerminated(sender, 5*time.Millisecond)
	require.True(t, errors.Is(err, mailroomtest.ErrNoMessage))
	sys.Send(sender, "d")
	_, err = p.ExpectTerminated(sender, 5*time.Second)
	require.ErrorContains(t, err, "want Terminated")

	require.NoError(t, p.Watch(sender))
	sys.StopActor(sender)
	term, err := p.ExpectTerminated(sender, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, term.Reason)
	p.Stop()
}
