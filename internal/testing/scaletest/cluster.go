package scaletest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/consultest"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
)

// member is one node name of the cluster, across its incarnations.
type member struct {
	name    string
	targets []string
	proxy   *consultest.Proxy // its view of the agent, kept across restarts
	child   *testnode.Child   // the running process; nil once killed
	incs    []string          // its incarnations (hex), in order
	reports []string          // their report files, in the same order
}

// inc is the current (last) incarnation.
func (m *member) inc() string { return m.incs[len(m.incs)-1] }

// report is the current incarnation's report file.
func (m *member) report() string { return m.reports[len(m.reports)-1] }

// cluster is the parent's side of a run: the members and their processes.
type cluster struct {
	cfg     Config
	members []*member
	byName  map[string]*member

	// mu guards every member's child, incs and reports: the driver
	// changes them (start, kill) while the sampler reads them.
	mu sync.Mutex
}

// liveMember is a copy of what a running member is now.
type liveMember struct {
	*member
	child  *testnode.Child
	inc    string
	report string
}

// nodeName is the name of the i-th node.
func nodeName(i int) string { return fmt.Sprintf("n%02d", i) }

// pickTargets gives every node k distinct random peers, the same for a
// given seed.
func pickTargets(names []string, k int, seed uint64) map[string][]string {
	rng := rand.New(rand.NewPCG(seed, 0x5ca1e))
	out := make(map[string][]string, len(names))
	for _, n := range names {
		others := make([]string, 0, len(names)-1)
		for _, o := range names {
			if o != n {
				others = append(others, o)
			}
		}
		rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
		t := others[:min(k, len(others))]
		sort.Strings(t)
		out[n] = t
	}
	return out
}

func newCluster(cfg Config) (*cluster, error) {
	c := &cluster{cfg: cfg, byName: map[string]*member{}}
	names := make([]string, cfg.Nodes)
	for i := range names {
		names[i] = nodeName(i)
	}
	targets := pickTargets(names, cfg.Targets, cfg.Seed)
	for _, n := range names {
		px, err := consultest.NewProxy(cfg.Consul)
		if err != nil {
			c.close()
			return nil, err
		}
		m := &member{name: n, targets: targets[n], proxy: px}
		c.members = append(c.members, m)
		c.byName[n] = m
	}
	return c, nil
}

// options are the testnode options of m's next incarnation.
func (c *cluster) options(m *member) (testnode.Options, string, error) {
	load, err := json.Marshal(c.cfg.Load)
	if err != nil {
		return testnode.Options{}, "", err
	}
	report := filepath.Join(c.cfg.Dir, fmt.Sprintf("%s-%d.json", m.name, len(m.incs)))
	return testnode.Options{
		Name:          m.name,
		Consul:        m.proxy.Addr(),
		ConsulService: c.cfg.Service,
		TTL:           c.cfg.TTL,
		Refresh:       c.cfg.TTL / 3, // discovery's default ratio
		LogLevel:      "warn",
		Extra: map[string]string{
			ExtraReport:  report,
			ExtraTargets: strings.Join(m.targets, ","),
			ExtraLoad:    string(load),
			ExtraLazy:    strconv.FormatBool(c.cfg.Lazy),
		},
	}, report, nil
}

// start runs the next incarnation of each of ms, StartParallel at a
// time, and returns once every one is ready (registered with Consul and
// listening).
func (c *cluster) start(ms []*member) error {
	sem := make(chan struct{}, max(c.cfg.StartParallel, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, m := range ms {
		o, report, err := c.options(m)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			child, err := testnode.StartProcess(o)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("starting %s: %w", m.name, err))
				mu.Unlock()
				return
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			m.child = child
			m.incs = append(m.incs, hexInc(child.Incarnation))
			m.reports = append(m.reports, report)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// live are the members whose process runs, as they are now.
func (c *cluster) live() []liveMember {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []liveMember
	for _, m := range c.members {
		if m.child != nil {
			out = append(out, liveMember{member: m, child: m.child, inc: m.inc(), report: m.report()})
		}
	}
	return out
}

// current is m's incarnation and report file now.
func (c *cluster) current(m *member) (inc, report string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return m.inc(), m.report()
}

// signal sends sig to each of ms that runs.
func (c *cluster) signal(ms []*member, sig syscall.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range ms {
		if m.child != nil {
			_ = m.child.Signal(sig)
		}
	}
}

// kill SIGKILLs every one of ms at once, then waits for them to exit.
func (c *cluster) kill(ms []*member) time.Time {
	at := time.Now()
	c.signal(ms, syscall.SIGKILL)
	for _, m := range ms {
		c.mu.Lock()
		child := m.child
		c.mu.Unlock()
		<-child.Exited()
		c.mu.Lock()
		m.child = nil
		c.mu.Unlock()
	}
	return at
}

// snapshots reads the current snapshot of every live member (those not
// written yet are left out).
func (c *cluster) snapshots() map[string]Snapshot {
	out := map[string]Snapshot{}
	for _, m := range c.live() {
		if s, err := ReadSnapshot(m.report); err == nil {
			out[m.name] = s
		}
	}
	return out
}

// stop stops every live process gracefully (it kills one that takes
// more than 15 s), in parallel.
func (c *cluster) stop() {
	var wg sync.WaitGroup
	for _, m := range c.live() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.child.Stop(15 * time.Second); err != nil {
				c.cfg.Logf("stopping %s: %v\n%s", m.name, err, tail(m.child.Stderr(), 20))
			}
		}()
	}
	wg.Wait()
}

// close stops the processes and the proxies.
func (c *cluster) close() {
	c.stop()
	for _, m := range c.members {
		_ = m.proxy.Close()
	}
}

// consul sums what every node asked the agent.
func (c *cluster) consul() consultest.Counts {
	var sum consultest.Counts
	for _, m := range c.members {
		sum = sum.Add(m.proxy.Counts())
	}
	return sum
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// removeReports deletes the report files of the run.
func (c *cluster) removeReports() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		for _, r := range m.reports {
			_ = os.Remove(r)
			_ = os.Remove(r + ".tmp")
		}
	}
}
