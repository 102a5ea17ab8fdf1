package report

import (
	"fmt"

	"github.com/mailroom-go/mailroom/bench/internal/spec"
)

// Target is one of issue 13's targets, evaluated on one run: every
// figure is the median over that run's rounds, and ratios are taken
// between paths of the same run.
type Target struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Measured float64 `json:"measured"` // 0 when Missing says why
	Goal     float64 `json:"goal"`
	Cmp      string  `json:"cmp"`  // ">=" or "<="
	Unit     string  `json:"unit"` // "x" (a ratio), "frac" (a share), "allocs"
	Met      bool    `json:"met"`
	// CPUImplied, for a ratio of rates: the same ratio implied by CPU per
	// operation (the other path's CPU s/M over this one's), what the rates
	// would show if both were CPU-bound on an idle machine. Rates on a
	// shared machine swing with what else runs; CPU per operation does
	// not. Not the target, a second reading of it.
	CPUImplied float64 `json:"cpu_implied,omitempty"`
	Detail     string  `json:"detail,omitempty"`  // the figures it is computed from
	Missing    string  `json:"missing,omitempty"` // a point it needs did not run or failed
}

// The points the targets are computed from.
var (
	SelSendBytes = Sel{Op: spec.OpSend, Payload: "bytes", Writers: 1000, WriterKind: spec.KindGoroutine, Receivers: spec.ReceiversOne}
	SelSendData  = Sel{Op: spec.OpSend, Payload: "data", Writers: 1000}
	SelSendVT    = Sel{Op: spec.OpSend, Payload: "data-vt", Writers: 1000}
	SelCallData  = Sel{Op: spec.OpCall, Payload: "data", Writers: 1000}
	SelCallDataG = Sel{Op: spec.OpCall, Payload: "data", Writers: 1000, WriterKind: spec.KindGoroutine, Receivers: spec.ReceiversPerWriter}
	SelOneCaller = Sel{Op: spec.OpCall, Payload: "bytes", Writers: 1, WriterKind: spec.KindGoroutine, Receivers: spec.ReceiversPerWriter}
	SelPaced100k = Sel{Op: spec.OpSend, Payload: "data", Writers: 100000, Paced: true}
)

// TargetPoints are every point the targets read, path included: the
// quick and full sets must hold them all.
func TargetPoints() []Sel {
	return []Sel{
		SelSendBytes.On(spec.PathPooled), SelSendBytes.On(spec.PathLean), SelSendBytes.On(spec.PathProtoactor),
		SelSendData.On(spec.PathPooled), SelSendData.On(spec.PathProtoactor),
		SelSendVT.On(spec.PathPooled), SelSendVT.On(spec.PathProtoactor),
		SelCallData.On(spec.PathPooled), SelCallData.On(spec.PathProtoactor),
		SelCallDataG.On(spec.PathPooled), SelCallDataG.On(spec.PathProtoactor),
		SelOneCaller.On(spec.PathPooled),
		SelPaced100k.On(spec.PathPooled),
	}
}

func rate(p Point) float64       { return p.AchievedPerS }
func cpu(p Point) float64        { return p.CPUSPerMillion }
func p50(p Point) float64        { return p.LatP50Ms }
func sendAllocs(p Point) float64 { return p.SenderAllocsPerMsg }
func recvAllocs(p Point) float64 { return p.ReceiverAllocsPerMsg }
func achieved(p Point) float64   { return p.AchievedFrac }
func other(p Point) float64      { return p.OtherCPUFrac }

