package pidpb

import (
	"testing"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRoundTrip(t *testing.T) {
	pid := actor.PID{Node: "orders-1", Incarnation: 0xfedcba9876543210, ID: 42}
	m := From(pid)
	require.Equal(t, pid, m.PID())

	b, err := proto.Marshal(m)
	require.NoError(t, err)
	var back PID
	require.NoError(t, proto.Unmarshal(b, &back))
	require.Equal(t, pid, back.PID())

	vt, err := m.MarshalVT()
	require.NoError(t, err)
	require.Equal(t, b, vt, "the fast codec writes the same bytes")
	var backVT PID
	require.NoError(t, backVT.UnmarshalVT(b))
	require.Equal(t, pid, backVT.PID())
}

func TestZeroIsUnset(t *testing.T) {
	require.Nil(t, From(actor.PID{}))
	var unset *PID
	require.Equal(t, actor.PID{}, unset.PID())
	require.True(t, (&PID{}).PID().IsZero())
}
