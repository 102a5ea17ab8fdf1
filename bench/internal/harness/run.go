package harness

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/bench/benchpb"
	"github.com/mailroom-go/mailroom/bench/internal/report"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
)

// Options configure a run.
type Options struct {
	Out        io.Writer      // progress lines; default stderr
	LogDir     string         // children's logs; default a temporary directory
	ProfileDir string         // if set, CPU profiles of both processes per point
	Only       *regexp.Regexp // if set, only points whose String() matches
	Rounds     int            // overrides the set's rounds when > 0
	Command    string         // recorded in the result
	SkipRaw    bool
	Writers    int           // if > 0, overrides every point's writers (exploration)
	PerWriter  int           // if > 0, overrides every point's operations per writer
	Pace       time.Duration // if > 0, overrides every paced point's pace
}

// Harness runs points.
type Harness struct {
	out        io.Writer
	logDir     string
	profileDir string
	seq        int
}

func (h *Harness) printf(format string, args ...any) { fmt.Fprintf(h.out, format, args...) }

// Run runs set and returns its result.
func Run(set spec.Set, o Options) (*report.Result, error) {
	h := &Harness{out: o.Out, logDir: o.LogDir, profileDir: o.ProfileDir}
	if h.out == nil {
		h.out = os.Stderr
	}
	if h.logDir == "" {
		dir, err := os.MkdirTemp("", "mailroom-bench-")
		if err != nil {
			return nil, err
		}
		h.logDir = dir
	}
	if o.Rounds > 0 {
		set.Rounds = o.Rounds
	}
	var err error
	began := time.Now()
	res := &report.Result{Name: set.Name, Command: o.Command, Started: began.UTC().Format(time.RFC3339), Machine: machine()}
	h.printf("mailroom bench %q on %s (%d cores), %s; node logs in %s\n", set.Name, res.Machine.CPU, res.Machine.Cores, res.Machine.Go, h.logDir)
	for _, p := range set.Points {
		if err := p.Validate(); err != nil {
			return nil, err
		}
	}
	var runs []spec.Schedule
	for _, r := range set.Order() {
		if o.Only == nil || o.Only.MatchString(r.Spec.String()) {
			if o.Writers > 0 {
				r.Spec.Writers, r.Spec.Warmup = o.Writers, spec.WarmupFor(o.Writers)
			}
			if o.PerWriter > 0 {
				r.Spec.PerWriter = o.PerWriter
			}
			if o.Pace > 0 && r.Spec.Paced() {
				r.Spec.Pace = o.Pace
			}
			runs = append(runs, r)
		}
	}
	if !o.SkipRaw {
		raw, err := h.runRaw(set.RawFrames, max(1, set.Rounds))
		if err != nil {
			return nil, fmt.Errorf("raw tcp reference: %w", err)
		}
		res.RawTCP, res.RawTCPMsgsPerS = raw, raw.MsgsPerS["1"]
	}
	if res.DecodeAllocs, err = decodeAllocs(runs); err != nil {
		return nil, err
	}
	pinged := map[int]bool{} // single-caller rounds the ping-pong ran before
	for i, r := range runs {
		if oneCaller(r.Spec) && !o.SkipRaw && !pinged[r.Round] {
			pinged[r.Round] = true
			if err := h.rttRound(&res.RawTCP, set.RawRTTs, r.Round); err != nil {
				return nil, fmt.Errorf("raw tcp ping-pong: %w", err)
			}
			res.RawTCPRTTP50Ms = res.RawTCP.RTTP50Ms
		}
		pt, err := h.runPoint(r.Spec, r.Round)
		if err != nil {
			h.printf("[%3d/%d %s] %s  FAILED: %v\n", i+1, len(runs), clock(time.Since(began)), r.Spec, err)
			pt.Errors, pt.Note = max(pt.Errors, 1), joinNote("failed: "+err.Error(), pt.Note)
		} else {
			h.printf("[%3d/%d %s] %s  %s\n", i+1, len(runs), clock(time.Since(began)), r.Spec, summary(pt))
		}
		res.Rounds = append(res.Rounds, pt)
	}
	report.Finish(res)
	res.WallS = time.Since(began).Seconds()
	return res, nil
}

// oneCaller reports whether s is a single caller's point: the raw TCP
// ping-pong runs before each of its rounds.
func oneCaller(s spec.Spec) bool { return s.Op == spec.OpCall && s.Writers == 1 && !s.Paced() }

// decodeAllocs measures, in this process (which allocates nothing else
// meanwhile), what decoding one message of each payload that runs
// allocates.
func decodeAllocs(runs []spec.Schedule) (map[string]int, error) {
	out := map[string]int{}
	for _, r := range runs {
		if _, ok := out[r.Spec.Payload]; ok {
			continue
		}
		n, err := benchpb.DecodeAllocs(r.Spec.Payload)
		if err != nil {
			return nil, err
		}
		out[r.Spec.Payload] = n
	}
	return out, nil
}

func clock(d time.Duration) string {
	s := int(d.Seconds())
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// summary is a finished point's progress line.
func summary(p report.Point) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%9s/s", group(int64(p.AchievedPerS)))
	if p.IntendedPerS > 0 {
		fmt.Fprintf(&b, " (%3.0f%% of %s)", 100*p.AchievedFrac, group(int64(p.IntendedPerS)))
	}
	fmt.Fprintf(&b, "  %.2fs", p.ElapsedS)
	if p.IdealS > 0 {
		fmt.Fprintf(&b, " (ideal %.3g)", p.IdealS)
	}
	fmt.Fprintf(&b, "  cpu %.2f s/M  wire %.0f B  rss %.0f+%.0f MB", p.CPUSPerMillion, p.WireBytesPerMsg, p.SenderRSSMB, p.ReceiverRSSMB)
	if p.MeanBatch > 0 {
		fmt.Fprintf(&b, "  batch %.0f", p.MeanBatch)
	}
	if p.LatP50Ms > 0 {
		fmt.Fprintf(&b, "  p50 %.3fms p99 %.3fms", p.LatP50Ms, p.LatP99Ms)
	}
	fmt.Fprintf(&b, "  allocs %.2f+%.2f", p.SenderAllocsPerMsg, p.ReceiverAllocsPerMsg)
	fmt.Fprintf(&b, "  err %d", p.Errors)
	if p.TimedOut {
		b.WriteString("  TIMED OUT")
	}
	return b.String()
}

func machine() report.Machine {
	m := report.Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			m.MemoryGiB = (kb + 1<<19) >> 20
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
