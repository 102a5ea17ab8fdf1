package discovery_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/cluster"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/discovery/discoverytest"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// These tests run against a real dnsmasq: make test, or
//
//	scripts/dnsmasq.sh run -- go test -race -count=1 -run DNS ./discovery/
//
// The conformance suite (discoverytest) does not apply to DNS: its every
// check is about a node's own registration (Update seen by the others,
// deregistration on Stop, a frozen node's TTL, a crashed node's expiry),
// and a DNS provider registers nothing: the records are the platform's.
// What it shares with the suite is tested here against the server: a
// node restarted elsewhere is reached at its new address as a new
// incarnation, and the view survives the server going away.

const dnsInterval = 100 * time.Millisecond

// dnsNode is a node whose discovery is DNS, with a cluster layer that
// hosts the kind "counter".
type dnsNode struct {
	name string
	sys  *actor.System
	node *remote.Node
	prov *discovery.DNS
	cl   *cluster.Cluster
}

// startDNSNode starts a node named name listening on listen, which finds
// the others through cfg (Server and Interval filled in by the caller).
func startDNSNode(t *testing.T, name, listen string, cfg discovery.DNSConfig) *dnsNode {
	t.Helper()
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	require.NoError(t, testnode.Install(sys))
	t.Cleanup(func() { // Stop is idempotent: a test may stop it first
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, sys.Stop(ctx))
	})
	prov, err := discovery.NewDNS(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := remote.Start(ctx, sys, remote.Config{Listen: listen, Cookie: "dns-test-cookie-0123456789", Discovery: prov})
	require.NoError(t, err)
	cl, err := cluster.Start(ctx, n, cluster.Config{Kinds: []cluster.Kind{{
		Name:  "counter",
		Props: func(string) *actor.Props { return actor.PropsFromFunc(func(*actor.Context) {}) },
	}}})
	require.NoError(t, err)
	return &dnsNode{name: name, sys: sys, node: n, prov: prov, cl: cl}
}

// linkedAndHosting: every node of from has a native link to each other
// of to at its current incarnation, made with no message sent (the remote
// layer keeps DNS targets linked, as Static seeds), and places "counter"
// on exactly the nodes of to.
func linkedAndHosting(from []*dnsNode, to ...*dnsNode) func() bool {
	var want []string
	for _, d := range to {
		want = append(want, d.name)
	}
	slices.Sort(want)
	return func() bool {
		for _, f := range from {
			for _, d := range to {
				if p, ok := f.node.Peer(d.name); d != f && (!ok || p.Incarnation != d.sys.Incarnation()) {
					return false
				}
			}
			if !slices.Equal(f.cl.Hosts("counter"), want) {
				return false
			}
		}
		return true
	}
}

func (n *dnsNode) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	require.NoError(t, n.sys.Stop(ctx))
}

// record is n's SRV record.
func (n *dnsNode) record(t *testing.T) srvRecord {
	return srvRecord{host: n.name, ip: "127.0.0.1", port: portOf(t, n.node.Addr())}
}

// members is what n's remote layer lists from discovery: node -> address.
func (n *dnsNode) members() map[string]string {
	out := map[string]string{}
	for _, m := range n.node.Members() {
		out[m.Node] = m.Addr
	}
	return out
}

// call calls echo on node to and checks who answered.
func (n *dnsNode) call(to string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r, err := n.sys.Call(ctx, to, "echo", &testpb.Echo{Text: "hi"})
	if err != nil {
		return err
	}
	if from := r.(*testpb.Echo).From; from != to {
		return fmt.Errorf("%s answered for %s", from, to)
	}
	return nil
}

// eventually polls cond every 20ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
	}
}

// sees: every node in from lists exactly the others of want at their
// addresses.
func sees(from []*dnsNode, want ...*dnsNode) func() bool {
	return func() bool {
		for _, f := range from {
			exp := map[string]string{}
			for _, w := range want {
				if w != f {
					exp[w.name] = w.node.Addr()
				}
			}
			got := f.members()
			if len(got) != len(exp) {
				return false
			}
			for k, v := range exp {
				if got[k] != v {
					return false
				}
			}
		}
		return true
	}
}

