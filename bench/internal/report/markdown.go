package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/mailroom-go/mailroom/bench/internal/spec"
)

// Markdown writes the report body (no top-level title): how it was run,
// the targets, the raw-TCP reference, a table per operation, resources,
// batch sizes, plots (image paths prefixed with imgPrefix) and the
// measurement notes.
func Markdown(w io.Writer, res *Result, plots []Plot, imgPrefix string) {
	m := res.Machine
	fmt.Fprintf(w, "Command: `%s`. Machine: %s, %d cores, %d GiB, Linux %s, %s. Started %s, %s wall clock.\n\n",
		res.Command, m.CPU, m.Cores, m.MemoryGiB, m.Kernel, m.Go, res.Started, dur(res.WallS))
	targets(w, res)
	if len(res.RawTCP.MsgsPerS) > 0 {
		r := res.RawTCP
		fmt.Fprintf(w, "## Raw TCP reference\n\n%d-byte frames (a mailroom send of the data payload), pre-encoded, written over loopback between two processes with no runtime; the receiver walks every length prefix. Median of %d rounds.\n\n", r.FrameBytes, r.Rounds)
		fmt.Fprintf(w, "| connections | frames/s, %d KiB writes | frames/s, one frame per write |\n|--:|--:|--:|\n", r.WriteBytes>>10)
		for _, c := range []string{"1", "2"} {
			fmt.Fprintf(w, "| %s | %s | %s |\n", c, num(r.MsgsPerS[c]), num(r.UnbatchedMsgsPerS[c]))
		}
		fmt.Fprintln(w)
	}
	unpaced(w, res.Points)
	oneCaller(w, res)
	paced(w, res.Points)
	resources(w, res.Points)
	failures(w, res.Rounds)
	batches(w, res.Points)
	if len(plots) > 0 {
		fmt.Fprintf(w, "## Plots\n\n")
		for _, p := range plots {
			fmt.Fprintf(w, "![%s](%s%s)\n\n", p.Title, imgPrefix, p.File)
		}
	}
	fmt.Fprintf(w, "## How it was measured\n\n")
	for _, n := range res.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	fmt.Fprintln(w)
}

