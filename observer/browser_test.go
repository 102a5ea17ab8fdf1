package observer

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/supervisor"
	"github.com/stretchr/testify/require"
)

// TestBrowser loads the page of a live three-node cluster (three nodes in
// this process, over TCP, with proxy pools) in headless Chromium, under
// load, after one node was stopped and started again and a fourth one
// joined and left, and asserts from
// the DOM Chromium rendered (the page's script draws everything) that it
// shows the charts of the rates with live data (calls, messages, a
// failure of each outcome, a pending call), the nodes and links graph
// (two linked peers with their native and pool links, the one gone), the
// nodes with c's new incarnation beside the old one gone, a
// supervision tree with its children and a restart, pools with batches,
// the counters table with labels, and an extra panel (Options.Panels).
// It writes the page's screenshot to docs/img/observer.png.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	a, b, c := startNode(t, "a"), startNode(t, "b"), startNode(t, "c")
	grains := Panel{Name: "grains", Data: func(context.Context) (PanelData, error) {
		return PanelData{Tables: []Table{{
			Title: "activations per kind", Columns: []string{"kind", "node", "activations"},
			Rows: [][]string{{"account", "a", "12"}, {"account", "b", "9"}, {"cart", "c", "3"}},
		}}}, nil
	}}
	srv := httptest.NewServer(Handler(a.n, Options{
		Pools: a.pool, Token: "browser-test-token", Panels: []Panel{grains},
		SeriesEvery: 100 * time.Millisecond, SeriesPoints: 60,
	}))
	t.Cleanup(srv.Close)
	for _, p := range []*tnode{b, c} {
		require.NoError(t, a.n.Connect(ctxT(t), p.sys.Name(), p.n.Addr()))
	}
	require.NoError(t, b.n.Connect(ctxT(t), "c", c.n.Addr()))
	// a's sent and made, and failures of each outcome at their own rates;
	// b's calls to a for a's received and answered.
	stopLoad := testnode.Load{Workers: 2, NotExecutedEvery: 5, ExecutedEvery: 10, MayHaveExecutedEvery: 20}.Start(a.sys, "b")
	stopBack := testnode.Load{Workers: 2}.Start(b.sys, "a")
	t.Cleanup(stopLoad)
	t.Cleanup(stopBack)

	// A tree: "app" with two workers and a nested "jobs" supervisor; one
	// worker crashes once.
	worker := actor.PropsFromFunc(func(c *actor.Context) {
		if c.Message() == "crash" {
			panic("crash on purpose")
		}
	})
	app, err := supervisor.StartNamed(a.sys, supervisor.Spec{Strategy: supervisor.OneForOne, Children: []supervisor.ChildSpec{
		{ID: "orders", Props: worker, Name: "orders"},
		{ID: "billing", Props: worker},
		supervisor.Nested("jobs", supervisor.Spec{Children: []supervisor.ChildSpec{{ID: "job-1", Props: worker}, {ID: "job-2", Props: worker}}}),
	}}, "app")
	require.NoError(t, err)
	orders, _ := a.sys.Lookup("orders")
	a.sys.Send(orders, "crash")
	eventually(t, "orders restarted", func() bool {
		kids, err := supervisor.WhichChildren(ctxT(t), a.sys, app)
		return err == nil && kids[0].Restarts == 1 && !kids[0].PID.IsZero()
	})

	// Light load through the pools, then a restart of c.
	calls := func(node string, n int) {
		var wg sync.WaitGroup
		errs := make(chan error, 8*n)
		for range 8 {
			wg.Go(func() {
				for range n {
					_, err := a.sys.Call(ctxT(t), node, "echo", &testpb.Echo{Text: "load"})
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	eventually(t, "pools to b and c", func() bool {
		return a.pool.ConnectionInfo("b").Status.String() == "connected" && a.pool.ConnectionInfo("c").Status.String() == "connected"
	})
	calls("b", 50)
	calls("c", 20)
	// d joins and leaves for good: the graph shows it down.
	d := startNode(t, "d")
	incD := actor.FormatIncarnation(d.sys.Incarnation())
	require.NoError(t, a.n.Connect(ctxT(t), "d", d.n.Addr()))
	d.stop()
	oldC := actor.FormatIncarnation(c.sys.Incarnation())
	c.stop()
	c2 := startNode(t, "c")
	newC := actor.FormatIncarnation(c2.sys.Incarnation())
	require.NotEqual(t, oldC, newC)
	require.NoError(t, a.n.Connect(ctxT(t), "c", c2.n.Addr()))
	eventually(t, "a's pool to the new c", func() bool {
		info := a.pool.ConnectionInfo("c")
		return info.Status.String() == "connected" && actor.FormatIncarnation(info.Incarnation) == newC
	})
	calls("c", 20)

	// A call left pending on b, and an actor with a backlog, for the
	// screenshot.
	pendingCtx, cancelPending := context.WithCancel(context.Background())
	callDone := make(chan struct{})
	go func() {
		defer close(callDone)
		_, _ = a.sys.Call(pendingCtx, "b", "sleep", &testpb.Sleep{Millis: 60_000})
	}()
	t.Cleanup(func() { cancelPending(); <-callDone })
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	stuck, err := a.sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if c.Message() == "block" {
			<-gate
		}
	}), "reports")
	require.NoError(t, err)
	for range 120 {
		a.sys.Send(stuck, "block")
	}

	url := srv.URL + "/?token=browser-test-token"
	var snap Snapshot
	eventually(t, "the old c down in the snapshot", func() bool {
		getJSON(t, srv.URL+"/api/members?token=browser-test-token", &snap.Members)
		st := map[string]string{}
		for _, in := range snap.Members.Incarnations {
			st[in.Incarnation] = in.State
		}
		return st[oldC] == "down" && st[newC] == "up" && st[incD] == "down"
	})
	eventually(t, "the pending call in the snapshot", func() bool {
		getJSON(t, srv.URL+"/api/pending?token=browser-test-token", &snap.Pending)
		return snap.Pending.Total >= 1 // the sleep, and maybe a call of the load
	})
	// Every line the DOM is asserted on below has a value in the window.
	want := map[string][]string{
		"messages": {"sent", "received"}, "calls": {"made", "answered"},
		"failures": {actor.NotExecuted.Label(), actor.MayHaveExecuted.Label(), actor.Executed.Label()},
		"pending":  {"calls pending here"},
	}
	var flat []string
	eventually(t, "every chart line with live data", func() bool {
		getJSON(t, srv.URL+"/api/series?token=browser-test-token", &snap.Series)
		flat = flat[:0]
		for _, c := range snap.Series.Charts {
			for _, l := range c.Lines {
				if slices.Contains(want[c.Name], l.Label) && slices.Max(append(l.Values, 0)) == 0 {
					flat = append(flat, c.Name+"/"+l.Label)
				}
			}
		}
		return len(flat) == 0 && len(snap.Series.Charts) == len(want)
	})
	require.Empty(t, flat, "lines without data")

	// The DOM as Chromium renders it.
	dom := string(runChromium(t, bin, "--dump-dom", url))
	require.Contains(t, dom, `<span id="node-name">a</span>`, "the page says which node serves it")

	members := tags(dom, "tr", "member")
	state := map[string]string{} // node/incarnation -> state
	nodes := map[string]bool{}
	for _, m := range members {
		state[m["data-node"]+"/"+m["data-incarnation"]] = m["data-state"]
		nodes[m["data-node"]] = true
	}
	require.Equal(t, map[string]bool{"a": true, "b": true, "c": true, "d": true}, nodes, "the four nodes: %v", members)
	require.Equal(t, "up", state["a/"+actor.FormatIncarnation(a.sys.Incarnation())])
	require.Equal(t, "up", state["b/"+actor.FormatIncarnation(b.sys.Incarnation())])
	require.Equal(t, "down", state["c/"+oldC], "c's first incarnation, gone")
	require.Equal(t, "up", state["c/"+newC], "c's new incarnation")
	require.Equal(t, "down", state["d/"+incD], "d, gone")

	sups := tags(dom, "li", "sup")
	children := tags(dom, "li", "child")
	ids := map[string]int{}
	for _, ch := range children {
		n, err := strconv.Atoi(ch["data-restarts"])
		require.NoError(t, err)
		ids[ch["data-id"]] = n
	}
	require.GreaterOrEqual(t, len(sups), 3, "app, jobs and the proxy pool's supervisor")
	require.Contains(t, dom, `supervisor `+app.String()+` "app"`)
	require.Equal(t, 1, ids["orders"], "orders restarted once: %v", ids)
	require.Contains(t, ids, "billing")
	require.Contains(t, ids, "job-1")
	require.Contains(t, ids, "job-2")
	jobs := tags(dom, "li", "sup")
	var sawJobs bool
	for _, s := range jobs {
		sawJobs = sawJobs || s["data-id"] == "jobs"
	}
	require.True(t, sawJobs, "the nested supervisor under app")

	peers := map[string]map[string]string{}
	for _, p := range tags(dom, "tr", "peer") {
		peers[p["data-node"]] = p
	}
	for _, node := range []string{"b", "c"} {
		p := peers[node]
		require.NotNil(t, p, "peer %s listed: %v", node, peers)
		require.Equal(t, "connected", p["data-status"], node)
		n, err := strconv.ParseUint(p["data-batches"], 10, 64)
		require.NoError(t, err)
		require.Positive(t, n, "%s's pool has batches", node)
	}
	require.Regexp(t, `<div class="hist small">(<div class="bar"[^>]*></div>)+</div>`, dom, "batch-size histograms drawn")

	// The charts: one per chart, with points, every wanted line drawn
	// with a positive value somewhere in the window.
	charts := map[string]bool{}
	for _, ch := range tags(dom, "svg", "chart") {
		n, err := strconv.Atoi(ch["data-points"])
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, 2, "chart %s has points", ch["data-chart"])
		charts[ch["data-chart"]] = true
	}
	require.Equal(t, map[string]bool{"messages": true, "calls": true, "failures": true, "pending": true}, charts)
	lines := map[string]float64{}
	for _, l := range tags(dom, "polyline", "line") {
		v, err := strconv.ParseFloat(l["data-max"], 64)
		require.NoError(t, err)
		require.Regexp(t, `^(\d+(\.\d)?,\d+(\.\d)? ?)+$`, l["points"], "line %s drawn", l["data-line"])
		lines[l["data-line"]] = v
	}
	for chart, ls := range want {
		for _, l := range ls {
			require.Positive(t, lines[l], "chart %s, line %s, has live data: %v", chart, l, lines)
		}
	}

	// The nodes and links: a, b and c up, d down; the edges to b and c
	// linked, each with a native link and pool links (a's pool's two, and
	// the peer's toward a); b's pending call; the edge to d down.
	gnodes := map[string]string{}
	for _, g := range tags(dom, "g", "gnode") {
		gnodes[g["data-node"]] = g["data-state"]
	}
	require.Equal(t, map[string]string{"a": "up", "b": "up", "c": "up", "d": "down"}, gnodes)
	edges := map[string]map[string]string{}
	for _, e := range tags(dom, "line", "edge") {
		edges[e["data-peer"]] = e
	}
	require.Len(t, edges, 3, "%v", edges)
	require.Equal(t, "down", edges["d"]["data-state"])
	for _, node := range []string{"b", "c"} {
		e := edges[node]
		require.Equal(t, "linked", e["data-state"], node)
		n, err := strconv.Atoi(e["data-native"])
		require.NoError(t, err)
		require.Positive(t, n, "%s: a native link", node)
		n, err = strconv.Atoi(e["data-pool"])
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, 2, "%s: a's pool of two, at least", node)
	}
	n, err := strconv.Atoi(edges["b"]["data-pending"])
	require.NoError(t, err)
	require.Positive(t, n, "the sleep pending on b")
	require.Regexp(t, `<text class="edge-label"[^>]*>\d+ native · \d+ pool · [1-9]\d* pending`, dom)

	// The counters: a table with labels, the failures by their label.
	ctr := map[string]float64{}
	for _, r := range tags(dom, "tr", "counter") {
		v, err := strconv.ParseFloat(r["data-value"], 64)
		require.NoError(t, err)
		ctr[r["data-name"]+"{"+r["data-labels"]+"}"] = v
	}
	for _, o := range []actor.Execution{actor.NotExecuted, actor.MayHaveExecuted, actor.Executed} {
		require.Positive(t, ctr["Failed{outcome="+o.Label()+"}"], "%v", ctr)
	}
	for _, typ := range []string{"up", "updated", "down"} {
		require.Contains(t, ctr, "MemberEvents{type="+typ+"}", "MemberEvents labelled")
	}
	require.Contains(t, ctr, "DeadLetters{reason=no_process}")
	require.Positive(t, ctr["CallsPooled{}"])

	// The extra panel, drawn as a table.
	require.Len(t, tags(dom, "section", "extra"), 1)
	require.Contains(t, dom, `<section class="extra" data-panel="grains"><h2>grains`)
	require.Contains(t, dom, `<h3>activations per kind</h3>`)
	require.Contains(t, dom, `<th>kind</th><th>node</th><th>activations</th>`)
	require.Contains(t, dom, `<tr class="row"><td>account</td><td>b</td><td>9</td></tr>`)
	require.Regexp(t, `<div id="status" class="status">updated`, dom, "the script drew the page")

	// The screenshot, for the README.
	out := filepath.Join("..", "docs", "img", "observer.png")
	shot := filepath.Join(t.TempDir(), "observer.png")
	runChromium(t, bin, "--screenshot="+shot, "--window-size=1400,1700", url)
	png, err := os.ReadFile(shot)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG")
	require.Greater(t, len(png), 20_000, "a page with data, not a blank one")
	require.NoError(t, os.WriteFile(out, png, 0o644))
}

var (
	tagRE  = regexp.MustCompile(`<(tr|li|svg|g|line|polyline|section)\s[^>]*>`)
	attrRE = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
)

// tags are the attributes of every <name> element of dom whose class
// list starts with class.
func tags(dom, name, class string) []map[string]string {
	var out []map[string]string
	for _, m := range tagRE.FindAllStringSubmatch(dom, -1) {
		if m[1] != name {
			continue
		}
		attrs := map[string]string{}
		for _, a := range attrRE.FindAllStringSubmatch(m[0], -1) {
			attrs[a[1]] = a[2]
		}
		cls := attrs["class"]
		if cls == class || len(cls) > len(class) && cls[:len(class)+1] == class+" " {
			out = append(out, attrs)
		}
	}
	return out
}
