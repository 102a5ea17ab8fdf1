package observer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/supervisor"
	"github.com/stretchr/testify/require"
)

// TestServeAddr: no host means 127.0.0.1; loopback needs no token; any
// other address does.
func TestServeAddr(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		token bool
		want  string
		err   error
	}{
		{"", false, "127.0.0.1:0", nil},
		{":7070", false, "127.0.0.1:7070", nil},
		{"127.0.0.1:7070", false, "127.0.0.1:7070", nil},
		{"[::1]:7070", false, "[::1]:7070", nil},
		{"localhost:7070", false, "localhost:7070", nil},
		{"0.0.0.0:7070", false, "", ErrTokenRequired},
		{"[::]:7070", false, "", ErrTokenRequired},
		{"10.1.2.3:7070", false, "", ErrTokenRequired},
		{"example.com:7070", false, "", ErrTokenRequired},
		{"0.0.0.0:7070", true, "0.0.0.0:7070", nil},
		{"nonsense", false, "", nil},
	} {
		got, err := serveAddr(tc.addr, tc.token)
		switch {
		case tc.addr == "nonsense":
			require.Error(t, err)
		case tc.err != nil:
			require.ErrorIs(t, err, tc.err, tc.addr)
		default:
			require.NoError(t, err, tc.addr)
			require.Equal(t, tc.want, got)
		}
	}
}

// TestServe: Serve listens on loopback, reports its URL, serves the page
// and stops when ctx ends; it refuses a public address without a token
// and, with one, wants it on every request.
func TestServe(t *testing.T) {
	a := startNode(t, "a")
	err := Serve(ctxT(t), a.n, "0.0.0.0:0", Options{})
	require.ErrorIs(t, err, ErrTokenRequired)

	for _, tc := range []struct{ addr, token string }{{"", ""}, {"0.0.0.0:0", "s3cret-token"}} {
		ctx, cancel := context.WithCancel(context.Background())
		urls := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- Serve(ctx, a.n, tc.addr, Options{Token: tc.token, OnServe: func(u string) { urls <- u }})
		}()
		var u string
		select {
		case u = <-urls:
		case err := <-done:
			t.Fatalf("Serve(%q) returned %v", tc.addr, err)
		}
		code, body := get(t, u)
		require.Equal(t, http.StatusOK, code, string(body))
		require.Contains(t, string(body), "mailroom observer: a")
		if tc.token != "" {
			require.Contains(t, u, "token="+tc.token)
			bare, _, _ := strings.Cut(u, "?")
			code, _ := get(t, bare+"api/node")
			require.Equal(t, http.StatusUnauthorized, code)
		} else {
			require.True(t, strings.HasPrefix(u, "http://127.0.0.1:"), u)
		}
		cancel()
		require.NoError(t, <-done)
	}
}

// TestToken: with a token, the page and every endpoint want it, by
// either header or the query; a wrong one, an empty one or a prefix of it
// is refused. The script and the style, which hold no data, do not.
func TestToken(t *testing.T) {
	a := startNode(t, "a")
	srv := httptest.NewServer(Handler(a.n, Options{Token: "s3cret-token"}))
	t.Cleanup(srv.Close)
	code, _ := get(t, srv.URL+"/static/app.js")
	require.Equal(t, http.StatusOK, code)
	for _, path := range []string{"/", "/api/snapshot", "/api/node", "/api/trees"} {
		for _, bad := range [][]string{nil, {"X-Observer-Token", "wrong"}, {"Authorization", "Bearer s3cret"}, {"Authorization", "Basic s3cret-token"}, {"X-Observer-Token", ""}} {
			code, _ := get(t, srv.URL+path, bad...)
			require.Equal(t, http.StatusUnauthorized, code, "%s %v", path, bad)
		}
		code, _ := get(t, srv.URL+path+"?token=s3cret")
		require.Equal(t, http.StatusUnauthorized, code)
		for _, good := range [][]string{{"X-Observer-Token", "s3cret-token"}, {"Authorization", "Bearer s3cret-token"}, {"Authorization", "bearer s3cret-token"}} {
			code, body := get(t, srv.URL+path, good...)
			require.Equal(t, http.StatusOK, code, "%s %v: %s", path, good, body)
		}
		code, body := get(t, srv.URL+path+"?token=s3cret-token")
		require.Equal(t, http.StatusOK, code, string(body))
	}
}

