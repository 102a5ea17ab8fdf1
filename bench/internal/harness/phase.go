package harness

import (
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/procfs"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
)

const (
	pollEvery      = 50 * time.Millisecond
	heartbeatEvery = 10 * time.Second
	stallLimit     = time.Minute // no progress for this long ends a point
)

type phaseResult struct {
	elapsed               time.Duration
	counted               int64
	miscounted            int64 // receivers counted past their target, operations never counted
	timedOut              bool
	sendBefore, sendAfter procfs.Sample
	recvBefore, recvAfter procfs.Sample
	sysBefore, sysAfter   procfs.System
}

// counter is the node that counts completion for op.
func (p *pair) counter(op string) *ctl.Child {
	if op == spec.OpCall {
		return p.send
	}
	return p.recv
}

// phase runs perWriter operations per writer (paced if pace > 0) and
// waits until the counting node reports completion. label "" is the
// measured phase (heartbeats are printed for it).
func (h *Harness) phase(p *pair, s spec.Spec, perWriter int, pace time.Duration, label string) (phaseResult, error) {
	var res phaseResult
	for _, c := range []*ctl.Child{p.recv, p.send} {
		if err := c.Call(nodeapi.CmdArm, nodeapi.Arm{PerWriter: perWriter}, nil, callTimeout); err != nil {
			return res, err
		}
	}
	var err error
	if res.sendBefore, res.recvBefore, err = p.sample(); err != nil {
		return res, err
	}
	if res.sysBefore, err = procfs.ReadSystem(); err != nil {
		return res, err
	}
	var st nodeapi.Started
	if err := p.send.Call(nodeapi.CmdStart, nodeapi.Start{PerWriter: perWriter, PaceNs: int64(pace)}, &st, callTimeout); err != nil {
		return res, err
	}
	start := time.Unix(0, st.StartNs)
	total := int64(perWriter) * int64(s.Writers)
	limit := 10 * time.Minute
	if pace > 0 {
		limit = 4*time.Duration(perWriter)*pace + time.Minute
	}
	counter := p.counter(s.Op)
	lastCount, lastProgress, nextBeat := int64(-1), time.Now(), time.Now().Add(heartbeatEvery)
	for {
		time.Sleep(pollEvery)
		var cs nodeapi.Status
		if err := counter.Call(nodeapi.CmdStatus, nil, &cs, callTimeout); err != nil {
			return res, err
		}
		now := time.Now()
		if cs.Tally.EndNs != 0 {
			res.elapsed = time.Unix(0, cs.Tally.EndNs).Sub(start)
			res.counted = cs.Tally.Count
			res.miscounted = cs.Tally.Over
			break
		}
		if cs.Tally.Count != lastCount {
			lastCount, lastProgress = cs.Tally.Count, now
		}
		if now.Sub(lastProgress) > stallLimit || now.Sub(start) > limit {
			res.elapsed, res.counted, res.timedOut = now.Sub(start), cs.Tally.Count, true
			res.miscounted = cs.Tally.Over + total - cs.Tally.Count
			break
		}
		if label == "" && now.After(nextBeat) {
			nextBeat = now.Add(heartbeatEvery)
			h.printf("      … %5.0fs  %s of %s counted (%.0f%%)\n", now.Sub(start).Seconds(), group(cs.Tally.Count), group(total), 100*float64(cs.Tally.Count)/float64(total))
		}
	}
	if res.sendAfter, res.recvAfter, err = p.sample(); err != nil {
		return res, err
	}
	if res.sysAfter, err = procfs.ReadSystem(); err != nil {
		return res, err
	}
	if res.timedOut && label != "" {
		return res, fmt.Errorf("%s did not complete: %d of %d counted", label, res.counted, total)
	}
	return res, nil
}

// group renders n with thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + group(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
