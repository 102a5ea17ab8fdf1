package harness

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/nodeapi"
	"github.com/mailroom-go/mailroom/bench/internal/rawtcp"
	"github.com/mailroom-go/mailroom/bench/internal/report"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
	"github.com/mailroom-go/mailroom/bench/internal/stats"
)

// rawWriteBytes is the batched reference's write size.
const rawWriteBytes = 64 << 10

// runRaw measures the raw-TCP reference: one and two connections, many
// frames per write and one frame per write, rounds times each, medians.
func (h *Harness) runRaw(frames, rounds int) (report.Raw, error) {
	frame, err := rawtcp.DataFrame()
	if err != nil {
		return report.Raw{}, err
	}
	raw := report.Raw{
		FrameBytes: len(frame), WriteBytes: len(rawtcp.Fill(frame, rawWriteBytes)), Rounds: rounds,
		MsgsPerS: map[string]float64{}, UnbatchedMsgsPerS: map[string]float64{},
	}
	for _, batched := range []bool{true, false} {
		for _, conns := range []int{1, 2} {
			cfg := nodeapi.RawConfig{Conns: conns, FrameBytes: len(frame), Frames: frames / conns, WriteBytes: rawWriteBytes}
			if !batched {
				cfg.WriteBytes, cfg.Frames = len(frame), frames/conns/8
			}
			var rates []float64
			for r := range rounds {
				rate, err := h.rawOnce(cfg, fmt.Sprintf("raw-%d-%v-r%d", conns, batched, r))
				if err != nil {
					return raw, err
				}
				rates = append(rates, rate)
			}
			m := stats.Median(rates)
			if batched {
				raw.MsgsPerS[strconv.Itoa(conns)] = m
			} else {
				raw.UnbatchedMsgsPerS[strconv.Itoa(conns)] = m
			}
			mode := fmt.Sprintf("%d KiB writes", raw.WriteBytes>>10)
			if !batched {
				mode = "one frame per write"
			}
			h.printf("  raw tcp  %d conn  %3d-byte frames, %-19s %12s frames/s  (median of %d)\n", conns, len(frame), mode, group(int64(m)), rounds)
		}
	}
	return raw, nil
}

func (h *Harness) rawOnce(cfg nodeapi.RawConfig, tag string) (float64, error) {
	var rb, sb nodeapi.Ready
	recv, err := ctl.Start(nodeapi.RoleRawReceiver, cfg, nil, filepath.Join(h.logDir, tag+".receiver.log"), readyTimeout, &rb)
	if err != nil {
		return 0, err
	}
	defer recv.Kill()
	cfg.Peer = rb.Addr
	send, err := ctl.Start(nodeapi.RoleRawSender, cfg, nil, filepath.Join(h.logDir, tag+".sender.log"), readyTimeout, &sb)
	if err != nil {
		return 0, err
	}
	defer send.Kill()
	total := int64(cfg.Frames) * int64(cfg.Conns)
	if err := recv.Call(nodeapi.CmdArm, map[string]int64{"total": total}, nil, callTimeout); err != nil {
		return 0, err
	}
	var st nodeapi.Started
	if err := send.Call(nodeapi.CmdStart, nil, &st, callTimeout); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		var s nodeapi.Status
		if err := recv.Call(nodeapi.CmdStatus, nil, &s, callTimeout); err != nil {
			return 0, err
		}
		if s.Tally.EndNs != 0 {
			_ = send.Quit(10 * time.Second)
			_ = recv.Quit(10 * time.Second)
			return float64(total) / time.Unix(0, s.Tally.EndNs).Sub(time.Unix(0, st.StartNs)).Seconds(), nil
		}
	}
	return 0, fmt.Errorf("harness: raw tcp %s did not finish", tag)
}

// rttRound runs one round of the raw-TCP ping-pong: rtts sequential
// round trips of call-shaped frames over one connection, after the
// single caller's warm-up (spec.WarmupFor(1)), in two fresh processes.
// It runs right before each round of the single caller, so the two are
// measured back to back like the paths of a group.
func (h *Harness) rttRound(raw *report.Raw, rtts, round int) error {
	call, reply, err := rawtcp.CallFrames()
	if err != nil {
		return err
	}
	raw.CallFrameBytes, raw.ReplyFrameBytes, raw.RTTs = len(call), len(reply), rtts
	cfg := nodeapi.RawConfig{Conns: 1, RTTs: rtts, WarmupRTTs: spec.WarmupFor(1)}
	st, err := h.rttOnce(cfg, fmt.Sprintf("rtt-r%d", round))
	if err != nil {
		return err
	}
	p50, p99 := float64(st.LatP50Ns)/1e6, float64(st.LatP99Ns)/1e6
	raw.RTTP50sMs, raw.RTTP99sMs = append(raw.RTTP50sMs, p50), append(raw.RTTP99sMs, p99)
	raw.RTTP50Ms, raw.RTTP99Ms = stats.Median(raw.RTTP50sMs), stats.Median(raw.RTTP99sMs)
	h.printf("  raw tcp  ping-pong %d+%d-byte frames, %s round trips: p50 %.1f µs, p99 %.1f µs  (round %d)\n",
		len(call), len(reply), group(int64(rtts)), 1000*p50, 1000*p99, round)
	return nil
}

func (h *Harness) rttOnce(cfg nodeapi.RawConfig, tag string) (nodeapi.Stats, error) {
	var st nodeapi.Stats
	var rb, sb nodeapi.Ready
	echo, err := ctl.Start(nodeapi.RoleRawEcho, cfg, nil, filepath.Join(h.logDir, tag+".echo.log"), readyTimeout, &rb)
	if err != nil {
		return st, err
	}
	defer echo.Kill()
	cfg.Peer = rb.Addr
	ping, err := ctl.Start(nodeapi.RoleRawPing, cfg, nil, filepath.Join(h.logDir, tag+".ping.log"), readyTimeout, &sb)
	if err != nil {
		return st, err
	}
	defer ping.Kill()
	if err := ping.Call(nodeapi.CmdStart, nil, nil, callTimeout); err != nil {
		return st, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(pollEvery)
		var s nodeapi.Status
		if err := ping.Call(nodeapi.CmdStatus, nil, &s, callTimeout); err != nil {
			return st, err
		}
		if s.Errors > 0 || s.Tally.EndNs != 0 {
			if err := ping.Call(nodeapi.CmdStats, nil, &st, callTimeout); err != nil {
				return st, err
			}
			if st.Errors > 0 {
				return st, fmt.Errorf("harness: raw tcp ping-pong %s: %s", tag, st.Note)
			}
			_ = ping.Quit(10 * time.Second)
			_ = echo.Quit(10 * time.Second)
			return st, nil
		}
	}
	return st, fmt.Errorf("harness: raw tcp ping-pong %s did not finish", tag)
}
