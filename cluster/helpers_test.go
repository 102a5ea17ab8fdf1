package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// store is where the test grains save their state when they stop and
// load it when they start: the user's code doing the reloading.
type store struct {
	mu    sync.Mutex // protects following
	m     map[string]int64
	loads int
}

func newStore() *store { return &store{m: map[string]int64{}} }

func (s *store) load(id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	return s.m[id]
}

func (s *store) save(id string, v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = v
}

// account is the test grain: a balance per identity.
//
//	Echo{Text: "add", N: n} -> Echo{N: balance, Text: activation, From: node}
//	Echo{Text: "get"}       -> the same, adding nothing
//	Echo{Text: "hold"}      -> never answered (a call left pending)
//	Echo{Text: "passivate"} -> answered, then the grain stops itself
type account struct {
	id     string
	st     *store
	bal    int64
	act    string // random: tells activations apart
	held   []actor.Replier
	idSeen string
}

func accountKind(st *store, idle time.Duration) Kind {
	return Kind{Name: "account", IdleTimeout: idle, Props: func(id string) *actor.Props {
		return actor.PropsFromProducer(func() actor.Actor { return &account{id: id, st: st} })
	}}
}

func (a *account) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		a.bal = a.st.load(a.id)
		var b [8]byte
		_, _ = rand.Read(b[:])
		a.act = hex.EncodeToString(b[:])
		_, id, _ := IdentityOf(c)
		a.idSeen = id
	case actor.Stopped:
		a.st.save(a.id, a.bal)
	case *testpb.Echo:
		switch m.Text {
		case "add":
			a.bal += m.N
		case "hold":
			a.held = append(a.held, c.Defer())
			return
		case "passivate":
			defer c.Stop(c.Self())
		case "whoami":
			c.Respond(&testpb.Echo{Text: a.idSeen, From: c.System().Name()})
			return
		}
		c.Respond(&testpb.Echo{N: a.bal, Text: a.act, From: c.System().Name()})
	}
}

// childHook starts the cluster layer in a child node (testnode), hosting
// "account" with a store of its own, the singleton "leader" when
// Extra["singleton"] is set, and a subscriber to Extra["topic"] when set.
func childHook(sys *actor.System, n *remote.Node, o testnode.Options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{Kinds: []Kind{accountKind(newStore(), 0)}}
	if o.Extra["singleton"] != "" {
		cfg.Singletons = []Singleton{leaderSingleton(nil)}
	}
	c, err := Start(ctx, n, cfg)
	if err != nil || o.Extra["topic"] == "" {
		return err
	}
	pid, err := sys.Spawn(newCollector(nil).props())
	if err != nil {
		return err
	}
	return c.Subscribe(ctx, o.Extra["topic"], pid)
}

// staticNodes starts n in-process nodes over Static seeds, each hosting
// account with the store and idle time given, and waits until each sees
// every other as a host.
func staticNodes(t *testing.T, n int, st *store, idle time.Duration) []*Cluster {
	t.Helper()
	var seeds []string
	var out []*Cluster
	for i := range n {
		name := fmt.Sprintf("g%d", i+1)
		_, node := testnode.Local(t, testnode.Options{Name: name, Seeds: append([]string(nil), seeds...)})
		c, err := Start(ctxT(t, 10*time.Second), node, Config{Kinds: []Kind{accountKind(st, idle)}})
		require.NoError(t, err)
		seeds = append(seeds, name+"="+node.Addr())
		out = append(out, c)
	}
	waitHosts(t, out, "account", n)
	return out
}

func waitHosts(t *testing.T, cs []*Cluster, kind string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("every node sees %d hosts of %s", n, kind), 20*time.Second, func() bool {
		for _, c := range cs {
			if len(c.Hosts(kind)) != n {
				return false
			}
		}
		return true
	})
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond) // polling, not synchronising
	}
}

func echo(text string, n int64) *testpb.Echo { return &testpb.Echo{Text: text, N: n} }
