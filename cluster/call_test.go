package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestStaticCallAs: Call reaches the grain on its owner from every node
// with a protobuf argument and a typed result; a result of another type
// is ErrReplyType, executed (the grain handled it).
func TestStaticCallAs(t *testing.T) {
	cs := staticNodes(t, 3, newStore(), 0)
	for i := range 10 {
		id := "caller-" + strconv.Itoa(i)
		owner, _ := cs[0].Owner("account", id)
		for j, c := range cs {
			r, err := CallAs[*testpb.Echo](ctxT(t, 10*time.Second), c, c.sys, "account", id, echo("add", 1))
			require.NoError(t, err)
			require.Equal(t, owner, r.From)
			require.EqualValues(t, j+1, r.N)
		}
	}
	m, err := cs[1].Call(ctxT(t, 10*time.Second), cs[1].sys, "account", "caller-0", echo("get", 0))
	require.NoError(t, err)
	require.EqualValues(t, 3, m.(*testpb.Echo).N)

	_, err = CallAs[*wrapperspb.StringValue](ctxT(t, 10*time.Second), cs[2], cs[2].sys, "account", "caller-0", echo("get", 0))
	require.ErrorIs(t, err, actor.ErrReplyType)
	require.Equal(t, actor.Executed, actor.Outcome(err), "%v", err)
	require.Contains(t, err.Error(), "grain account/caller-0")
}

// TestCallKillOwnerStatic: a Call pinned to an activation on a child
// process fails within 100 ms of the child's SIGKILL as may have
// executed; the next Call reaches a new activation on the survivor.
func TestCallKillOwnerStatic(t *testing.T) {
	psys, pnode := testnode.Local(t, testnode.Options{Name: "call-parent"})
	pc, err := Start(ctxT(t, 10*time.Second), pnode, Config{Kinds: []Kind{accountKind(newStore(), 0)}})
	require.NoError(t, err)
	kid := testnode.Start(t, testnode.Options{Name: "call-child", Seeds: []string{"call-parent=" + pnode.Addr()}})
	eventually(t, "the parent sees two hosts", 20*time.Second, func() bool { return len(pc.Hosts("account")) == 2 })
	var id string
	for i := 0; ; i++ {
		id = fmt.Sprintf("call-%d", i)
		if o, _ := pc.Owner("account", id); o == kid.Name {
			break
		}
	}
	r, err := CallAs[*testpb.Echo](ctxT(t, 10*time.Second), pc, psys, "account", id, echo("add", 1))
	require.NoError(t, err)
	require.Equal(t, kid.Name, r.From)

	errc := make(chan error, 1)
	go func() {
		_, err := CallAs[*testpb.Echo](ctxT(t, 30*time.Second), pc, psys, "account", id, echo("hold", 0))
		errc <- err
	}()
	eventually(t, "the call is pending on the child", 10*time.Second, func() bool {
		for _, pi := range pnode.Pending() {
			if pi.Node == kid.Name && pi.Count == 1 {
				return true
			}
		}
		return false
	})
	killed := time.Now()
	kid.Kill()
	err = <-errc
	took := time.Since(killed)
	require.True(t, errors.Is(err, actor.ErrNodeDown), "%v", err)
	require.Equal(t, actor.MayHaveExecuted, actor.Outcome(err), "%v", err)
	t.Logf("the pending Call failed as may-have-executed %v after SIGKILL", took)
	require.Less(t, took, 3*time.Second, "a tenth of the call's 30 s deadline: it failed by liveness (ErrNodeDown), not by waiting; how fast is logged, a measurement")

	r2, err := CallAs[*testpb.Echo](ctxT(t, 10*time.Second), pc, psys, "account", id, echo("get", 0))
	require.NoError(t, err)
	require.Equal(t, "call-parent", r2.From)
	require.NotEqual(t, r.Text, r2.Text, "a new activation")
}