// callsAll: every node of from calls every other of to, and learned its
// incarnation at the handshake.
func callsAll(t *testing.T, from []*dnsNode, to ...*dnsNode) {
	t.Helper()
	for _, f := range from {
		for _, d := range to {
			if d == f {
				continue
			}
			eventually(t, 10*time.Second, f.name+" calls "+d.name, func() bool { return f.call(d.name) == nil })
			p, ok := f.node.Peer(d.name)
			require.True(t, ok, "%s linked to %s", f.name, d.name)
			require.Equal(t, d.sys.Incarnation(), p.Incarnation, "%s learned %s's incarnation at the handshake", f.name, d.name)
		}
	}
}

// TestDNSSRVCluster: three nodes form a cluster from the SRV records of
// a real dnsmasq (linked with no message sent, each placing a kind on all
// three); a record removed withdraws that node from the others' lists,
// and its live link is left to heartbeats, as documented (it still runs
// and its own provider still links it to the others, so it stays in the
// cluster); a record added brings a new node in; a node restarted on a
// new port, its record updated, is reached there as its new incarnation.
func TestDNSSRVCluster(t *testing.T) {
	srv := startDNSServer(t) // the name does not exist yet
	cfg := discovery.DNSConfig{Name: srv.srvName, Server: srv.addr, Interval: dnsInterval, Logger: actor.DiscardLogger()}
	a := startDNSNode(t, "a", "127.0.0.1:0", cfg)
	b := startDNSNode(t, "b", "127.0.0.1:0", cfg)
	c := startDNSNode(t, "c", "127.0.0.1:0", cfg)
	all := []*dnsNode{a, b, c}
	require.Empty(t, a.members(), "NXDOMAIN: nobody")

	srv.Set(a.record(t), b.record(t), c.record(t))
	eventually(t, 10*time.Second, "every node lists the two others", sees(all, all...))
	eventually(t, 10*time.Second, "every node linked to the others with no message sent, and a cluster of three", linkedAndHosting(all, all...))
	callsAll(t, all, all...)
	st := a.prov.Stats()
	t.Logf("formed: a resolved %d times, %d failed (while dnsmasq restarted)", st.Resolutions, st.Errors)

	// c's record goes: c is withdrawn, not declared dead.
	srv.Set(a.record(t), b.record(t))
	eventually(t, 10*time.Second, "a and b no longer list c", sees([]*dnsNode{a, b}, a, b))
	p, ok := a.node.Peer("c")
	require.True(t, ok, "a's link to c stays: its liveness is the heartbeats'")
	require.Equal(t, c.sys.Incarnation(), p.Incarnation)
	require.NoError(t, a.call("c"), "c still runs and is still linked")
	require.Equal(t, 1, b.prov.Stats().Targets, "b lists a (self is left out)")

	// d's record comes: d is found.
	d := startDNSNode(t, "d", "127.0.0.1:0", cfg)
	srv.Set(a.record(t), b.record(t), d.record(t))
	eventually(t, 10*time.Second, "a, b and d list each other", sees([]*dnsNode{a, b, d}, a, b, d))
	eventually(t, 10*time.Second, "d linked and in the cluster", linkedAndHosting([]*dnsNode{d}, a, b, c, d))
	callsAll(t, []*dnsNode{a, b, d}, a, b, d)

	// b restarts on another port; its record follows.
	oldInc, oldAddr := b.sys.Incarnation(), b.node.Addr()
	b.stop(t)
	b2 := startDNSNode(t, "b", "127.0.0.1:0", cfg)
	require.NotEqual(t, oldAddr, b2.node.Addr())
	srv.Set(a.record(t), b2.record(t), d.record(t))
	eventually(t, 10*time.Second, "a and d list b at its new address", sees([]*dnsNode{a, d}, a, b2, d))
	eventually(t, 10*time.Second, "a and d linked to b's new incarnation", linkedAndHosting([]*dnsNode{a, d}, a, b2, c, d))
	callsAll(t, []*dnsNode{a, d}, b2)
	p, _ = a.node.Peer("b")
	require.NotEqual(t, oldInc, p.Incarnation)
	require.Equal(t, b2.node.Addr(), p.Addr, "a reached b at its new address")
	callsAll(t, []*dnsNode{b2}, a, d)
}

