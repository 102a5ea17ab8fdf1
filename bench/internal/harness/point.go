package harness

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/procfs"
	"github.com/mailroom-go/mailroom/bench/internal/report"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
)

const (
	readyTimeout = 2 * time.Minute // spawning 150,000 actors on a busy machine
	callTimeout  = time.Minute
)

func roles(path string) (receiver, sender string) {
	switch path {
	case spec.PathProtoactor:
		return nodeapi.RoleProtoactorReceiver, nodeapi.RoleProtoactorSender
	case spec.PathBridge:
		return nodeapi.RoleBridgeReceiver, nodeapi.RoleBridgeSender
	case spec.PathLean:
		return nodeapi.RoleLeanReceiver, nodeapi.RoleLeanSender
	}
	return nodeapi.RoleMailroomReceiver, nodeapi.RoleMailroomSender
}

// pair is a point's two processes.
type pair struct {
	recv, send *ctl.Child
	rb, sb     nodeapi.Ready
}

func (h *Harness) startPair(s spec.Spec, tag string) (*pair, error) {
	rrole, srole := roles(s.Path)
	p := &pair{}
	var err error
	p.recv, err = ctl.Start(rrole, nodeapi.Config{Spec: s}, nil, filepath.Join(h.logDir, tag+".receiver.log"), readyTimeout, &p.rb)
	if err != nil {
		return nil, err
	}
	p.send, err = ctl.Start(srole, nodeapi.Config{Spec: s, Peer: p.rb.Addr}, nil, filepath.Join(h.logDir, tag+".sender.log"), readyTimeout, &p.sb)
	if err != nil {
		p.recv.Kill()
		return nil, err
	}
	return p, nil
}

func (p *pair) stop() error {
	errS := p.send.Quit(30 * time.Second)
	errR := p.recv.Quit(30 * time.Second)
	if errS != nil {
		return errS
	}
	return errR
}

func (p *pair) kill() {
	p.send.Kill()
	p.recv.Kill()
}

