package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
)

// TestPrometheusScrape runs a real Prometheus server with the scrape
// configuration of docs/METRICS.md (its targets and interval replaced)
// against two nodes, a with the default node label and b with
// WithNodeLabel(""), under a little load, then a restart of a; and checks
// that the target's own node label is kept beside ours (nothing renamed
// exported_*), and that each query of the page answers what it says.
func TestPrometheusScrape(t *testing.T) {
	bin := prometheusBin(t)
	b := startNode(t, "b")
	a := startNode(t, "a", "b="+b.n.Addr())
	testutil.Eventually(t, "a linked to b", func() bool { _, ok := a.n.Peer("b"); return ok })
	var regA atomic.Pointer[prometheus.Registry]
	regA.Store(prometheus.NewRegistry())
	require.NoError(t, Register(regA.Load(), a.n))
	srvA := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		promhttp.HandlerFor(regA.Load(), promhttp.HandlerOpts{}).ServeHTTP(w, r)
	}))
	t.Cleanup(srvA.Close)
	regB := prometheus.NewRegistry()
	require.NoError(t, Register(regB, b.n, WithNodeLabel("")))
	srvB := httptest.NewServer(promhttp.HandlerFor(regB, promhttp.HandlerOpts{}))
	t.Cleanup(srvB.Close)
	stop := testnode.Load{Every: 20 * time.Millisecond, MayHaveExecutedEvery: 10}.Start(a.sys, "b")
	t.Cleanup(stop)

	prom := startPrometheus(t, bin, docScrapeConfig(t, srvA.Listener.Addr().String(), srvB.Listener.Addr().String()))
	testutil.Eventually(t, "both targets up", func() bool {
		up := prom.query(t, `up{job="mailroom"} == 1`)
		return len(up) == 2
	})

	// The target's node label and ours, side by side; nothing renamed.
	info := prom.query(t, `mailroom_node_info`)
	require.Len(t, info, 2, "%v", info)
	byTarget := map[string]map[string]string{}
	for _, s := range info {
		byTarget[s.Metric["instance"]] = s.Metric
	}
	incA := actor.FormatIncarnation(a.sys.Incarnation())
	require.Equal(t, map[string]string{
		"__name__": "mailroom_node_info", "job": "mailroom", "instance": srvA.Listener.Addr().String(),
		"node": "host-17", "mailroom_node": "a", "incarnation": incA,
	}, byTarget[srvA.Listener.Addr().String()])
	require.Equal(t, "b", byTarget[srvB.Listener.Addr().String()]["mailroom_node"], "WithNodeLabel(\"\"): still on node_info")
	require.Empty(t, prom.query(t, `{__name__=~"mailroom_.+", exported_node!=""}`), "no exported_node")
	require.Empty(t, prom.query(t, `{__name__=~"mailroom_.+", exported_mailroom_node!=""}`))
	require.Empty(t, prom.query(t, `{__name__=~"mailroom_.+", instance="`+srvA.Listener.Addr().String()+`", mailroom_node!="a"}`),
		"every series of a's target says a")

	// The page's queries.
	q := docQueries(t)
	require.Len(t, q, 4, "the queries of docs/METRICS.md: %q", q)
	perNode := func(query string) map[string]float64 {
		out := map[string]float64{}
		for _, s := range prom.query(t, query) {
			out[s.Metric["mailroom_node"]] = s.value(t)
		}
		return out
	}
	testutil.Eventually(t, "a's message rate", func() bool { return perNode(q[0])["a"] > 0 })
	testutil.Eventually(t, "a's may-have-executed rate", func() bool { return perNode(q[1])["a"] > 0 })
	require.Zero(t, perNode(q[1])["b"], "b made no call")
	require.Empty(t, perNode(q[2]), "no restart yet")
	testutil.Eventually(t, "the join names b", func() bool {
		_, ok := perNode(q[3])["b"]
		return ok
	})

	// a restarts: a new incarnation on the same target.
	stop()
	a.stop()
	a2 := startNode(t, "a", "b="+b.n.Addr())
	reg2 := prometheus.NewRegistry()
	require.NoError(t, Register(reg2, a2.n))
	regA.Store(reg2)
	testutil.Eventually(t, "the restart seen", func() bool { return perNode(q[2])["a"] == 2 })
	require.NotContains(t, perNode(q[2]), "b")
}

// docFences are the fenced blocks of docs/METRICS.md of one language.
func docFences(t *testing.T, lang string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "METRICS.md"))
	require.NoError(t, err)
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		out = append(out, m[1])
	}
	return out
}

// docScrapeConfig is the page's scrape configuration with its targets
// replaced by targets and its interval by 1s.
func docScrapeConfig(t *testing.T, targets ...string) string {
	t.Helper()
	yaml := docFences(t, "yaml")
	require.Len(t, yaml, 1, "one scrape configuration in docs/METRICS.md")
	cfg := yaml[0]
	for _, r := range [][2]string{
		{`["orders-1.internal:9100", "orders-2.internal:9100"]`, `["` + strings.Join(targets, `", "`) + `"]`},
		{`scrape_interval: 15s`, `scrape_interval: 1s`},
	} {
		require.Equal(t, 1, strings.Count(cfg, r[0]), "docs/METRICS.md's configuration has %s", r[0])
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	return cfg
}

// docQueries are the page's PromQL queries, in order.
func docQueries(t *testing.T) []string {
	var out []string
	for _, q := range docFences(t, "promql") {
		out = append(out, strings.TrimSpace(q))
	}
	return out
}

// prometheusBin finds the Prometheus server: $PROMETHEUS, else prometheus
// on PATH. Without one the test skips, or fails under CI=true (make test
// installs it: scripts/prometheus.sh).
func prometheusBin(t *testing.T) string {
	t.Helper()
	return testutil.Command(t, "PROMETHEUS", "scripts/prometheus.sh installs Debian's prometheus", "prometheus")
}

type promServer struct{ url string }

// startPrometheus runs bin with cfg on a loopback port until the test
// ends (then kills it and its children and waits), and waits until it is
// ready.
func startPrometheus(t *testing.T, bin, cfg string) *promServer {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // Prometheus binds it: a small window, fine on loopback
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("prometheus:\n%s", logs.String())
		}
	})
	p := &promServer{url: "http://" + addr}
	testutil.Eventually(t, "prometheus ready", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited: %v\n%s", err, logs.String())
		default:
		}
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s promSample) value(t *testing.T) float64 {
	v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
	require.NoError(t, err)
	return v
}

// query runs an instant query and returns its vector.
func (p *promServer) query(t *testing.T, q string) []promSample {
	t.Helper()
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promSample `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "success", out.Status, "%s: %s", q, out.Error)
	require.Equal(t, "vector", out.Data.ResultType, q)
	return out.Data.Result
}