// TestDNSServerStopped: while the server is down every resolution fails
// and the last view is kept (nothing withdrawn); the failures are
// counted; once the server is back, with a record changed meanwhile, the
// provider resolves again (after its backoff) and reports the change.
func TestDNSServerStopped(t *testing.T) {
	srv := startDNSServer(t, srvRecord{host: "a", ip: "127.0.0.1", port: 1001}, srvRecord{host: "b", ip: "127.0.0.1", port: 1002})
	logs := &countingHandler{}
	p, err := discovery.NewDNS(discovery.DNSConfig{Name: srv.srvName, Server: srv.addr, Interval: dnsInterval, Timeout: 300 * time.Millisecond, Logger: slog.New(logs)})
	require.NoError(t, err)
	rec := &discoverytest.Recorder{}
	require.NoError(t, p.Start(context.Background(), discovery.Member{Node: "self"}, rec.Notify))
	t.Cleanup(func() { require.NoError(t, p.Stop(context.Background())) })
	a := discovery.Member{Node: "a", Addr: "127.0.0.1:1001"}
	b := discovery.Member{Node: "b", Addr: "127.0.0.1:1002"}
	e, _ := rec.Wait(t, 5*time.Second, discovery.MemberUp, a)
	require.Equal(t, a, e.Member)
	e, _ = rec.Wait(t, 5*time.Second, discovery.MemberUp, b)
	require.Equal(t, b, e.Member)

	srv.Stop()
	stoppedAt, before := time.Now(), p.Stats()
	eventually(t, 10*time.Second, "three failed resolutions", func() bool { return p.Stats().Errors >= before.Errors+3 })
	st := p.Stats()
	t.Logf("server stopped: %d failures in %v (backoff from %v)", st.Errors-before.Errors, time.Since(stoppedAt).Round(time.Millisecond), dnsInterval)
	require.Equal(t, before.Resolutions, st.Resolutions)
	require.Equal(t, 2, st.Targets, "the last view is kept")
	require.Zero(t, rec.Count(discovery.MemberDown, a))
	require.Zero(t, rec.Count(discovery.MemberDown, b))
	failed := logs.matching("resolution failed")
	// One line per distinct failure ("connection refused"; a timeout, on
	// a loaded machine, is another), not one per resolution.
	require.NotEmpty(t, failed)
	require.LessOrEqual(t, len(failed), 2, "%v", failed)
	require.Less(t, uint64(len(failed)), st.Errors-before.Errors, "%v", failed)
	require.Contains(t, failed[0], srv.addr, "the line names the server asked")

	srv.write([]srvRecord{{host: "a", ip: "127.0.0.1", port: 1001}})
	srv.Start()
	backAt := time.Now()
	_, downAt := rec.Wait(t, 10*time.Second, discovery.MemberDown, b)
	t.Logf("server back: b's withdrawal seen %v after the restart", downAt.Sub(backAt).Round(time.Millisecond))
	require.Zero(t, rec.Count(discovery.MemberDown, a))
	require.Equal(t, 1, rec.Count(discovery.MemberUp, a))
	require.Equal(t, 1, p.Stats().Targets)
	require.Len(t, logs.matching("resolving again"), 1)
}

// countingHandler keeps every record's message and attributes.
type countingHandler struct {
	mu    sync.Mutex // protects lines
	lines []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, line)
	return nil
}