func targets(w io.Writer, res *Result) {
	fmt.Fprintf(w, "## Targets\n\nIssue 13's targets on this run: medians of rounds, ratios between paths of this run. Beside a ratio of rates, \"from\" gives each side's CPU per million operations, the ratio they imply if both were CPU-bound on an idle machine, and the share of the machine other processes used meanwhile (rates swing with it; CPU per operation does not).\n\n")
	fmt.Fprintf(w, "| target | measured | goal | | from |\n|---|--:|--:|---|---|\n")
	for _, t := range res.Targets {
		got, verdict, from := "n/a", "missed", t.Detail
		if t.Missing != "" {
			verdict, from = "not measured", t.Missing
		} else {
			got = targetValue(t.Measured, t.Unit)
			if t.Met {
				verdict = "met"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s %s | %s | %s |\n", t.Name, got, cmpSign(t.Cmp), targetValue(t.Goal, t.Unit), verdict, from)
	}
	m := res.Memory
	if len(m.PooledKiBPerWriter) > 0 {
		var ks []string
		for k := range m.PooledKiBPerWriter {
			ks = append(ks, k)
		}
		sort.Slice(ks, func(i, j int) bool { return atoi(ks[i]) < atoi(ks[j]) })
		var parts []string
		for _, k := range ks {
			parts = append(parts, fmt.Sprintf("%s: %.2f", group(atoi(k)), m.PooledKiBPerWriter[k]))
		}
		fmt.Fprintf(w, "| memory per writer, paced pooled send (KiB, both processes, by writers) | %s | flat | | |\n", strings.Join(parts, "; "))
	}
	if len(m.PooledMarginalKiBPerWriter) > 0 {
		var ks []string
		for k := range m.PooledMarginalKiBPerWriter {
			ks = append(ks, k)
		}
		sort.Slice(ks, func(i, j int) bool { return atoi(strings.Split(ks[i], "-")[0]) < atoi(strings.Split(ks[j], "-")[0]) })
		var parts []string
		for _, k := range ks {
			lo, hi, _ := strings.Cut(k, "-")
			parts = append(parts, fmt.Sprintf("%s→%s: %.2f", group(atoi(lo)), group(atoi(hi)), m.PooledMarginalKiBPerWriter[k]))
		}
		fmt.Fprintf(w, "| marginal memory per added writer, paced pooled send (KiB, both processes) | %s | flat | | |\n", strings.Join(parts, "; "))
	}
	fmt.Fprintln(w)
}

func targetValue(v float64, unit string) string {
	switch unit {
	case "frac":
		return fmt.Sprintf("%.1f %%", 100*v)
	case "allocs":
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

func cmpSign(c string) string {
	if c == "<=" {
		return "≤"
	}
	return "≥"
}

// unpacedPaths are the columns of the unpaced tables; the bridge and lean
// have theirs where they ran.
var unpacedPaths = []string{spec.PathNative, spec.PathPooled, spec.PathProtoactor, spec.PathBridge, spec.PathLean}

func unpaced(w io.Writer, points []Point) {
	for _, op := range []string{"send", "cast", "call"} {
		type key struct {
			payload         string
			writers         int
			kind, receivers string
		}
		var keys []key
		seen := map[key]bool{}
		bridge, lean := false, false
		for _, p := range points {
			p.normalize()
			k := key{p.Payload, p.Writers, p.WriterKind, p.Receivers}
			if p.Op == op && p.PaceMs == 0 && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
			bridge = bridge || (p.Op == op && p.Path == spec.PathBridge)
			lean = lean || (p.Op == op && p.Path == spec.PathLean)
		}
		if len(keys) == 0 {
			continue
		}
		fmt.Fprintf(w, "## Unpaced %s\n\nWriters as fast as they can; %ss per second counted at completion (median of rounds). Writers are actors (their own PID sends) or plain goroutines (the system's root handle, as an HTTP handler would).", op, op)
		if op == "send" {
			fmt.Fprintf(w, " Receivers: one actor per writer, or one for all writers.")
		}
		if bridge {
			fmt.Fprintf(w, " protoactor-bridge is protoactor-go's actors, unchanged, over mailroom's remote; bridge / protoactor is what they gain from it.")
		}
		head, rule := "| payload | writers | writers are | receivers | native | pooled | protoactor |", "|---|--:|---|---|--:|--:|--:|"
		if bridge {
			head, rule = head+" protoactor-bridge |", rule+"--:|"
		}
		if lean {
			head, rule = head+" lean |", rule+"--:|"
		}
		head, rule = head+" pooled / native | pooled / protoactor |", rule+"--:|--:|"
		if bridge {
			head, rule = head+" bridge / protoactor |", rule+"--:|"
		}
		if lean {
			head, rule = head+" pooled / lean |", rule+"--:|"
		}
		fmt.Fprintf(w, "\n\n%s\n%s\n", head, rule)
		for _, k := range keys {
			v := map[string]float64{}
			for _, path := range unpacedPaths {
				p, _ := Get(points, Sel{Op: op, Path: path, Payload: k.payload, Writers: k.writers, WriterKind: k.kind, Receivers: k.receivers})
				v[path] = p.AchievedPerS
			}
			native, pooled, pa := v[spec.PathNative], v[spec.PathPooled], v[spec.PathProtoactor]
			fmt.Fprintf(w, "| %s | %s | %ss | %s | %s | %s | %s |", k.payload, group(k.writers), k.kind, k.receivers, num(native), num(pooled), num(pa))
			if bridge {
				fmt.Fprintf(w, " %s |", num(v[spec.PathBridge]))
			}
			if lean {
				fmt.Fprintf(w, " %s |", num(v[spec.PathLean]))
			}
			fmt.Fprintf(w, " %s | %s |", ratio(pooled, native), ratio(pooled, pa))
			if bridge {
				fmt.Fprintf(w, " %s |", ratio(v[spec.PathBridge], pa))
			}
			if lean {
				fmt.Fprintf(w, " %s |", ratio(pooled, v[spec.PathLean]))
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
}

// oneCaller is the single caller's round trip beside the raw TCP
// ping-pong.
func oneCaller(w io.Writer, res *Result) {
	var rows []Point
	for _, path := range pathOrder {
		if p, ok := Get(res.Points, SelOneCaller.On(path)); ok {
			rows = append(rows, p)
		}
	}
	if len(rows) == 0 && res.RawTCP.RTTP50Ms == 0 {
		return
	}
	fmt.Fprintf(w, "## One caller\n\nOne goroutine calling a registered function with the bytes payload, one call at a time (protoactor-go and protoactor-bridge: RequestFuture to an actor that responds), beside the raw TCP ping-pong: one connection, a %d-byte call-shaped frame out and a %d-byte reply back, no runtime. p50 and p99 of the median round (raw TCP: the median over rounds).\n\n",
		res.RawTCP.CallFrameBytes, res.RawTCP.ReplyFrameBytes)
	fmt.Fprintf(w, "| path | calls | p50 µs | p99 µs | p50 / raw TCP p50 |\n|---|--:|--:|--:|--:|\n")
	if r := res.RawTCP; r.RTTP50Ms > 0 {
		fmt.Fprintf(w, "| raw TCP ping-pong | %s | %.1f | %.1f | 1.00× |\n", group(r.RTTs), 1000*r.RTTP50Ms, 1000*r.RTTP99Ms)
	}
	for _, p := range rows {
		fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %s |\n", p.Path, group(int(p.Ops)), 1000*p.LatP50Ms, 1000*p.LatP99Ms, ratio(p.LatP50Ms, res.RawTCP.RTTP50Ms))
	}
	fmt.Fprintln(w)
}

func paced(w io.Writer, points []Point) {
	for _, op := range []string{"send", "cast", "call"} {
		var writers []int
		var pace float64
		seen := map[int]bool{}
		bridge := false
		for _, p := range points {
			if p.Op == op && p.PaceMs > 0 && p.Payload == "data" && !seen[p.Writers] {
				seen[p.Writers], pace = true, p.PaceMs
				writers = append(writers, p.Writers)
			}
			bridge = bridge || (p.Op == op && p.PaceMs > 0 && p.Payload == "data" && p.Path == spec.PathBridge)
		}
		if len(writers) == 0 {
			continue
		}
		sort.Ints(writers)
		any0, _ := Find(points, op, "pooled", "data", writers[0], true)
		fmt.Fprintf(w, "## Paced %s\n\nEvery writer does %d %ss of the data payload, one every %s ms: the intended rate is writers / pace and the ideal time %.0f s. Nothing is dropped; a slow point is a long one.\n\n",
			op, any0.PerWriter, op, ftoa(pace), any0.IdealS)
		head, rule := "| writers | intended/s | native/s | pooled/s | protoactor/s |", "|--:|--:|--:|--:|--:|"
		if bridge {
			head, rule = head+" protoactor-bridge/s |", rule+"--:|"
		}
		fmt.Fprintf(w, "%s pooled / native | pooled, %% of intended |\n%s--:|--:|\n", head, rule)
		for _, n := range writers {
			nv, _ := Find(points, op, "native", "data", n, true)
			pv, okp := Find(points, op, "pooled", "data", n, true)
			av, _ := Find(points, op, "protoactor", "data", n, true)
			bv, _ := Find(points, op, spec.PathBridge, "data", n, true)
			intended := math.Max(math.Max(nv.IntendedPerS, pv.IntendedPerS), math.Max(av.IntendedPerS, bv.IntendedPerS))
			frac := "–"
			if okp {
				frac = fmt.Sprintf("%.1f %%", 100*pv.AchievedFrac)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |", group(n), num(intended), num(nv.AchievedPerS), num(pv.AchievedPerS), num(av.AchievedPerS))
			if bridge {
				fmt.Fprintf(w, " %s |", num(bv.AchievedPerS))
			}
			fmt.Fprintf(w, " %s | %s |\n", ratio(pv.AchievedPerS, nv.AchievedPerS), frac)
		}
		fmt.Fprintln(w)
	}
}

func resources(w io.Writer, points []Point) {
	fmt.Fprintf(w, "## Resources per point\n\n")
	fmt.Fprintf(w, "Allocations are heap allocations per operation in each process over the measured phase.\n\n")
	fmt.Fprintf(w, "| op | path | payload | writers | writers are | receivers | pace ms | elapsed s (ideal) | sender RSS MB | receiver RSS MB | KiB/writer | CPU s/M | allocs/op sender | allocs/op receiver | wire B/msg | runtime B/msg | mean batch | call p50 / p99 ms | errors |\n")
	fmt.Fprintf(w, "|---|---|---|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, p := range points {
		el := fmt.Sprintf("%.2f", p.ElapsedS)
		if p.IdealS > 0 {
			el += fmt.Sprintf(" (%.0f)", p.IdealS)
		}
		lat, batch, rt := "–", "–", "–"
		if p.LatP50Ms > 0 {
			lat = fmt.Sprintf("%.2f / %.2f", p.LatP50Ms, p.LatP99Ms)
			if p.LatP50Ms < 1 {
				lat = fmt.Sprintf("%.3f / %.3f", p.LatP50Ms, p.LatP99Ms)
			}
		}
		if p.MeanBatch > 0 {
			batch = fmt.Sprintf("%.1f", p.MeanBatch)
		}
		if p.RuntimeBytesPerM > 0 {
			rt = fmt.Sprintf("%.0f", p.RuntimeBytesPerM)
		}
		errs := fmt.Sprint(p.Errors)
		switch {
		case failed(p):
			errs = "failed"
		case p.TimedOut:
			errs += " (timed out)"
		}
		p.normalize()
		fmt.Fprintf(w, "| %s | %s | %s | %s | %ss | %s | %s | %s | %.0f | %.0f | %.2f | %.2f | %s | %s | %.0f | %s | %s | %s | %s |\n",
			p.Op, p.Path, p.Payload, group(p.Writers), p.WriterKind, p.Receivers, ftoa(p.PaceMs), el, p.SenderRSSMB, p.ReceiverRSSMB, p.KiBPerWriter,
			p.CPUSPerMillion, allocs(p.SenderAllocsPerMsg), allocs(p.ReceiverAllocsPerMsg), p.WireBytesPerMsg, rt, batch, lat, errs)
	}
	fmt.Fprintln(w)
}

// failures lists every round that failed or counted errors, with why.
func failures(w io.Writer, rounds []Point) {
	var bad []Point
	for _, p := range rounds {
		if failed(p) || p.Errors > 0 || p.TimedOut {
			bad = append(bad, p)
		}
	}
	if len(bad) == 0 {
		return
	}
	fmt.Fprintf(w, "## Failures and errors\n\nEvery round that failed or counted errors (the node logs say more).\n\n| op | path | payload | writers | pace ms | round | errors | what happened |\n|---|---|---|--:|--:|--:|--:|---|\n")
	for _, p := range bad {
		note := strings.ReplaceAll(p.Note, "|", "/")
		if len(note) > 300 {
			note = note[:300] + "…"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %d | %s |\n", p.Op, p.Path, p.Payload, group(p.Writers), ftoa(p.PaceMs), p.Round, p.Errors, note)
	}
	fmt.Fprintln(w)
}

func batches(w io.Writer, points []Point) {
	var rows []Point
	for _, p := range points {
		if len(p.BatchHist) > 0 {
			rows = append(rows, p)
		}
	}
	if len(rows) == 0 {
		return
	}
	n := len(rows[0].BatchHist)
	fmt.Fprintf(w, "## Batch sizes, proxy pools\n\nShare of batch frames (sender toward receiver) by messages per batch, on the paths that run mailroom's proxy pool (pooled, protoactor-bridge).\n\n| op | path | payload | writers | pace ms | mean |")
	for i := range n {
		fmt.Fprintf(w, " %s |", bucketName(i, n))
	}
	fmt.Fprintf(w, "\n|---|---|---|--:|--:|--:|%s\n", strings.Repeat("--:|", n))
	for _, p := range rows {
		var total uint64
		for _, c := range p.BatchHist {
			total += c
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.1f |", p.Op, p.Path, p.Payload, group(p.Writers), ftoa(p.PaceMs), p.MeanBatch)
		for _, c := range p.BatchHist {
			if c == 0 {
				fmt.Fprintf(w, " |")
			} else {
				fmt.Fprintf(w, " %.1f %% |", 100*float64(c)/float64(max(total, 1)))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

func bucketName(i, n int) string {
	switch {
	case i == 0:
		return "1"
	case i == 1:
		return "2"
	case i == n-1:
		return fmt.Sprintf(">%d", 1<<(i-1))
	}
	return fmt.Sprintf("%d–%d", 1<<(i-1)+1, 1<<i)
}

func allocs(v float64) string {
	if v <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func dur(s float64) string {
	d := int(math.Round(s))
	return fmt.Sprintf("%dm%02ds", d/60, d%60)
}

func num(v float64) string {
	if v <= 0 {
		return "–"
	}
	return group(int(math.Round(v)))
}

func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func group(n int) string {
	s := itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
