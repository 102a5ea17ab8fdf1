// Command mailroom-grains measures the cluster layer's grain calls beside
// named-actor calls to the same actors' nodes (issue 25's bench point):
// three nodes on loopback with Static seeds and proxy pools (every
// default), a kind "account" hosted on all three, 10,000 identities and
// 1,000 plain goroutines calling, spread over the three nodes.
//
//   - activation: the first request to each identity (it activates the
//     grain on its rendezvous owner), from 16 goroutines; latency per
//     activation.
//   - steady state, in rounds that alternate which goes first: "grain"
//     is cluster.Request(kind, identity) to activated grains (the
//     placement cache hit, then one pooled request to the activation);
//     "named" is System.RequestNamed(owner node, name) to a plain actor
//     of the same code spawned by name on the node that owns the
//     identity, so both reach the same node with the same work.
//
// The three nodes run in this one process: the CPU figure is the
// process's user+system CPU per call for all three nodes together, and
// the two workloads are compared within one run, never across runs. The
// overhead goal (issue 25): grain steady state within 20 % of named.
//
//	mailroom-grains -out results -name quick-grains
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/cluster"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const cookie = "mailroom-grains-bench-cookie-0123456789"

func main() {
	var cfg config
	flag.IntVar(&cfg.nodes, "nodes", 3, "nodes (in this process, on loopback)")
	flag.IntVar(&cfg.callers, "callers", 1000, "goroutines calling in the steady state, spread over the nodes")
	flag.IntVar(&cfg.ids, "ids", 10000, "identities")
	flag.IntVar(&cfg.calls, "calls", 200000, "calls per workload per round")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds; each runs both workloads, alternating which goes first")
	flag.IntVar(&cfg.activators, "activators", 16, "goroutines activating the identities")
	flag.BoolVar(&cfg.protoactor, "protoactor", true, "also run the workload on protoactor-go's cluster")
	flag.StringVar(&cfg.out, "out", "results", "directory of the results")
	flag.StringVar(&cfg.name, "name", "quick-grains", "base name of the results (NAME.json, NAME.md)")
	flag.StringVar(&cfg.cpuprofile, "cpuprofile", "", "write a CPU profile of the first round of one workload (-profiled) to this file")
	flag.StringVar(&cfg.profiled, "profiled", "grain", "the workload -cpuprofile profiles: grain or named")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "mailroom-grains:", err)
		os.Exit(1)
	}
}

type config struct {
	nodes, callers, ids, calls, rounds, activators int
	out, name                                      string
	protoactor                                     bool
	cpuprofile, profiled                           string
}

// account is the grain and the named actor alike: a balance.
type account struct{ bal int64 }

func (a *account) Receive(c *actor.Context) {
	if m, ok := c.Message().(*wrapperspb.Int64Value); ok {
		a.bal += m.Value
		c.Respond(wrapperspb.Int64(a.bal))
	}
}

func accountProps() *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &account{} })
}

type node struct {
	sys *actor.System
	rn  *remote.Node
	c   *cluster.Cluster
}

func start(ctx context.Context, n int) ([]node, error) {
	// Errors only: the stop at the end logs every link going down.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	var nodes []node
	var seeds []string
	for i := range n {
		name := fmt.Sprintf("g%d", i+1)
		sys, err := actor.Start(actor.Config{Name: name, Logger: log})
		if err != nil {
			return nodes, err
		}
		if err := sys.RegisterTypes(&wrapperspb.Int64Value{}); err != nil {
			return nodes, err
		}
		rn, err := remote.Start(ctx, sys, remote.Config{Cookie: cookie, Listen: "127.0.0.1:0", Seeds: append([]string(nil), seeds...)})
		if err != nil {
			return nodes, err
		}
		if _, err := proxypool.Start(rn, proxypool.Config{Eager: true}); err != nil {
			return nodes, err
		}
		c, err := cluster.Start(ctx, rn, cluster.Config{Kinds: []cluster.Kind{{Name: "account", Props: func(string) *actor.Props { return accountProps() }}}})
		if err != nil {
			return nodes, err
		}
		seeds = append(seeds, name+"="+rn.Addr())
		nodes = append(nodes, node{sys: sys, rn: rn, c: c})
	}
	for {
		all := true
		for _, nd := range nodes {
			all = all && len(nd.c.Hosts("account")) == n
		}
		if all {
			return nodes, nil
		}
		select {
		case <-ctx.Done():
			return nodes, fmt.Errorf("the nodes did not all see %d hosts: %w", n, ctx.Err())
		case <-time.After(10 * time.Millisecond): // polling
		}
	}
}

