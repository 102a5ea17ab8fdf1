package scaletest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/consultest"
)

// Config is one run of the scale test: one cluster size.
type Config struct {
	// Nodes is the cluster size; Targets how many random peers each node
	// loads; Kill how many nodes are SIGKILLed at once and restarted.
	Nodes, Targets, Kill int
	// Load is what every node does to each of its targets.
	Load Load
	// Consul is the agent's HTTP address; Service the Consul service
	// name the nodes register (one per run, so runs do not see each
	// other).
	Consul, Service string
	// TTL is the Consul health check's TTL (refreshed every TTL/3).
	// Default discovery.DefaultConsulTTL, what a node gets by default: a
	// shorter one makes nodes on a starved machine miss their refresh
	// and, as designed, declare themselves dead.
	TTL time.Duration
	// Dir holds the nodes' report files.
	Dir string
	// Seed picks the targets and the nodes killed.
	Seed uint64
	// StartParallel is how many node processes start at once.
	StartParallel int
	// LoadFor is how long the load runs before the kill, and again after
	// the restarted nodes are back.
	LoadFor time.Duration
	// Lazy starts every node's proxy pools lazily (proxypool's default):
	// a pool only toward the peers a node sends to; false: Eager.
	Lazy bool
	// PoolSize is the receiver pool (and proxy pool) size of every node:
	// the children's GOMAXPROCS, as remote.Config defaults it.
	PoolSize int
	// Logf reports progress (t.Logf).
	Logf func(format string, args ...any)
}

