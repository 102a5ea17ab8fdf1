package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/mailroom-go/mailroom/observer"
	"github.com/stretchr/testify/require"
)

// panelWorkload starts three Static nodes, activates n identities from
// the first (each twice: a miss, then a hit) and serves the first node's
// observer with the cluster panel.
func panelWorkload(t *testing.T, n int) ([]*Cluster, *httptest.Server) {
	t.Helper()
	cs := staticNodes(t, 3, newStore(), 0)
	c := cs[0]
	for i := range n {
		for range 2 {
			_, err := c.Request(ctxT(t, 10*time.Second), c.sys, "account", "user-"+strconv.Itoa(i), echo("add", 1))
			require.NoError(t, err)
		}
	}
	srv := httptest.NewServer(observer.Handler(c.node, observer.Options{Panels: []observer.Panel{Panel(c)}}))
	t.Cleanup(srv.Close)
	return cs, srv
}

func tableOf(t *testing.T, v observer.PanelView, title string) observer.Table {
	t.Helper()
	for _, tb := range v.Tables {
		if tb.Title == title {
			return tb
		}
	}
	t.Fatalf("no table %q in %+v", title, v)
	return observer.Table{}
}

// TestPanelJSON: the panel's endpoint shows the kind with its three
// hosts, every node's activations as each node counts them (asked over
// the network), no leases with Static, the cache's hits and misses and
// hit rate, and the singleton and topic tables, empty.
func TestPanelJSON(t *testing.T) {
	const n = 40
	cs, srv := panelWorkload(t, n)
	var v observer.PanelView
	resp, err := http.Get(srv.URL + "/api/panels/" + PanelName)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, &v), string(body))
	require.Empty(t, v.Err)
	require.Equal(t, PanelName, v.Name)

	kinds := tableOf(t, v, "kinds")
	require.Equal(t, [][]string{{"account", "yes", "3", "g1, g2, g3", strconv.Itoa(cs[0].Activations())}}, kinds.Rows)

	nodes := tableOf(t, v, "activations per node")
	require.Len(t, nodes.Rows, 3)
	total := 0
	for i, r := range nodes.Rows {
		name := cs[i].sys.Name()
		if i == 0 {
			name += " (this node)"
		}
		require.Equal(t, []string{name, actor.FormatIncarnation(cs[i].sys.Incarnation()), "account", strconv.Itoa(cs[i].Activations())}, r)
		total += cs[i].Activations()
	}
	require.Equal(t, n, total)
	for _, c := range cs {
		require.NotZero(t, c.Activations(), "40 identities over 3 nodes: each has some")
	}

	leases := tableOf(t, v, "owner leases")
	require.Equal(t, [][]string{{"none: placement and handover (docs/CLUSTER.md)", "0", "0", "0", "0"}}, leases.Rows)

	cache := tableOf(t, v, "placement cache")
	require.Equal(t, []string{"entries", "bound", "hits", "misses", "hit rate", "not-owner refusals", "retries"}, cache.Columns)
	st := cs[0].Stats()
	require.EqualValues(t, n, st.CacheHits)
	require.EqualValues(t, n, st.CacheMisses)
	require.Equal(t, []string{strconv.Itoa(n), strconv.Itoa(DefaultCacheSize), strconv.Itoa(n), strconv.Itoa(n), "50.0 %", "0", "0"}, cache.Rows[0])
	life := tableOf(t, v, "activations here since start")
	require.Equal(t, [][]string{{strconv.FormatUint(st.Activations, 10), strconv.Itoa(cs[0].Activations()), "0", "0"}}, life.Rows)

	require.Empty(t, tableOf(t, v, "singleton owners").Rows)
	require.Empty(t, tableOf(t, v, "topics").Rows)

	// A node that has gone: its row leaves the table once the view has
	// heard, and the others still answer.
	gone := cs[2]
	require.NoError(t, gone.sys.Stop(ctxT(t, 15*time.Second)))
	testutil.Eventually(t, "g3 out of the panel", func() bool {
		var v observer.PanelView
		resp, err := http.Get(srv.URL + "/api/panels/" + PanelName)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if json.NewDecoder(resp.Body).Decode(&v) != nil || len(v.Tables) < 2 {
			return false
		}
		rows := tableOf(t, v, "activations per node").Rows
		return len(rows) == 2 && rows[1][0] == "g2" && rows[1][3] == strconv.Itoa(cs[1].Activations())
	})
}

var rowRE = regexp.MustCompile(`<tr class="row">((?:<td>[^<]*</td>)+)</tr>`)

// TestPanelBrowser: the page of a node with the cluster panel, rendered
// by headless Chromium, draws the panel's tables with the activations
// of every node; its screenshot goes to docs/img/observer-cluster.png.
func TestPanelBrowser(t *testing.T) {
	bin := testutil.Chromium(t)
	cs, srv := panelWorkload(t, 60)
	dom := string(testutil.RunChromium(t, bin, "--dump-dom", srv.URL+"/"))
	require.Contains(t, dom, `<section class="extra" data-panel="cluster"><h2>cluster`)
	for _, h := range []string{"kinds", "activations per node", "owner leases", "placement cache", "activations here since start", "singleton owners", "topics"} {
		require.Contains(t, dom, "<h3>"+h+"</h3>")
	}
	i := strings.Index(dom, `data-panel="cluster"`)
	rows := map[string][]string{}
	for _, m := range rowRE.FindAllStringSubmatch(dom[i:], -1) {
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(m[1], "<td>"), "</td>"), "</td><td>")
		rows[cells[0]] = cells
	}
	require.Equal(t, []string{"account", "yes", "3", "g1, g2, g3", strconv.Itoa(cs[0].Activations())}, rows["account"])
	for j, c := range cs {
		name := c.sys.Name()
		if j == 0 {
			name += " (this node)"
		}
		require.Equal(t, strconv.Itoa(c.Activations()), rows[name][3], "%s's activations drawn: %v", name, rows)
	}

	out := filepath.Join("..", "docs", "img", "observer-cluster.png")
	shot := filepath.Join(t.TempDir(), "observer-cluster.png")
	testutil.RunChromium(t, bin, "--screenshot="+shot, "--window-size=1400,2400", srv.URL+"/")
	png, err := os.ReadFile(shot)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG")
	require.Greater(t, len(png), 20_000, fmt.Sprintf("a page with data, not a blank one (%d bytes)", len(png)))
	require.NoError(t, os.WriteFile(out, png, 0o644))
}