// cpu is the process's user+system CPU so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Result is one workload's figures in one round.
type Result struct {
	Workload     string  `json:"workload"`
	Round        int     `json:"round"`
	Calls        int     `json:"calls"`
	Failed       int64   `json:"failed"`
	WallS        float64 `json:"wall_s"`
	PerS         float64 `json:"per_s"`
	CPUSPerMill  float64 `json:"cpu_s_per_million"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	AllocsPerOp  float64 `json:"allocs_per_op"`
	FirstFailure string  `json:"first_failure,omitempty"`
}

// Report is the whole run.
type Report struct {
	Date        string   `json:"date"`
	Command     string   `json:"command"`
	Nodes       int      `json:"nodes"`
	Callers     int      `json:"callers"`
	Identities  int      `json:"identities"`
	Activation  Result   `json:"activation"`
	Rounds      []Result `json:"rounds"`
	GrainMedian Result   `json:"grain_median"`
	NamedMedian Result   `json:"named_median"`
	// OverheadCPU and OverheadP50 are grain over named, minus one, of the
	// medians (goal: at most 0.20).
	OverheadCPU  float64 `json:"overhead_cpu"`
	OverheadRate float64 `json:"overhead_rate"`
	OverheadP50  float64 `json:"overhead_p50"`
	// The same grain workload on protoactor-go's cluster, when run.
	ProtoactorActivation Result `json:"protoactor_activation"`
	ProtoactorMedian     Result `json:"protoactor_median"`
}

func run(cfg config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ids := make([]string, cfg.ids)
	for i := range ids {
		ids[i] = fmt.Sprintf("user-%d", i)
	}
	rep := Report{Date: time.Now().UTC().Format(time.RFC3339), Command: strings.Join(os.Args, " "),
		Nodes: cfg.nodes, Callers: cfg.callers, Identities: cfg.ids}
	if err := runMailroom(ctx, cfg, ids, &rep); err != nil {
		return err
	}
	if cfg.protoactor {
		if err := runProtoactor(ctx, cfg, ids, &rep); err != nil {
			return fmt.Errorf("protoactor: %w", err)
		}
		rep.ProtoactorMedian = median(rep.Rounds, "protoactor-grain")
	}
	for _, r := range rep.Rounds {
		if r.Failed > 0 {
			return fmt.Errorf("%s round %d: %d calls failed (first: %s)", r.Workload, r.Round, r.Failed, r.FirstFailure)
		}
	}
	return write(cfg, rep)
}

// profile starts a CPU profile into path when on, and returns its stop.
func profile(path string, on bool) func() {
	if path == "" || !on {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mailroom-grains: cpuprofile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "mailroom-grains: cpuprofile:", err)
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

func randN(n int) int { return rand.IntN(n) }

// runMailroom measures activation, then the grain and named workloads in
// alternating rounds, on mailroom's cluster.
func runMailroom(ctx context.Context, cfg config, ids []string, rep *Report) error {
	nodes, err := start(ctx, cfg.nodes)
	defer func() {
		for i := len(nodes) - 1; i >= 0; i-- {
			sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
			_ = nodes[i].sys.Stop(sctx)
			scancel()
		}
	}()
	if err != nil {
		return err
	}

	// Activation: every identity once, from every node in turn.
	fmt.Fprintf(os.Stderr, "activating %d identities from %d goroutines\n", cfg.ids, cfg.activators)
	rep.Activation = measure(ctx, "activation", 0, cfg.ids, cfg.activators, func(_ int, i int) error {
		nd := nodes[i%len(nodes)]
		_, err := nd.c.Request(ctx, nd.sys, "account", ids[i], wrapperspb.Int64(1))
		return err
	}, func(int) int { return 1 })
	if rep.Activation.Failed > 0 {
		return fmt.Errorf("activation: %d of %d failed (first: %s)", rep.Activation.Failed, cfg.ids, rep.Activation.FirstFailure)
	}
	printResult(rep.Activation)

	// The named actors: one per identity, on the node that owns it.
	owner := make([]string, cfg.ids)
	byName := map[string]node{}
	for _, nd := range nodes {
		byName[nd.sys.Name()] = nd
	}
	for i, id := range ids {
		o, ok := nodes[0].c.Owner("account", id)
		if !ok {
			return fmt.Errorf("no owner for %s", id)
		}
		owner[i] = o
		if _, err := byName[o].sys.SpawnNamed(accountProps(), "plain-"+id); err != nil {
			return err
		}
	}

	grain := func(caller, i int) error {
		nd := nodes[caller%len(nodes)]
		_, err := nd.c.Request(ctx, nd.sys, "account", ids[i], wrapperspb.Int64(1))
		return err
	}
	named := func(caller, i int) error {
		nd := nodes[caller%len(nodes)]
		_, err := nd.sys.RequestNamed(ctx, owner[i], "plain-"+ids[i], wrapperspb.Int64(1))
		return err
	}
	pick := func(n int) func(int) int {
		return func(int) int { return randN(n) }
	}
	// A warm-up of each, not reported.
	measure(ctx, "warmup", 0, cfg.calls/4, cfg.callers, grain, pick(cfg.ids))
	measure(ctx, "warmup", 0, cfg.calls/4, cfg.callers, named, pick(cfg.ids))
	for r := range cfg.rounds {
		order := []string{"grain", "named"}
		if r%2 == 1 {
			order = []string{"named", "grain"}
		}
		for _, w := range order {
			f := grain
			if w == "named" {
				f = named
			}
			stop := profile(cfg.cpuprofile, w == cfg.profiled && r == 0)
			res := measure(ctx, w, r, cfg.calls, cfg.callers, f, pick(cfg.ids))
			stop()
			printResult(res)
			rep.Rounds = append(rep.Rounds, res)
		}
	}
	rep.GrainMedian, rep.NamedMedian = median(rep.Rounds, "grain"), median(rep.Rounds, "named")
	rep.OverheadCPU = rep.GrainMedian.CPUSPerMill/rep.NamedMedian.CPUSPerMill - 1
	rep.OverheadRate = rep.NamedMedian.PerS/rep.GrainMedian.PerS - 1
	rep.OverheadP50 = rep.GrainMedian.P50Ms/rep.NamedMedian.P50Ms - 1
	return nil
}

// measure runs total calls of f from workers goroutines; next picks each
// call's identity index for a caller.
func measure(ctx context.Context, workload string, round, total, workers int, f func(caller, i int) error, next func(caller int) int) Result {
	var (
		left     atomic.Int64
		failed   atomic.Int64
		firstErr atomic.Value
		mu       sync.Mutex
		lats     = make([]time.Duration, 0, total)
		wg       sync.WaitGroup
		ms0, ms1 runtimeMem
	)
	left.Store(int64(total))
	seq := atomic.Int64{}
	readMem(&ms0)
	c0, t0 := cpu(), time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, total/workers+1)
			for left.Add(-1) >= 0 && ctx.Err() == nil {
				i := next(w)
				if workload == "activation" {
					i = int(seq.Add(1) - 1)
				}
				s := time.Now()
				if err := f(w, i); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				local = append(local, time.Since(s))
			}
			mu.Lock()
			lats = append(lats, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	wall, used := time.Since(t0), cpu()-c0
	readMem(&ms1)
	sort.Slice(lats, func(a, b int) bool { return lats[a] < lats[b] })
	q := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return float64(lats[int(p*float64(len(lats)-1))]) / 1e6
	}
	res := Result{Workload: workload, Round: round, Calls: total, Failed: failed.Load(), WallS: wall.Seconds(),
		PerS: float64(total) / wall.Seconds(), CPUSPerMill: used.Seconds() / float64(total) * 1e6,
		P50Ms: q(0.50), P99Ms: q(0.99), AllocsPerOp: float64(ms1.mallocs-ms0.mallocs) / float64(total)}
	if v, ok := firstErr.Load().(string); ok {
		res.FirstFailure = v
	}
	return res
}

func median(rs []Result, workload string) Result {
	var sel []Result
	for _, r := range rs {
		if r.Workload == workload {
			sel = append(sel, r)
		}
	}
	if len(sel) == 0 {
		return Result{Workload: workload}
	}
	sort.Slice(sel, func(a, b int) bool { return sel[a].CPUSPerMill < sel[b].CPUSPerMill })
	m := sel[len(sel)/2]
	m.Round = -1
	return m
}

func printResult(r Result) {
	fmt.Fprintf(os.Stderr, "%-10s round=%d calls=%d failed=%d %.0f/s cpu=%.2fs/M p50=%.3fms p99=%.3fms allocs=%.1f/op\n",
		r.Workload, r.Round, r.Calls, r.Failed, r.PerS, r.CPUSPerMill, r.P50Ms, r.P99Ms, r.AllocsPerOp)
}

func write(cfg config, rep Report) error {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, cfg.name+".json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Grain calls beside named-actor calls (%s)\n\n", rep.Date)
	fmt.Fprintf(&b, "`%s`: %d nodes in one process on loopback (Static seeds, proxy pools), %d identities, %d goroutine callers spread over the nodes. CPU is the process's (all nodes) per call; medians of %d rounds by CPU.\n\n",
		rep.Command, rep.Nodes, rep.Identities, rep.Callers, cfg.rounds)
	b.WriteString("| workload | calls/s | CPU s per million | p50 ms | p99 ms | allocs/op |\n|---|---:|---:|---:|---:|---:|\n")
	meds := []Result{rep.NamedMedian, rep.GrainMedian}
	if rep.ProtoactorMedian.Calls > 0 {
		meds = append(meds, rep.ProtoactorMedian)
	}
	for _, r := range meds {
		fmt.Fprintf(&b, "| %s | %.0f | %.2f | %.3f | %.3f | %.1f |\n", r.Workload, r.PerS, r.CPUSPerMill, r.P50Ms, r.P99Ms, r.AllocsPerOp)
	}
	goal := "met"
	if rep.OverheadCPU > 0.20 || rep.OverheadRate > 0.20 {
		goal = "missed"
	}
	fmt.Fprintf(&b, "\nGrain over named: CPU per call %+.1f %%, throughput %+.1f %% (named over grain), p50 %+.1f %%; goal at most +20 %%: %s.\n\n",
		100*rep.OverheadCPU, 100*rep.OverheadRate, 100*rep.OverheadP50, goal)
	a := rep.Activation
	fmt.Fprintf(&b, "Activation (first request to each of %d identities, %d goroutines): p50 %.3f ms, p99 %.3f ms, %.0f activations/s.\n\n",
		a.Calls, cfg.activators, a.P50Ms, a.P99Ms, a.PerS)
	if pa := rep.ProtoactorActivation; pa.Calls > 0 {
		fmt.Fprintf(&b, "protoactor-go's cluster (3 members in this process, its in-memory test provider, disthash lookup), the same activation: p50 %.3f ms, p99 %.3f ms, %.0f activations/s.\n\n",
			pa.P50Ms, pa.P99Ms, pa.PerS)
	}
	b.WriteString("Every round:\n\n| workload | round | calls/s | CPU s per million | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rep.Rounds {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.2f | %.3f | %.3f |\n", r.Workload, r.Round, r.PerS, r.CPUSPerMill, r.P50Ms, r.P99Ms)
	}
	if err := os.WriteFile(filepath.Join(cfg.out, cfg.name+".md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	if goal == "missed" {
		fmt.Fprintln(os.Stderr, "mailroom-grains: the overhead goal (20 %) is missed: reported, not hidden")
	}
	return nil
}

type runtimeMem struct{ mallocs uint64 }

func readMem(m *runtimeMem) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.mallocs = ms.Mallocs
}