// TestReadOnly: anything but GET and HEAD is refused on every path, and
// the page and the endpoints answer GET with the security headers set.
func TestReadOnly(t *testing.T) {
	a := startNode(t, "a")
	srv := httptest.NewServer(Handler(a.n, Options{}))
	t.Cleanup(srv.Close)
	paths := []string{"/", "/api/snapshot", "/api/node", "/api/members", "/api/trees", "/api/actors", "/api/peers", "/api/pending", "/api/counters", "/static/app.js", "/nope"}
	for _, path := range paths {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			req, err := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s", method, path)
			require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
		}
	}
	resp, err := http.Get(srv.URL + "/api/node")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")
	code, _ := get(t, srv.URL+"/nope")
	require.Equal(t, http.StatusNotFound, code)
}

// TestPanels: two linked nodes with pools: each panel's endpoint shows
// what the runtime holds: the peer's incarnation, a tree with a
// restarted child, the pool with batches, a pending call with its age,
// a stuck actor's mailbox, and the counters.
func TestPanels(t *testing.T) {
	a, b := startNode(t, "a"), startNode(t, "b")
	srv := httptest.NewServer(Handler(a.n, Options{Top: 5, Pools: a.pool}))
	t.Cleanup(srv.Close)
	require.NoError(t, a.n.Connect(ctxT(t), "b", b.n.Addr()))
	eventually(t, "a's pool to b", func() bool { return a.pool.ConnectionInfo("b").Status.String() == "connected" })

	// A tree whose child crashed once.
	crashes := actor.PropsFromFunc(func(c *actor.Context) {
		if c.Message() == "crash" {
			panic("crash on purpose")
		}
	})
	sup, err := supervisor.StartNamed(a.sys, supervisor.Spec{Children: []supervisor.ChildSpec{{ID: "worker", Props: crashes}}}, "app")
	require.NoError(t, err)
	kids, err := supervisor.WhichChildren(ctxT(t), a.sys, sup)
	require.NoError(t, err)
	a.sys.Send(kids[0].PID, "crash")
	eventually(t, "the worker restarted", func() bool {
		kids, err := supervisor.WhichChildren(ctxT(t), a.sys, sup)
		return err == nil && kids[0].Restarts == 1 && !kids[0].PID.IsZero()
	})

	// Pooled calls, and one that stays pending.
	for range 20 {
		_, err := a.sys.Call(ctxT(t), "b", "echo", &testpb.Echo{Text: "hi"})
		require.NoError(t, err)
	}
	pendingCtx, cancelPending := context.WithCancel(context.Background())
	callDone := make(chan struct{})
	go func() {
		defer close(callDone)
		_, _ = a.sys.Call(pendingCtx, "b", "sleep", &testpb.Sleep{Millis: 60_000})
	}()
	t.Cleanup(func() { cancelPending(); <-callDone })

	// A stuck actor with a backlog.
	gate := make(chan struct{})
	stuck, err := a.sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if c.Message() == "block" {
			<-gate
		}
	}), "stuck")
	require.NoError(t, err)
	t.Cleanup(func() { close(gate) })
	for range 50 {
		a.sys.Send(stuck, "block")
	}

	var node NodeInfo
	getJSON(t, srv.URL+"/api/node", &node)
	require.Equal(t, "a", node.Name)
	require.Equal(t, actor.FormatIncarnation(a.sys.Incarnation()), node.Incarnation)
	require.Equal(t, a.n.Addr(), node.Addr)

	var members Members
	getJSON(t, srv.URL+"/api/members", &members)
	binc := actor.FormatIncarnation(b.sys.Incarnation())
	var sawB, sawSelf bool
	for _, in := range members.Incarnations {
		if in.Node == "b" && in.Incarnation == binc {
			sawB = true
			require.Equal(t, "up", in.State)
			require.True(t, in.Linked)
			require.NotEmpty(t, in.Changes)
		}
		sawSelf = sawSelf || (in.Self && in.Node == "a")
	}
	require.True(t, sawB, "b's incarnation listed: %+v", members)
	require.True(t, sawSelf)
	require.NotEmpty(t, members.Events)

	var pend Pending
	eventually(t, "the pending call listed with its age", func() bool {
		getJSON(t, srv.URL+"/api/pending", &pend)
		return len(pend.Pending) == 1 && pend.Pending[0].Node == "b" && pend.Pending[0].Count == 1 && pend.Pending[0].OldestMs > 0
	})
	require.Equal(t, binc, pend.Pending[0].Incarnation)

	var trees Trees
	getJSON(t, srv.URL+"/api/trees", &trees)
	var app *TreeNode
	for i := range trees.Trees {
		if trees.Trees[i].Name == "app" {
			app = &trees.Trees[i]
		}
	}
	require.NotNil(t, app, "%+v", trees)
	require.Equal(t, "one-for-one", app.Strategy)
	require.Equal(t, 1, app.RecentRestarts)
	require.Len(t, app.Children, 1)
	require.Equal(t, "worker", app.Children[0].ID)
	require.Equal(t, 1, app.Children[0].Restarts)
	require.True(t, app.Children[0].Running)

	var peers Peers
	// A batch is counted after its write returns, and its reply can be
	// back first: the 20th may be counted a moment after its call ended.
	eventually(t, "the 20 batches counted", func() bool {
		getJSON(t, srv.URL+"/api/peers", &peers)
		return len(peers.Peers) == 1 && peers.Peers[0].Pool != nil && peers.Peers[0].Pool.Batches >= 20
	})
	require.Len(t, peers.Peers, 1)
	p := peers.Peers[0]
	require.Equal(t, "b", p.Node)
	require.True(t, p.Linked)
	require.Equal(t, binc, p.Incarnation)
	require.NotNil(t, p.Pool)
	require.Equal(t, "connected", p.Pool.Status)
	require.Equal(t, 2, p.Pool.Proxies)
	require.GreaterOrEqual(t, p.Pool.Batches, uint64(20))
	var hist uint64
	for _, h := range p.Pool.Hist {
		hist += h
	}
	require.Equal(t, p.Pool.Batches, hist)

	var acts Actors
	eventually(t, "the stuck actor is the deepest", func() bool {
		getJSON(t, srv.URL+"/api/actors", &acts)
		return len(acts.Deepest) > 0 && acts.Deepest[0].Name == "stuck" && acts.Deepest[0].Depth >= 49
	})
	require.LessOrEqual(t, len(acts.Deepest), 5)
	require.LessOrEqual(t, len(acts.Busiest), 5)
	require.Equal(t, a.sys.NumActors(), acts.Count)

	var ctr Counters
	// Snapshots are shared for MinInterval: one taken before the last
	// call was counted may still be served.
	eventually(t, "the 21 calls counted, one pending", func() bool {
		getJSON(t, srv.URL+"/api/counters", &ctr)
		return ctr.Remote.CallsPooled+ctr.Remote.CallsNative >= 21 && ctr.Remote.Pending == 1
	})
	_, err = a.sys.Call(ctxT(t), "b", "no_such_function", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrNoFunction)
	eventually(t, "the failed call counted as not executed", func() bool {
		getJSON(t, srv.URL+"/api/counters", &ctr)
		return ctr.Failed.NotExecuted == 1 && ctr.Failed.MayHaveExecuted == 0
	})
	// The table: every value labelled as the metrics label it.
	rows := map[string]float64{}
	for _, r := range ctr.Table {
		rows[fmt.Sprintf("%s/%s%v", r.Layer, r.Name, r.Labels)] = r.Value
	}
	require.Equal(t, 1.0, rows["calls/Failed"+fmt.Sprint(map[string]string{"outcome": "not_executed"})], "%v", rows)
	require.Contains(t, rows, "calls/Failed"+fmt.Sprint(map[string]string{"outcome": "may_have_executed"}))
	for _, typ := range []string{"up", "updated", "down"} {
		require.Contains(t, rows, "discovery/MemberEvents"+fmt.Sprint(map[string]string{"type": typ}))
	}
	require.Contains(t, rows, "actor/DeadLetters"+fmt.Sprint(map[string]string{"reason": "no_process"}))
	require.Equal(t, float64(ctr.Remote.CallsPooled), rows["remote/CallsPooled"+fmt.Sprint(map[string]string(nil))])
	require.NotContains(t, rows, "remote/MemberEvents"+fmt.Sprint(map[string]string(nil)), "no unlabelled array")

	// A snapshot is shared within MinInterval, and a new one taken after.
	o := Handler(a.n, Options{MinInterval: time.Hour}).(*observer)
	s1 := o.snapshot(ctxT(t))
	require.Same(t, s1, o.snapshot(ctxT(t)), "shared within MinInterval")
	o.mu.Lock()
	o.last.At = o.last.At.Add(-2 * time.Hour)
	o.mu.Unlock()
	require.NotSame(t, s1, o.snapshot(ctxT(t)), "taken again once older")
}

