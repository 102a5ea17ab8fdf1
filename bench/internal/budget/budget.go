package budget

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Sample is one stack of a profile and its CPU time.
type Sample struct {
	Nanos int64
	Stack []string // function names, leaf first, inlined frames expanded
}

// Parse reads the output of `go tool pprof -raw` of a CPU profile.
func Parse(r io.Reader) ([]Sample, error) {
	type rawSample struct {
		nanos int64
		locs  []int
	}
	var raws []rawSample
	locs := map[int][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	section, cur := "", -1
	for sc.Scan() {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		switch {
		case trim == "Samples:" || trim == "Locations" || trim == "Mappings":
			section = trim
			continue
		case trim == "":
			continue
		}
		switch section {
		case "Samples:":
			head, ids, ok := strings.Cut(trim, ":")
			if !ok {
				continue // the "samples/count cpu/nanoseconds" header
			}
			f := strings.Fields(head)
			if len(f) != 2 {
				return nil, fmt.Errorf("budget: sample line %q", line)
			}
			ns, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("budget: sample line %q: %w", line, err)
			}
			s := rawSample{nanos: ns}
			for _, id := range strings.Fields(ids) {
				n, err := strconv.Atoi(id)
				if err != nil {
					return nil, fmt.Errorf("budget: sample line %q: %w", line, err)
				}
				s.locs = append(s.locs, n)
			}
			raws = append(raws, s)
		case "Locations":
			// "   7: 0x4918a9 M=1 runtime.systemstack file:line s=520", then
			// one indented line per frame inlined into it: "fn file:line s=N".
			if id, rest, ok := strings.Cut(trim, ": "); ok && isNumber(id) {
				cur, _ = strconv.Atoi(id)
				f := strings.Fields(rest)
				if len(f) >= 3 {
					locs[cur] = append(locs[cur], f[2])
				}
				continue
			}
			if f := strings.Fields(trim); cur >= 0 && len(f) >= 1 {
				locs[cur] = append(locs[cur], f[0])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, fmt.Errorf("budget: no samples (is this `go tool pprof -raw` of a CPU profile?)")
	}
	out := make([]Sample, 0, len(raws))
	for _, r := range raws {
		s := Sample{Nanos: r.nanos}
		for _, id := range r.locs {
			s.Stack = append(s.Stack, locs[id]...)
		}
		out = append(out, s)
	}
	return out, nil
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// Rule puts a sample whose stack holds a function with any of Prefixes
// (matched against the function's full name) into Bucket.
type Rule struct {
	Bucket   string
	Prefixes []string
}

// Rules are the buckets, in the order they are tried. The first ones
// are the runtime's: a sample anywhere under garbage collection,
// allocation, the protobuf codec, a socket syscall, lock contention or
// the scheduler counts there, whoever called it.
var Rules = []Rule{
	{"GC: background marking, sweeping, assists", []string{
		"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge", "runtime.gcAssistAlloc", "runtime.gcMarkDone",
		"runtime.gcMarkTermination", "runtime.gcStart", "runtime.markroot", "runtime.sweepone", "runtime.deductSweepCredit"}},
	{"allocation (mallocgc, span refill, zeroing)", []string{"runtime.mallocgc", "runtime.newobject", "runtime.makeslice",
		"runtime.growslice", "runtime.mallocgcSmall", "runtime.(*mcache).refill", "runtime.memclrNoHeapPointers"}},
	{"codec: protobuf encode and decode", []string{"google.golang.org/protobuf/", "github.com/planetscale/vtprotobuf/",
		".MarshalVT", ".MarshalToSizedBufferVT", ".SizeVT", ".UnmarshalVT", "github.com/gogo/protobuf/"}},
	{"socket syscalls (read, write), netpoll", []string{"syscall.Syscall", "syscall.RawSyscall", "internal/runtime/syscall.",
		"internal/poll.(*FD).Write", "internal/poll.(*FD).Read", "runtime.netpoll"}},
	{"locks: contention (mutex slow paths, semaphores)", []string{"sync.(*Mutex).lockSlow", "sync.(*Mutex).unlockSlow",
		"sync.(*RWMutex).", "internal/sync.(*Mutex).lockSlow", "internal/sync.(*Mutex).unlockSlow", "sync.runtime_Semacquire",
		"sync.runtime_Semrelease", "runtime.semacquire", "runtime.semrelease", "runtime.lock2", "runtime.unlock2"}},
	{"scheduler: park, wake, switch, new goroutines, stack growth", []string{"runtime.schedule", "runtime.findRunnable",
		"runtime.park_m", "runtime.gopark", "runtime.goready", "runtime.ready", "runtime.wakep", "runtime.startm", "runtime.stopm",
		"runtime.mcall", "runtime.gosched", "runtime.goexit", "runtime.newproc", "runtime.morestack", "runtime.newstack",
		"runtime.copystack", "runtime.futex", "runtime.notesleep", "runtime.notewakeup", "runtime.usleep", "runtime.osyield",
		"runtime.chansend", "runtime.chanrecv", "runtime.selectgo", "runtime.(*waitq)", "runtime.runqgrab", "runtime.checkTimers"}},
}

// named are the code the rest is attributed to: the leaf-most frame of
// one of these packages names the bucket.
var named = []string{
	"github.com/mailroom-go/mailroom/bench/", "github.com/mailroom-go/mailroom/", "github.com/asynkron/protoactor-go/",
	"google.golang.org/grpc/", "golang.org/x/net/http2",
}

// Classify returns the bucket of one stack.
func Classify(stack []string) string {
	for _, r := range Rules {
		for _, fn := range stack {
			for _, p := range r.Prefixes {
				if strings.HasPrefix(fn, p) || (strings.HasPrefix(p, ".") && strings.Contains(fn, p)) {
					return r.Bucket
				}
			}
		}
	}
	for _, fn := range stack {
		for _, p := range named {
			if strings.HasPrefix(fn, p) {
				return short(fn)
			}
		}
	}
	return "other (runtime, profiler, unattributed)"
}

// short drops the module path: "remote.(*Pool).enqueue".
func short(fn string) string {
	for _, p := range []string{"github.com/mailroom-go/mailroom/bench/internal/", "github.com/mailroom-go/mailroom/",
		"github.com/asynkron/protoactor-go/", "google.golang.org/", "golang.org/x/net/"} {
		if rest, ok := strings.CutPrefix(fn, p); ok {
			return rest
		}
	}
	return fn
}

// Line is one bucket of a budget.
type Line struct {
	Bucket string
	Nanos  int64
}

// Split sums the samples by bucket, largest first, and returns the total.
func Split(samples []Sample) ([]Line, int64) {
	by := map[string]int64{}
	var total int64
	for _, s := range samples {
		by[Classify(s.Stack)] += s.Nanos
		total += s.Nanos
	}
	out := make([]Line, 0, len(by))
	for b, n := range by {
		out = append(out, Line{b, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Nanos != out[j].Nanos {
			return out[i].Nanos > out[j].Nanos
		}
		return out[i].Bucket < out[j].Bucket
	})
	return out, total
}