// ComputeTargets evaluates every target of issue 13 on res (its rounds,
// raw TCP reference and decode allocations).
func ComputeTargets(res *Result) []Target {
	var out []Target
	median := func(s Sel, path string, metric func(Point) float64) (float64, string) {
		v, n := MedianOf(res.Rounds, s.On(path), metric)
		if n == 0 {
			return 0, fmt.Sprintf("no completed %s point: %s", path, describe(s))
		}
		return v, ""
	}
	// ratio: metric(a) / metric(b) on the same selection.
	ratio := func(id, name string, s Sel, a, b string, metric func(Point) float64, unitName string, goal float64, cmp string) {
		t := Target{ID: id, Name: name, Goal: goal, Cmp: cmp, Unit: "x"}
		va, ma := median(s, a, metric)
		vb, mb := median(s, b, metric)
		switch {
		case ma != "":
			t.Missing = ma
		case mb != "":
			t.Missing = mb
		case vb <= 0:
			t.Missing = b + " measured 0"
		default:
			t.Measured = va / vb
			t.Detail = fmt.Sprintf("%s %s, %s %s", a, fmtValue(va, unitName), b, fmtValue(vb, unitName))
			if unitName == "/s" {
				ca, _ := median(s, a, cpu)
				cb, _ := median(s, b, cpu)
				oa, _ := median(s, a, other)
				ob, _ := median(s, b, other)
				if ca > 0 && cb > 0 {
					t.CPUImplied = cb / ca
					t.Detail += fmt.Sprintf("; CPU s/M %.2f and %.2f, CPU-implied %.2f×; others used %.0f %% and %.0f %% of the machine", ca, cb, t.CPUImplied, 100*oa, 100*ob)
				}
			}
		}
		out = append(out, t.judge())
	}
	ratio("send-bytes-pooled-over-lean", "unpaced send, 1,000 goroutine writers, bytes, one receiver: pooled / lean (rate)",
		SelSendBytes, spec.PathPooled, spec.PathLean, rate, "/s", 0.8, ">=")
	ratio("send-bytes-pooled-over-protoactor", "unpaced send, 1,000 goroutine writers, bytes, one receiver: pooled / protoactor (rate)",
		SelSendBytes, spec.PathPooled, spec.PathProtoactor, rate, "/s", 2.5, ">=")
	ratio("send-data-pooled-over-protoactor", "unpaced send, 1,000 writer actors, data: pooled / protoactor (rate)",
		SelSendData, spec.PathPooled, spec.PathProtoactor, rate, "/s", 2, ">=")
	ratio("send-data-vt-pooled-over-protoactor", "unpaced send, 1,000 writer actors, data-vt: pooled / protoactor (rate)",
		SelSendVT, spec.PathPooled, spec.PathProtoactor, rate, "/s", 3, ">=")
	ratio("call-data-pooled-over-protoactor", "unpaced call, 1,000 writer actors, data: pooled / protoactor (rate)",
		SelCallData, spec.PathPooled, spec.PathProtoactor, rate, "/s", 3, ">=")
	ratio("call-data-goroutines-pooled-over-protoactor", "unpaced call, 1,000 goroutine writers, data: pooled / protoactor (rate)",
		SelCallDataG, spec.PathPooled, spec.PathProtoactor, rate, "/s", 3, ">=")

	one := Target{ID: "one-caller-p50-pooled-over-raw-tcp", Name: "one caller, call round trip, bytes: pooled p50 / raw TCP ping-pong p50",
		Goal: 1.15, Cmp: "<=", Unit: "x"}
	if v, miss := median(SelOneCaller, spec.PathPooled, p50); miss != "" {
		one.Missing = miss
	} else if res.RawTCPRTTP50Ms <= 0 {
		one.Missing = "no raw TCP ping-pong in this run"
	} else {
		one.Measured = v / res.RawTCPRTTP50Ms
		one.Detail = fmt.Sprintf("pooled %.1f µs, raw TCP %.1f µs", 1000*v, 1000*res.RawTCPRTTP50Ms)
	}
	out = append(out, one.judge())

	ratio("cpu-send-bytes-pooled-over-protoactor", "CPU per million sends (both processes), 1,000 goroutine writers, bytes: pooled / protoactor",
		SelSendBytes, spec.PathPooled, spec.PathProtoactor, cpu, "s/M", 0.4, "<=")

	snd := Target{ID: "sender-allocs-per-pooled-send", Name: "sender allocations per pooled send, bytes, goroutine writers (the message is built once and shared: nothing to subtract)",
		Goal: 1, Cmp: "<=", Unit: "allocs"}
	if v, miss := median(SelSendBytes, spec.PathPooled, sendAllocs); miss != "" {
		snd.Missing = miss
	} else {
		snd.Measured = v
		snd.Detail = fmt.Sprintf("%.2f allocations per send in the sender process", v)
	}
	out = append(out, snd.judge())

	rcv := Target{ID: "receiver-allocs-per-pooled-send", Name: "receiver allocations per pooled send, bytes: at most the decoded message's own + 1",
		Cmp: "<=", Unit: "allocs"}
	own, ok := res.DecodeAllocs["bytes"]
	if v, miss := median(SelSendBytes, spec.PathPooled, recvAllocs); miss != "" {
		rcv.Missing = miss
	} else if !ok {
		rcv.Missing = "the decoded message's own allocations were not measured in this run"
	} else {
		rcv.Measured, rcv.Goal = v, float64(own+1)
		rcv.Detail = fmt.Sprintf("%.2f allocations per message in the receiver process; decoding alone makes %d", v, own)
	}
	out = append(out, rcv.judge())

	paced := Target{ID: "paced-send-100000-pooled", Name: "paced send, 100,000 writer actors, data: pooled, share of the intended rate",
		Goal: 0.95, Cmp: ">=", Unit: "frac"}
	if v, miss := median(SelPaced100k, spec.PathPooled, achieved); miss != "" {
		paced.Missing = miss
	} else {
		paced.Measured = v
		p, _ := Get(res.Points, SelPaced100k.On(spec.PathPooled))
		paced.Detail = fmt.Sprintf("%s of %s per second", num(p.AchievedPerS), num(p.IntendedPerS))
	}
	out = append(out, paced.judge())
	return out
}

// judge sets Met: a target with a missing input is not met.
func (t Target) judge() Target {
	switch {
	case t.Missing != "":
		t.Met = false
	case t.Cmp == "<=":
		t.Met = t.Measured <= t.Goal
	default:
		t.Met = t.Measured >= t.Goal
	}
	return t
}

func fmtValue(v float64, unit string) string {
	if unit == "/s" {
		return num(v) + "/s"
	}
	return fmt.Sprintf("%.2f %s", v, unit)
}

// describe names a selection for a message.
func describe(s Sel) string {
	kind, recv := s.WriterKind, s.Receivers
	if kind == "" {
		kind = spec.KindActor
	}
	if recv == "" {
		recv = spec.ReceiversPerWriter
	}
	pace := "unpaced"
	if s.Paced {
		pace = "paced"
	}
	return fmt.Sprintf("%s %s, %s writers (%s), receivers %s, %s", s.Op, s.Payload, group(s.Writers), kind, recv, pace)
}
