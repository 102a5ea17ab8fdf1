//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/mailroom-go/mailroom/actor"
	grains "github.com/mailroom-go/mailroom/cluster"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
)

// The grain scenarios' machinery: a counting grain whose own code writes
// every activation's start and stop to a log file per node, saves its
// count to a store shared by every node (a file per identity) when it
// stops and loads it when it starts, and checks per-sender order within
// the activation.

// Keys of testnode.Options.Extra (and of startGrains' extra) that start
// the cluster layer with the counter kind on a node.
const (
	// ExtraGrainLog is the node's activation log: the grains start only
	// when it is set.
	ExtraGrainLog = "grain_log"
	// ExtraGrainStore is the directory the grains save their counts in.
	ExtraGrainStore = "grain_store"
	// ExtraGrainLoad is how many local clients request grains from this
	// node (its own frontends), from the call of its "grain_load"
	// function on; 0: none.
	ExtraGrainLoad = "grain_load"
	// ExtraGrainIDs is how many identities ("u-0" ...) the local clients
	// pick from. Default 1000.
	ExtraGrainIDs = "grain_ids"
	// ExtraGrainNoLeases runs the cluster without leases ("1").
	ExtraGrainNoLeases = "grain_no_leases"
)

// counterKind is the grain kind of the scenarios.
const counterKind = "counter"

// monoNow reads CLOCK_MONOTONIC. Go's time.Now() carries a monotonic
// reading too, but relative to the process's own start, so two
// processes' readings cannot be compared; the kernel's CLOCK_MONOTONIC
// is one clock for every process on the machine (and, unlike the wall
// clock, never stepped), so the activation logs of every node process
// on this host share a time line.
func monoNow() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic("clock_gettime(CLOCK_MONOTONIC): " + e.Error())
	}
	return ts.Nano()
}

// grainLog is a node's activation log: one line per event, each written
// with one append (O_APPEND), so what a killed process wrote is there.
//
//	start <identity> <node> <incarnation hex> <activation> <mono ns>
//	stop  <identity> <node> <incarnation hex> <activation> <mono ns>
//	order <identity> <node> <incarnation hex> <activation> <sender> <last> <seq>
type grainLog struct {
	mu sync.Mutex // protects f's writes
	f  *os.File
}

func openGrainLog(path string) (*grainLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &grainLog{f: f}, nil
}

func (l *grainLog) write(format string, args ...any) {
	line := fmt.Sprintf(format+"\n", args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.WriteString(line)
}

// counterGrain counts "add" messages. Messages are testpb.Echo:
//
//	{Text: "add",  N: seq, From: sender} -> Echo{N: count, Text: activation, From: node}
//	{Text: "mark", N: seq, From: sender}    (a send: order only)
//
// seq is the sender's own sequence number (increasing over all its
// messages); a seq not above the last one seen from that sender in this
// activation is an order violation, logged.
type counterGrain struct {
	id, act, node, inc string
	log                *grainLog
	store              string
	count              int64
	last               map[string]int64
}

func counterKindOf(sys *actor.System, log *grainLog, store string) grains.Kind {
	inc := strconv.FormatUint(sys.Incarnation(), 16)
	return grains.Kind{Name: counterKind, Props: func(id string) *actor.Props {
		return actor.PropsFromProducer(func() actor.Actor {
			return &counterGrain{id: id, act: strconv.FormatUint(rand.Uint64(), 16),
				node: sys.Name(), inc: inc, log: log, store: store, last: map[string]int64{}}
		})
	}}
}

func (g *counterGrain) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		g.count = loadCount(g.store, g.id)
		g.log.write("start %s %s %s %s %d", g.id, g.node, g.inc, g.act, monoNow())
	case actor.Stopped:
		saveCount(g.store, g.id, g.count)
		g.log.write("stop %s %s %s %s %d", g.id, g.node, g.inc, g.act, monoNow())
	case *testpb.Echo:
		if last, ok := g.last[m.From]; ok && m.N <= last {
			g.log.write("order %s %s %s %s %s %d %d", g.id, g.node, g.inc, g.act, m.From, last, m.N)
		}
		g.last[m.From] = m.N
		if m.Text == "add" {
			g.count++
			c.Respond(&testpb.Echo{N: g.count, Text: g.act, From: g.node})
		}
	}
}

func storePath(dir, id string) string { return filepath.Join(dir, id) }

func loadCount(dir, id string) int64 {
	b, err := os.ReadFile(storePath(dir, id))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// saveCount writes and renames, so a reader sees the old or the new.
func saveCount(dir, id string, n int64) {
	tmp := storePath(dir, "."+id+"."+strconv.FormatUint(rand.Uint64(), 16))
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(n, 10)), 0o644); err == nil {
		_ = os.Rename(tmp, storePath(dir, id))
	}
}

// grainNode is the cluster layer a node started with startGrains.
type grainNode struct {
	c    *grains.Cluster
	load *grainLoad // nil without ExtraGrainLoad
}