// TestBounds: the lists a client reads are capped: top actors, tree
// nodes, events and incarnations; each cap says what it left out.
func TestBounds(t *testing.T) {
	require.Equal(t, maxTop, Options{Top: 1_000_000}.withDefaults().Top)
	require.Equal(t, maxEvents, Options{Events: 1_000_000}.withDefaults().Events)
	require.Equal(t, 50*time.Millisecond, Options{MinInterval: time.Nanosecond}.withDefaults().MinInterval)

	// History: events in a ring, incarnations in a bounded table that
	// forgets the longest-down first.
	h := newHistory("a", 1, 10)
	for i := range maxIncarnations + 44 {
		h.record("b", uint64(i+1), "", "link up", nil)
		if i < 50 {
			h.record("b", uint64(i+1), "", "gone", h.markDown)
		}
	}
	m := h.snapshot()
	require.Len(t, m.Incarnations, maxIncarnations)
	require.Equal(t, uint64(44), m.Forgotten)
	for _, in := range m.Incarnations {
		require.False(t, in.Incarnation == "1", "the first down incarnation was forgotten first")
	}
	require.Len(t, m.Events, 10)
	require.Equal(t, uint64(maxIncarnations+44+50), m.EventsTotal)
	require.Equal(t, actor.FormatIncarnation(maxIncarnations+44), m.Events[0].Incarnation, "newest first")
	for range 3 * maxChanges {
		h.record("c", 7, "", "link up", nil)
	}
	for _, in := range h.snapshot().Incarnations {
		if in.Node == "c" {
			require.Len(t, in.Changes, maxChanges)
			require.Equal(t, 2*maxChanges, in.ChangesLeft)
		}
	}

	// Trees: past maxTreeNodes the listing is cut and says so.
	a := startNode(t, "a")
	srv := httptest.NewServer(Handler(a.n, Options{TreeTimeout: 10 * time.Second}))
	t.Cleanup(srv.Close)
	idle := actor.PropsFromFunc(func(*actor.Context) {})
	children := make([]supervisor.ChildSpec, 600)
	for i := range children {
		children[i] = supervisor.ChildSpec{ID: fmt.Sprintf("c%d", i), Props: idle}
	}
	for range 4 {
		_, err := supervisor.Start(a.sys, supervisor.Spec{Children: children})
		require.NoError(t, err)
	}
	var trees Trees
	getJSON(t, srv.URL+"/api/trees", &trees)
	require.True(t, trees.Truncated)
	listed, left := 0, 0
	var walk func(n TreeNode)
	walk = func(n TreeNode) {
		listed++
		left += n.ChildrenLeft
		for _, c := range n.Children {
			walk(c)
		}
	}
	for _, tr := range trees.Trees {
		walk(tr)
	}
	require.LessOrEqual(t, listed, maxTreeNodes)
	require.Positive(t, left)

	// Top: more deep actors than Top, at most Top listed.
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	for range 12 {
		pid, err := a.sys.SpawnFunc(func(c *actor.Context) {
			if c.Message() == "block" {
				<-gate
			}
		})
		require.NoError(t, err)
		a.sys.Send(pid, "block")
		a.sys.Send(pid, "more")
	}
	var acts Actors
	eventually(t, "the default Top of deep actors", func() bool {
		getJSON(t, srv.URL+"/api/actors", &acts)
		return len(acts.Deepest) == 10
	})
}

