//go:build chaos

package chaos

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/faultnet"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// partnet is four nodes: b in a child process, the rest in the test
// process. a floods b with sends; d
// and b call each other; every connection between a, b and d goes
// through the fault proxy in front of the node dialed (each node
// advertises its proxy), so faulting the proxies cuts b off from a and d.
// c reaches everyone directly: the bystander that must keep serving.
type partnet struct {
	a, c, d *node
	bChild  *testnode.Child
	px      map[string]*faultnet.Proxy // in front of a, b and d
	bCtr    *Counters
	ports   map[string]int // real listening ports
}

func newPartnet(t *testing.T, hb time.Duration, misses int) *partnet {
	t.Helper()
	pn := &partnet{px: map[string]*faultnet.Proxy{}, ports: map[string]int{}}
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	// a and d listen from here on (their nodes take the listeners), so no
	// other socket can take their ports before they start: a port freed
	// here was taken by a connection of the child's start now and then
	// ("bind: address already in use"). b, in its own process, binds its
	// port as soon as it starts.
	held := map[string]net.Listener{}
	for _, name := range []string{"a", "d"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() }) // its node closed it already, unless it never started
		held[name] = ln
		pn.ports[name] = ln.Addr().(*net.TCPAddr).Port
	}
	pn.ports["b"] = freePort(t)
	for _, name := range []string{"a", "b", "d"} {
		p, err := faultnet.Listen(addr(pn.ports[name]))
		require.NoError(t, err)
		t.Cleanup(func() { p.Close() }) // after the nodes stop
		pn.px[name] = p
	}
	cfg := func(name string, seeds ...string) remote.Config {
		return remote.Config{Listen: addr(pn.ports[name]), Advertise: pn.px[name].Addr(), Seeds: seeds, Network: &heldTCP{ln: held[name]},
			Liveness: remote.Liveness{HeartbeatInterval: hb, HeartbeatMisses: misses}, HandshakeTimeout: time.Second, DialTimeout: time.Second}
	}
	pn.bChild, pn.bCtr = startChild(t, testnode.Options{Name: "b", Listen: addr(pn.ports["b"]), Advertise: pn.px["b"].Addr(),
		Heartbeat: hb, Misses: misses, Extra: floodSinkExtra()})
	pn.a = startLocal(t, "a", cfg("a", "b="+pn.px["b"].Addr()), nil)
	pn.d = startLocal(t, "d", cfg("d", "b="+pn.px["b"].Addr()), nil)
	pn.c = startLocal(t, "c", remote.Config{Liveness: remote.Liveness{HeartbeatInterval: hb, HeartbeatMisses: misses},
		Seeds: []string{"a=" + addr(pn.ports["a"]), "b=" + addr(pn.ports["b"]), "d=" + addr(pn.ports["d"])}}, nil)
	for _, x := range []*node{pn.a, pn.d} {
		require.NoError(t, x.n.Connect(ctxFor(t, 10*time.Second), "b", ""))
		waitPoolOf(t, x, "b")
	}
	// b learns d's address (its proxy) from d's hello, and builds its pool.
	eventually(t, 20*time.Second, "b's pool to d", func() bool {
		v, err := pn.d.sys.Call(ctxFor(t, 5*time.Second), "b", "call_node", &testpb.Echo{Text: "d echo", N: 1})
		return err == nil && v.(*testpb.Echo).N == 1
	})
	for _, n := range []string{"a", "b", "d"} {
		require.NoError(t, pn.c.n.Connect(ctxFor(t, 10*time.Second), n, ""))
	}
	return pn
}

// heldTCP is TCP whose Listen hands out a listener bound beforehand.
type heldTCP struct {
	remote.TCP
	ln net.Listener
}

func (h *heldTCP) Listen(addr string) (net.Listener, error) {
	if h.ln != nil && h.ln.Addr().String() == addr {
		ln := h.ln
		h.ln = nil
		return ln, nil
	}
	return h.TCP.Listen(addr)
}

// each applies f to every proxy.
func (pn *partnet) each(f func(*faultnet.Proxy)) {
	for _, p := range pn.px {
		f(p)
	}
}

// inFlight is what the proxies hold and the kernels queue toward b: the
// sends that may be lost if b's links die now. Exact while the traffic
// is blackholed (nothing moves).
func (pn *partnet) inFlight(t testing.TB) int64 {
	t.Helper()
	var n int64
	for _, port := range []int{pn.ports["b"], portOf(t, pn.px["b"].Addr())} {
		q, err := KernelQueues(port)
		require.NoError(t, err)
		n += q
	}
	return n + int64(pn.px["b"].Stats().Held)
}

// waitPoolOf waits until x has a pool to node's current incarnation.
func waitPoolOf(t testing.TB, x *node, peer string) {
	t.Helper()
	eventually(t, 20*time.Second, x.name+"'s pool to "+peer, func() bool {
		info := x.eq.Pools.ConnectionInfo(peer)
		p, ok := x.n.Peer(peer)
		return info.Status == proxypool.Connected && ok && info.Incarnation == p.Incarnation
	})
}

func portOf(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return port
}
