package harness

import (
	"strings"
	"testing"

	"github.com/mailroom-go/mailroom/bench/internal/ctl"
	"github.com/mailroom-go/mailroom/bench/internal/report"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
)

func TestGroup(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSummaryNamesWhatMatters(t *testing.T) {
	p := report.Point{AchievedPerS: 48000, IntendedPerS: 50000, AchievedFrac: 0.96, ElapsedS: 10.4, IdealS: 10,
		CPUSPerMillion: 30, WireBytesPerMsg: 265, SenderRSSMB: 200, ReceiverRSSMB: 150, MeanBatch: 2, Errors: 0}
	s := summary(p)
	for _, want := range []string{"48,000/s", "96% of 50,000", "(ideal 10)", "cpu 30.00 s/M", "batch 2", "err 0"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q lacks %q", s, want)
		}
	}
	p.TimedOut = true
	if !strings.Contains(summary(p), "TIMED OUT") {
		t.Error("a timed-out point does not say so")
	}
}

func TestCounterSide(t *testing.T) {
	p := &pair{send: &ctl.Child{Role: "sender"}, recv: &ctl.Child{Role: "receiver"}}
	if p.counter(spec.OpCall) != p.send || p.counter(spec.OpSend) != p.recv || p.counter(spec.OpCast) != p.recv {
		t.Fatal("calls complete at the sender, sends and casts at the receiver")
	}
}