// startGrains starts the cluster layer with the counter kind on a node
// (a child: from ChildHook; a node in the test process: directly), and
// its local clients when extra asks for them.
func startGrains(sys *actor.System, n *remote.Node, extra map[string]string) (*grainNode, error) {
	log, err := openGrainLog(extra[ExtraGrainLog])
	if err != nil {
		return nil, err
	}
	sys.OnStop(func(context.Context) error { return log.f.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := grains.Start(ctx, n, grains.Config{Kinds: []grains.Kind{counterKindOf(sys, log, extra[ExtraGrainStore])},
		NoLeases: extra[ExtraGrainNoLeases] == "1"})
	if err != nil {
		return nil, err
	}
	g := &grainNode{c: c}
	ids := atoi(extra[ExtraGrainIDs])
	if ids == 0 {
		ids = 1000
	}
	var once sync.Once
	// grain_load starts the local clients (once); grain_hosts answers
	// how many hosts of the kind this node sees.
	err = sys.Register("grain_load", func(context.Context, proto.Message) (proto.Message, error) {
		once.Do(func() {
			if w := atoi(extra[ExtraGrainLoad]); w > 0 {
				g.load = startGrainLoad(sys, c, w, ids)
			}
		})
		return &testpb.Echo{}, nil
	})
	if err != nil {
		return nil, err
	}
	err = sys.Register("grain_hosts", func(context.Context, proto.Message) (proto.Message, error) {
		return &testpb.Echo{N: int64(len(c.Hosts(counterKind)))}, nil
	})
	return g, err
}

// grainLoad is a node's local clients: each requests "add" of random
// identities, back to back, each from its own sender, until halted or
// the system stops. It pauses 20 ms after a failure (a load generator's
// pacing, not a synchronisation).
type grainLoad struct {
	ok, failed atomic.Int64
	stop       chan struct{}
	wg         sync.WaitGroup
}

func startGrainLoad(sys *actor.System, c *grains.Cluster, workers, ids int) *grainLoad {
	l := &grainLoad{stop: make(chan struct{})}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			s := sys.NewSender()
			name := fmt.Sprintf("%s/%d", sys.Name(), w)
			for seq := int64(1); ; seq++ {
				select {
				case <-l.stop:
					return
				case <-sys.Done():
					return
				default:
				}
				id := "u-" + strconv.Itoa(rand.IntN(ids))
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := c.Request(ctx, s, counterKind, id, &testpb.Echo{Text: "add", N: seq, From: name})
				cancel()
				if err == nil {
					l.ok.Add(1)
					continue
				}
				l.failed.Add(1)
				t := time.NewTimer(20 * time.Millisecond)
				select {
				case <-t.C:
				case <-l.stop:
					t.Stop()
					return
				case <-sys.Done():
					t.Stop()
					return
				}
			}
		}()
	}
	return l
}

// halt stops the clients and waits for them.
func (l *grainLoad) halt() {
	if l == nil {
		return
	}
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// activationRec is one activation read back from the logs.
type activationRec struct {
	id, node, inc, act string
	start, stop        int64 // mono ns; stop 0: never logged
}

// grainLogs reads activation logs: the activations, and the order
// violations found.
func grainLogs(paths ...string) (acts []*activationRec, violations int, err error) {
	byAct := map[string]*activationRec{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, 0, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 6 {
				continue
			}
			switch fs[0] {
			case "order":
				violations++
				continue
			case "start", "stop":
			default:
				continue
			}
			ns, _ := strconv.ParseInt(fs[5], 10, 64)
			a := byAct[fs[4]]
			if a == nil {
				a = &activationRec{id: fs[1], node: fs[2], inc: fs[3], act: fs[4]}
				byAct[fs[4]] = a
				acts = append(acts, a)
			}
			if fs[0] == "start" {
				a.start = ns
			} else {
				a.stop = ns
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, 0, err
		}
	}
	return acts, violations, nil
}

// overlap is what overlaps found.
type overlap struct {
	pairs   int           // duplicate activations
	longest time.Duration // the longest overlap
	at      []int64       // when each overlap began (mono ns)
	// minGap is the least time from an activation's stop to the start
	// of the next activation of its identity on another incarnation:
	// the margin of the handovers that did not overlap.
	minGap   time.Duration
	examples [][2]*activationRec
}

// startingIn counts the overlaps that began in [from, to).
func (o overlap) startingIn(from, to int64) int {
	n := 0
	for _, at := range o.at {
		if at >= from && at < to {
			n++
		}
	}
	return n
}

// overlaps counts the duplicate activations: pairs of activations of one
// identity, on different incarnations, whose [start, stop] intervals
// overlap (an activation with no stop logged runs until end).
func overlaps(acts []*activationRec, end int64) overlap {
	var o overlap
	o.minGap = -1
	by := map[string][]*activationRec{}
	for _, a := range acts {
		by[a.id] = append(by[a.id], a)
	}
	stopOf := func(a *activationRec) int64 {
		if a.stop == 0 {
			return end
		}
		return a.stop
	}
	for _, as := range by {
		sort.Slice(as, func(i, j int) bool { return as[i].start < as[j].start })
		for i := range as {
			for j := i + 1; j < len(as); j++ {
				x, y := as[i], as[j]
				if x.inc == y.inc {
					continue
				}
				if d := min(stopOf(x), stopOf(y)) - y.start; d > 0 {
					o.pairs++
					o.longest = max(o.longest, time.Duration(d))
					o.at = append(o.at, y.start)
					o.examples = append(o.examples, [2]*activationRec{x, y})
				}
			}
			if i+1 < len(as) && as[i+1].inc != as[i].inc {
				if g := time.Duration(as[i+1].start - stopOf(as[i])); g >= 0 && (o.minGap < 0 || g < o.minGap) {
					o.minGap = g
				}
			}
		}
	}
	return o
}

// perNode counts activations per node.
func perNode(acts []*activationRec) string {
	m := map[string]int{}
	for _, a := range acts {
		m[a.node]++
	}
	var names []string
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", k, m[k])
	}
	return b.String()
}