// matching is the lines whose message contains s.
func (h *countingHandler) matching(s string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, l := range h.lines {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// TestDNSBounds: at most MaxTargets SRV records are taken (the rest
// dropped and counted), a second target for a node name is skipped, and
// self is left out.
func TestDNSBounds(t *testing.T) {
	srv := startDNSServer(t,
		srvRecord{host: "a", ip: "127.0.0.1", port: 1001},
		srvRecord{host: "a", ip: "127.0.0.1", port: 1002}, // a second a
		srvRecord{host: "b", ip: "127.0.0.1", port: 1003},
		srvRecord{host: "self", ip: "127.0.0.1", port: 1004},
		srvRecord{host: "z", ip: "127.0.0.1", port: 1005}, // beyond MaxTargets
	)
	p, err := discovery.NewDNS(discovery.DNSConfig{Name: srv.srvName, Server: srv.addr, Interval: dnsInterval, MaxTargets: 4, Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	rec := &discoverytest.Recorder{}
	require.NoError(t, p.Start(context.Background(), discovery.Member{Node: "self"}, rec.Notify))
	t.Cleanup(func() { require.NoError(t, p.Stop(context.Background())) })
	rec.Wait(t, 5*time.Second, discovery.MemberUp, discovery.Member{Node: "b"})
	var got []string
	for _, e := range rec.Events() {
		got = append(got, e.Type.String()+" "+e.Member.Node+" "+e.Member.Addr)
	}
	require.Equal(t, []string{"up a 127.0.0.1:1001", "up b 127.0.0.1:1003"}, got)
	st := p.Stats()
	require.Equal(t, 2, st.Targets)
	require.GreaterOrEqual(t, st.Dropped, uint64(1))
	require.GreaterOrEqual(t, st.Skipped, uint64(1), "the second a")
}

// TestDNSAMode: nodes named after their IPs, all on one port, found
// through the A records of one name in the shared server's hosts
// directory, which dnsmasq re-reads on change (inotify) with no restart:
// a record added is a new node, a record removed a withdrawal.
func TestDNSAMode(t *testing.T) {
	server := dnsEnv(t, "MAILROOM_DNS_SERVER")
	dir := dnsEnv(t, "MAILROOM_DNS_HOSTSDIR")
	name := fmt.Sprintf("amode%08x.%s", rand.Uint32(), dnsZone)
	file := filepath.Join(dir, name)
	t.Cleanup(func() { os.Remove(file) })
	setHosts := func(ips ...string) {
		var b strings.Builder
		for _, ip := range ips {
			fmt.Fprintf(&b, "%s %s\n", ip, name)
		}
		// Written aside and renamed in, so dnsmasq never reads half a file.
		tmp := filepath.Join(t.TempDir(), "hosts")
		require.NoError(t, os.WriteFile(tmp, []byte(b.String()), 0o644))
		require.NoError(t, os.Rename(tmp, file))
	}
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	port := commonPort(t, ips)
	cfg := discovery.DNSConfig{Name: name, Port: port, Server: server, Interval: dnsInterval, Logger: actor.DiscardLogger()}
	var nodes []*dnsNode
	for _, ip := range ips {
		nodes = append(nodes, startDNSNode(t, ip, fmt.Sprintf("%s:%d", ip, port), cfg))
	}
	n2, n3, n4 := nodes[0], nodes[1], nodes[2]

	setHosts(ips[0], ips[1])
	eventually(t, 10*time.Second, "127.0.0.2 and 127.0.0.3 list each other", sees([]*dnsNode{n2, n3}, n2, n3))
	callsAll(t, []*dnsNode{n2, n3}, n2, n3)

	setHosts(ips...)
	eventually(t, 10*time.Second, "all three list each other", sees(nodes, nodes...))
	callsAll(t, nodes, nodes...)

	setHosts(ips[0], ips[2])
	eventually(t, 10*time.Second, "127.0.0.3 withdrawn", sees([]*dnsNode{n2, n4}, n2, n4))
	require.True(t, slices.ContainsFunc(n3.node.Members(), func(m discovery.Member) bool { return m.Node == "127.0.0.2" }), "127.0.0.3 still lists the others")
}

// commonPort finds a TCP port free on every IP.
func commonPort(t *testing.T, ips []string) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", ips[0]+":0")
		require.NoError(t, err)
		port := portOf(t, l.Addr().String())
		ls := []net.Listener{l}
		ok := true
		for _, ip := range ips[1:] {
			l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, port))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatal("no port free on every IP")
	return 0
}