// waitConnected polls both nodes until the path is ready.
func (p *pair) waitConnected(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var a, b nodeapi.Status
		if err := p.send.Call(nodeapi.CmdStatus, nil, &a, callTimeout); err != nil {
			return err
		}
		if err := p.recv.Call(nodeapi.CmdStatus, nil, &b, callTimeout); err != nil {
			return err
		}
		if a.Connected && b.Connected {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("harness: path not connected within %v (sender %v, receiver %v)", timeout, a.Connected, b.Connected)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runPoint runs one point in fresh processes.
func (h *Harness) runPoint(s spec.Spec, round int) (pt report.Point, err error) {
	pt = report.Point{
		Op: s.Op, Path: s.Path, Payload: s.Payload, Writers: s.Writers, WriterKind: s.WriterKind, Receivers: s.Receivers, PaceMs: float64(s.Pace) / 1e6,
		Round: round, Rounds: 1, PerWriter: s.PerWriter, Ops: s.Total(), WarmupOps: int64(s.Warmup) * int64(s.Writers),
		IntendedPerS: s.IntendedPerS(), IdealS: s.Ideal().Seconds(),
	}
	tag := fmt.Sprintf("%03d-%s-%s-%s-%d-%s-%s-r%d", h.seq, s.Op, s.Path, s.Payload, s.Writers, s.WriterKind, s.Receivers, round)
	h.seq++
	p, err := h.startPair(s, tag)
	if err != nil {
		return pt, err
	}
	ok := false
	defer func() {
		if !ok {
			p.kill()
			pt.Note = joinNote(pt.Note, h.logReason(tag))
		}
	}()
	if err := p.waitConnected(time.Minute); err != nil {
		return pt, err
	}
	// Warm-up: same op, unpaced, counted to completion.
	if _, err := h.phase(p, s, s.Warmup, 0, "warm-up"); err != nil {
		return pt, fmt.Errorf("warm-up: %w", err)
	}
	var s0, r0 nodeapi.Stats
	if err := p.send.Call(nodeapi.CmdStats, nil, &s0, callTimeout); err != nil {
		return pt, err
	}
	if err := p.recv.Call(nodeapi.CmdStats, nil, &r0, callTimeout); err != nil {
		return pt, err
	}
	if h.profileDir != "" {
		for _, c := range []*ctl.Child{p.send, p.recv} {
			path := filepath.Join(h.profileDir, tag+"."+c.Role+".pprof")
			if err := c.Call(nodeapi.CmdProfileStart, nodeapi.ProfileArg{Path: path}, nil, callTimeout); err != nil {
				return pt, err
			}
		}
	}
	res, err := h.phase(p, s, s.PerWriter, s.Pace, "")
	if err != nil {
		return pt, err
	}
	if h.profileDir != "" {
		for _, c := range []*ctl.Child{p.send, p.recv} {
			if err := c.Call(nodeapi.CmdProfileStop, nil, nil, callTimeout); err != nil {
				return pt, err
			}
		}
	}
	var s1, r1 nodeapi.Stats
	if err := p.send.Call(nodeapi.CmdStats, nil, &s1, callTimeout); err != nil {
		return pt, err
	}
	if err := p.recv.Call(nodeapi.CmdStats, nil, &r1, callTimeout); err != nil {
		return pt, err
	}
	fill(&pt, s, res, p, s0, s1, r0, r1)
	if pt.Errors > 0 {
		pt.Note = joinNote(pt.Note, h.logReason(tag))
	}
	ok = true
	if err := p.stop(); err != nil {
		pt.Note = joinNote(pt.Note, "stop: "+err.Error())
	}
	return pt, nil
}

// fill computes a point's figures from the phase and the nodes' stats.
func fill(pt *report.Point, s spec.Spec, res phaseResult, p *pair, s0, s1, r0, r1 nodeapi.Stats) {
	const mb = 1 << 20
	ops := float64(res.counted)
	pt.ElapsedS = res.elapsed.Seconds()
	if pt.ElapsedS > 0 {
		pt.AchievedPerS = ops / pt.ElapsedS
	}
	if pt.IntendedPerS > 0 {
		pt.AchievedFrac = pt.AchievedPerS / pt.IntendedPerS
	}
	pt.SenderRSSMB = float64(res.sendAfter.HWMBytes) / mb
	pt.ReceiverRSSMB = float64(res.recvAfter.HWMBytes) / mb
	pt.SenderBaseMB = float64(p.sb.BaseRSS) / mb
	pt.ReceiverBaseMB = float64(p.rb.BaseRSS) / mb
	grown := float64(res.sendAfter.HWMBytes+res.recvAfter.HWMBytes) - float64(p.sb.BaseRSS+p.rb.BaseRSS)
	pt.KiBPerWriter = grown / 1024 / float64(s.Writers)
	pt.SenderCPUS = res.sendAfter.CPUSeconds - res.sendBefore.CPUSeconds
	pt.ReceiverCPUS = res.recvAfter.CPUSeconds - res.recvBefore.CPUSeconds
	if ops > 0 {
		pt.CPUSPerMillion = (pt.SenderCPUS + pt.ReceiverCPUS) / ops * 1e6
		wchar := float64(res.sendAfter.WChar-res.sendBefore.WChar) + float64(res.recvAfter.WChar-res.recvBefore.WChar)
		pt.WireBytesPerMsg = wchar / ops
		pt.RuntimeBytesPerM = float64(s1.BytesOut-s0.BytesOut+r1.BytesOut-r0.BytesOut) / ops
		pt.SenderAllocsPerMsg = float64(s1.Mallocs-s0.Mallocs) / ops
		pt.ReceiverAllocsPerMsg = float64(r1.Mallocs-r0.Mallocs) / ops
	}
	if total := res.sysAfter.TotalSeconds - res.sysBefore.TotalSeconds; total > 0 {
		busy := res.sysAfter.BusySeconds - res.sysBefore.BusySeconds
		irq := res.sysAfter.IRQSeconds - res.sysBefore.IRQSeconds
		pt.OtherCPUFrac = max(0, (busy-irq-pt.SenderCPUS-pt.ReceiverCPUS)/total)
		pt.IRQCPUFrac = irq / total
	}
	pt.LoadAvg1 = procfs.LoadAvg1()
	if b := s1.Batches - s0.Batches; b > 0 {
		pt.MeanBatch = float64(s1.BatchedMsgs-s0.BatchedMsgs) / float64(b)
		pt.BatchHist = make([]uint64, len(s1.BatchHist))
		for i := range s1.BatchHist {
			pt.BatchHist[i] = s1.BatchHist[i] - s0.BatchHist[i]
		}
	}
	if b := r1.Batches - r0.Batches; b > 0 && s.Op == spec.OpCall {
		pt.ReplyMeanBatch = float64(r1.BatchedMsgs-r0.BatchedMsgs) / float64(b)
	}
	if s.Op == spec.OpCall {
		pt.LatP50Ms, pt.LatP99Ms, pt.LatMaxMs = float64(s1.LatP50Ns)/1e6, float64(s1.LatP99Ns)/1e6, float64(s1.LatMaxNs)/1e6
	}
	pt.Errors = s1.Errors + r1.Errors + res.miscounted
	pt.TimedOut = res.timedOut
	if res.timedOut {
		pt.Note = joinNote(pt.Note, fmt.Sprintf("timed out: %d of %d counted", res.counted, s.Total()))
	}
	pt.Note = joinNote(pt.Note, s1.Note)
	pt.Note = joinNote(pt.Note, r1.Note)
}

func joinNote(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "; " + b
}

// sample reads both processes.
func (p *pair) sample() (send, recv procfs.Sample, err error) {
	if send, err = procfs.Read(p.send.Pid()); err != nil {
		return
	}
	recv, err = procfs.Read(p.recv.Pid())
	return
}