func (c *Config) defaults() {
	if c.Targets == 0 {
		c.Targets = 4
	}
	if c.TTL == 0 {
		c.TTL = discovery.DefaultConsulTTL
	}
	if c.StartParallel == 0 {
		c.StartParallel = 4
	}
	if c.LoadFor == 0 {
		c.LoadFor = 5 * time.Second
	}
	if c.PoolSize == 0 {
		c.PoolSize = runtime.GOMAXPROCS(0)
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Result is what one run measured.
type Result struct {
	Nodes int `json:"nodes"`
	// Pools is "eager" (proxypool.Config.Eager) or "lazy".
	Pools   string `json:"pools"`
	Killed  int    `json:"killed"`
	Targets int    `json:"targets"`
	// StartMS: launching every process until each is registered and
	// listening; ConvergeMS: from then until every node lists every other
	// node's incarnation as up; ReconvergeMS the same after the restart.
	StartMS      int64 `json:"start_ms"`
	ConvergeMS   int64 `json:"converge_ms"`
	ReconvergeMS int64 `json:"reconverge_ms"`
	// Per node, the largest seen at any sample during the run.
	LinksMax      int     `json:"links_per_node_max"`
	PoolLinksMax  int     `json:"pool_links_out_per_node_max"`
	NativeMax     int     `json:"native_links_per_node_max"`
	IdlePoolLinks int     `json:"idle_pool_links_per_node_max"` // pool links toward peers a node exchanges no traffic with
	LinksBound    int     `json:"links_bound"`                  // (active peers × pool size) × 2 directions + native links, the largest over nodes
	FDsMax        int     `json:"fds_per_node_max"`
	RSSMBMax      float64 `json:"rss_mb_max"`
	RSSMBMean     float64 `json:"rss_mb_mean"` // mean over nodes of each node's largest
	Goroutines    int     `json:"goroutines_per_node_max"`
	// Consul: requests per second to the agent from the whole cluster
	// during the steady load, their bytes, and the most blocking watches
	// one node held open at once.
	ConsulReqPerS   float64 `json:"consul_req_per_s"`
	ConsulBytesPerS float64 `json:"consul_bytes_per_s"`
	WatchesOpenMax  int64   `json:"watches_open_per_node_max"`
	// WatchBytesPerEntry: the bytes of the blocking watch's answers in
	// the steady window, over the answers and the members each lists.
	WatchBytesPerEntry float64 `json:"watch_bytes_per_member_entry"`
	// DetectMSMax: the latest any surviving node saw a killed
	// incarnation gone, after the kill (target: TTL + 1 s).
	DetectMSMax int64 `json:"detect_ms_max"`
	DetectMSP50 int64 `json:"detect_ms_p50"`
	// Hung: operations toward a killed incarnation still in flight once
	// every node had seen it gone plus a second, and operations still in
	// flight ten seconds after the load stopped.
	Hung int `json:"hung"`
	// WrongIncarnation: answers from an incarnation that must not answer.
	WrongIncarnation int64 `json:"wrong_incarnation"`
	// Ops: operations ended, by class, summed over every node; Sent and
	// Received: numbered sends; OutOfOrder at the sinks.
	Ops        map[string]int64 `json:"ops"`
	Sent       int64            `json:"sent"`
	Received   int64            `json:"received"`
	OutOfOrder int64            `json:"out_of_order"`
	Unexpected []string         `json:"unexpected,omitempty"`
	TTLMS      int64            `json:"ttl_ms"`
	PoolSize   int              `json:"pool_size"`
	WallS      float64          `json:"wall_s"`
	Load       Load             `json:"load"`
}

// Line is the run's one-line summary.
func (r Result) Line() string {
	return fmt.Sprintf("scale nodes=%d converge_ms=%d links_per_node_max=%d fds_per_node_max=%d rss_mb_max=%.1f consul_req_per_s=%.1f detect_ms_max=%d hung=%d wrong_incarnation=%d pools=%s",
		r.Nodes, r.ConvergeMS, r.LinksMax, r.FDsMax, r.RSSMBMax, r.ConsulReqPerS, r.DetectMSMax, r.Hung, r.WrongIncarnation, r.Pools)
}

// Run runs one cluster size: start, converge, load, kill cfg.Kill nodes
// at once, detect, restart them under the same names, converge, load,
// stop. It returns an error when the run could not be carried out (a
// node did not start, the cluster never converged); what it measured,
// including hung or wrong answers, is in the Result.
func Run(cfg Config) (res Result, err error) {
	cfg.defaults()
	began := time.Now()
	pools := "eager"
	if cfg.Lazy {
		pools = "lazy"
	}
	res = Result{Nodes: cfg.Nodes, Pools: pools, Killed: cfg.Kill, Targets: cfg.Targets, TTLMS: cfg.TTL.Milliseconds(), PoolSize: cfg.PoolSize, Load: cfg.Load}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return res, err
	}
	c, err := newCluster(cfg)
	if err != nil {
		return res, err
	}
	defer func() {
		c.close()
		c.removeReports()
	}()
	smp := startSampler(c, 250*time.Millisecond)
	defer smp.stop()

	cfg.Logf("scale: starting %d nodes", cfg.Nodes)
	t0 := time.Now()
	if err := c.start(c.members); err != nil {
		return res, err
	}
	res.StartMS = time.Since(t0).Milliseconds()
	t1 := time.Now()
	if err := c.awaitMembers(c.members, 30*time.Second+cfg.TTL*time.Duration(cfg.Nodes)/4); err != nil {
		return res, fmt.Errorf("converging: %w", err)
	}
	res.ConvergeMS = time.Since(t1).Milliseconds()
	cfg.Logf("scale: converged in %d ms; load for %v", res.ConvergeMS, cfg.LoadFor)

	c.signal(c.members, syscall.SIGUSR1)
	consul0, steady0 := c.consul(), time.Now()
	watch(cfg.LoadFor)
	consul1, steady := c.consul(), time.Since(steady0).Seconds()
	d := consul1.Sub(consul0)
	res.ConsulReqPerS = float64(d.Total()) / steady
	var bytes int64
	for _, b := range d.BytesByKind {
		bytes += b
	}
	res.ConsulBytesPerS = float64(bytes) / steady
	for _, m := range c.members {
		res.WatchesOpenMax = max(res.WatchesOpenMax, m.proxy.Counts().WatchOpenMax)
	}

	victims := c.pickVictims(cfg.Kill, cfg.Seed)
	old := map[string]string{}
	for _, v := range victims {
		old[v.name], _ = c.current(v)
	}
	cfg.Logf("scale: killing %d nodes", len(victims))
	finals := map[string]Snapshot{} // the last report of every incarnation, by "node/inc"
	consulKill := c.consul()
	killAt := c.kill(victims)
	for _, v := range victims {
		if _, report := c.current(v); report != "" {
			if s, err := ReadSnapshot(report); err == nil {
				finals[v.name+"/"+old[v.name]] = s
			}
		}
	}
	detect, err := c.awaitDetection(victims, old, killAt, 10*time.Second+2*cfg.TTL)
	if err != nil {
		return res, err
	}
	sort.Slice(detect, func(i, j int) bool { return detect[i] < detect[j] })
	res.DetectMSMax = detect[len(detect)-1]
	res.DetectMSP50 = detect[len(detect)/2]
	cfg.Logf("scale: detected within %d ms (p50 %d)", res.DetectMSMax, res.DetectMSP50)
	// Every node has seen every victim gone; a second later nothing may
	// still wait on one.
	res.Hung += c.awaitStuckTowards(victims, old, killAt.UnixMilli(), time.Now().Add(time.Second))

	if err := c.start(victims); err != nil {
		return res, err
	}
	t2 := time.Now()
	if err := c.awaitMembers(c.members, 30*time.Second); err != nil {
		return res, fmt.Errorf("converging after the restart: %w", err)
	}
	res.ReconvergeMS = time.Since(t2).Milliseconds()
	// The watch answers from the kill to the reconvergence list between
	// Nodes-Kill and Nodes members: per entry, counted as Nodes.
	if w := c.consul().Sub(consulKill); w.Of(consultest.KindWatch) > 0 {
		res.WatchBytesPerEntry = float64(w.BytesByKind[consultest.KindWatch]) / float64(w.Of(consultest.KindWatch)) / float64(cfg.Nodes)
	}
	c.signal(victims, syscall.SIGUSR1)
	watch(cfg.LoadFor)

	c.signal(c.members, syscall.SIGUSR2)
	inflight := c.awaitIdle(10 * time.Second)
	res.Hung += inflight
	for name, s := range c.snapshots() {
		finals[name+"/"+s.Inc] = s
	}
	max := smp.maxima()
	res.LinksMax, res.PoolLinksMax, res.FDsMax, res.Goroutines = max.Links, max.PoolOut, max.FDs, max.Goroutines
	res.RSSMBMax = float64(max.RSS) / (1 << 20)
	res.NativeMax, res.IdlePoolLinks, res.LinksBound, res.RSSMBMean = c.linkFigures(smp)
	res.Ops = map[string]int64{}
	for _, s := range finals {
		for _, ts := range s.Targets {
			res.WrongIncarnation += ts.Wrong
			res.Sent += ts.Sent
			for kind, byClass := range ts.Ops {
				for cl, n := range byClass {
					res.Ops[kind+"."+cl] += n
				}
			}
		}
		res.Received += s.Sink.Received
		res.OutOfOrder += s.Sink.OutOfOrder
		for _, u := range s.Unexpected {
			if len(res.Unexpected) < 16 {
				res.Unexpected = append(res.Unexpected, s.Node+": "+u)
			}
		}
	}
	res.WallS = time.Since(began).Seconds()
	return res, nil
}

// watch lets the load run for d: the measurement window, not a wait for
// an event.
func watch(d time.Duration) { <-time.After(d) }

// pickVictims chooses k members, the same for a given seed.
func (c *cluster) pickVictims(k int, seed uint64) []*member {
	idx := rand.New(rand.NewPCG(seed, 0xdead)).Perm(len(c.members))
	out := make([]*member, 0, k)
	for _, i := range idx[:min(k, len(idx))] {
		out = append(out, c.members[i])
	}
	return out
}

// poll calls ok every 100 ms until it returns true or the deadline.
func poll(deadline time.Time, ok func() bool) bool {
	for {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-time.After(100 * time.Millisecond)
	}
}

// awaitMembers waits until every live node lists the current incarnation
// of every other one in ms as up.
func (c *cluster) awaitMembers(ms []*member, within time.Duration) error {
	var missing string
	var culprit, observer *member
	ok := poll(time.Now().Add(within), func() bool {
		snaps := c.snapshots()
		for _, m := range c.live() {
			s, have := snaps[m.name]
			if !have || s.Inc != m.inc {
				missing, culprit = m.name+" has not reported yet", m.member
				return false
			}
			for _, o := range ms {
				inc, _ := c.current(o)
				if o != m.member && s.Members[o.name] != inc {
					missing, culprit, observer = fmt.Sprintf("%s does not list %s/%s (lists %q; what it saw of it: %+v; it lists %d members)", m.name, o.name, inc, s.Members[o.name], seenOf(s, o.name), len(s.Members)), o, m.member
					return false
				}
			}
		}
		return true
	})
	if !ok {
		c.mu.Lock()
		for _, x := range []*member{culprit, observer} {
			if x != nil && x.child != nil {
				missing += "\n" + x.name + "'s log (errors, and the last lines):\n" + notable(x.child.Stderr(), 10) + "\n...\n" + tail(x.child.Stderr(), 8)
			}
		}
		if observer != nil {
			missing += fmt.Sprintf("\n%s's requests to the agent: %s", observer.name, observer.proxy.Counts())
		}
		c.mu.Unlock()
		return fmt.Errorf("not converged within %v: %s", within, missing)
	}
	return nil
}

// awaitDetection waits until every surviving node has seen every victim's
// old incarnation gone and returns, per survivor and victim, how long
// after the kill it saw it.
func (c *cluster) awaitDetection(victims []*member, old map[string]string, killAt time.Time, within time.Duration) ([]int64, error) {
	var out []int64
	var missing string
	ok := poll(time.Now().Add(within), func() bool {
		out = out[:0]
		snaps := c.snapshots()
		for _, m := range c.live() {
			s, have := snaps[m.name]
			if !have {
				missing = m.name + " has no report"
				return false
			}
			for _, v := range victims {
				d := seenDetected(s, v.name, old[v.name])
				if d == 0 {
					missing = fmt.Sprintf("%s has not seen %s/%s gone", m.name, v.name, old[v.name])
					return false
				}
				out = append(out, max(d-killAt.UnixMilli(), 0))
			}
		}
		return len(out) > 0
	})
	if !ok {
		return nil, fmt.Errorf("detection not complete within %v: %s", within, missing)
	}
	return out, nil
}

// notable is the first n lines of log at level ERROR.
func notable(log string, n int) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=ERROR") && len(out) < n {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// seenOf is what s's node saw of node's incarnations.
func seenOf(s Snapshot, node string) []Seen {
	var out []Seen
	for _, x := range s.Seen {
		if x.Node == node {
			out = append(out, x)
		}
	}
	return out
}

// seenDetected is when s's node saw node/inc gone (0: not yet).
func seenDetected(s Snapshot, node, inc string) int64 {
	for i := range s.Seen {
		if s.Seen[i].Node == node && s.Seen[i].Inc == inc {
			return s.Seen[i].Detected()
		}
	}
	return 0
}

// awaitStuckTowards waits for every live node's report written after at,
// and counts the operations toward a victim begun before the kill that
// are still in flight in them.
func (c *cluster) awaitStuckTowards(victims []*member, old map[string]string, killMS int64, at time.Time) int {
	<-time.After(time.Until(at))
	isVictim := map[string]bool{}
	for _, v := range victims {
		isVictim[v.name] = true
	}
	hung := 0
	poll(at.Add(5*time.Second), func() bool {
		hung = 0
		snaps := c.snapshots()
		for _, m := range c.live() {
			s, have := snaps[m.name]
			if !have || s.At < at.UnixMilli() {
				return false
			}
			for _, op := range s.Stuck {
				if isVictim[op.Target] && op.Start <= killMS && (op.Pinned == "" || op.Pinned == old[op.Target]) {
					hung++
				}
			}
			hung += s.StuckMore // cannot tell: counted against us
		}
		return true
	})
	return hung
}

// awaitIdle waits until every live node's load has stopped and nothing
// it made is in flight, and returns what is still in flight at the
// deadline.
func (c *cluster) awaitIdle(within time.Duration) int {
	inflight := 0
	poll(time.Now().Add(within), func() bool {
		inflight = 0
		done := true
		for _, s := range c.snapshots() {
			inflight += s.Inflight
			if s.Phase != "stopped" && s.Phase != "idle" {
				done = false
			}
		}
		return done && inflight == 0
	})
	return inflight
}

// linkFigures are, over the samples: the most native links of a node,
// the most pool links a node held toward peers it exchanges no traffic
// with, the bound "active peers × pool size × 2 + native" (the largest
// over nodes), and the mean over nodes of each node's largest RSS (MB).
func (c *cluster) linkFigures(smp *sampler) (nativeMax, idleMax, bound int, rssMean float64) {
	active := map[string]map[string]bool{}
	for _, m := range c.members {
		for _, t := range m.targets {
			for _, p := range [][2]string{{m.name, t}, {t, m.name}} {
				if active[p[0]] == nil {
					active[p[0]] = map[string]bool{}
				}
				active[p[0]][p[1]] = true
			}
		}
	}
	rss := map[string]int64{}
	for _, x := range smp.between(time.Time{}, time.Now()) {
		for name, ns := range x.nodes {
			nativeMax = max(nativeMax, ns.Native())
			bound = max(bound, len(active[name])*c.cfg.PoolSize*2+ns.Native())
			rss[name] = max(rss[name], ns.RSS)
		}
	}
	for _, m := range c.members {
		_, report := c.current(m)
		s, err := ReadSnapshot(report)
		if err != nil {
			continue
		}
		idle := 0
		for peer, n := range s.PoolLinksTo {
			if !active[m.name][peer] {
				idle += n
			}
		}
		idleMax = max(idleMax, idle)
	}
	var sum float64
	for _, v := range rss {
		sum += float64(v) / (1 << 20)
	}
	if len(rss) > 0 {
		rssMean = sum / float64(len(rss))
	}
	return nativeMax, idleMax, bound, rssMean
}