// TestSupervisorBusy: a supervisor that does not answer is shown with
// its error; the rest of the snapshot is there.
func TestSupervisorBusy(t *testing.T) {
	a := startNode(t, "a")
	srv := httptest.NewServer(Handler(a.n, Options{TreeTimeout: 100 * time.Millisecond}))
	t.Cleanup(srv.Close)
	gate := make(chan struct{})
	sup, err := supervisor.Start(a.sys, supervisor.Spec{})
	require.NoError(t, err)
	started := make(chan struct{})
	go func() {
		defer close(started)
		_, _ = supervisor.StartChild(context.Background(), a.sys, sup, supervisor.ChildSpec{ID: "slow", Props: actor.PropsFromFunc(func(c *actor.Context) {
			if _, ok := c.Message().(actor.Started); ok {
				<-gate
			}
		})})
	}()
	t.Cleanup(func() { close(gate); <-started })
	var s Snapshot
	eventually(t, "the busy supervisor shown with its error", func() bool {
		getJSON(t, srv.URL+"/api/snapshot", &s)
		for _, tr := range s.Trees.Trees {
			if tr.PID == sup.String() && strings.Contains(tr.Err, "deadline") {
				return true
			}
		}
		return false
	})
	require.Equal(t, "a", s.Node.Name)
	require.Positive(t, s.Actors.Count)
}
