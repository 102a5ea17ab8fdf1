//go:build chaos

package chaos

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

const (
	soakWriters = 100_000
	soakSinks   = 1000
	soakPace    = 2 * time.Second // each writer sends once per pace
	soakSample  = 10 * time.Second
)

// tick tells a soak writer to send its next message.
type tick struct{}

// soakWriter is a writer actor: one message per tick to its sink on b.
type soakWriter struct {
	sink string
	seq  int64
	sent *atomic.Int64
}

func (w *soakWriter) Receive(c *actor.Context) {
	if _, ok := c.Message().(tick); ok {
		w.seq++
		c.SendNamed("b", w.sink, &testpb.Echo{N: w.seq})
		w.sent.Add(1)
	}
}

// TestSoak: 100,000 writer actors on a, each sending one message per
// pace to one of b's 1,000 ordered sinks, for -chaos.soak (make
// test-chaos: 10 minutes). a's and b's RSS and goroutine counts are
// sampled every 10 s and must stay flat; every message is delivered in
// order. With -chaos.plots, the samples are drawn as SVG charts.
func TestSoak(t *testing.T) {
	if *soakFor == 0 {
		t.Skip("the soak runs with -chaos.soak (make test-chaos: 10m)")
	}
	sc := newScenario(t, "soak")
	b, bCtr := startChild(t, testnode.Options{Name: "b", Extra: map[string]string{ExtraSinks: strconv.Itoa(soakSinks), ExtraSinkBound: "1000"}})
	a := startLocal(t, "a", remote.Config{Seeds: []string{b.Seed()}}, nil)
	require.NoError(t, a.n.Connect(ctxFor(t, 10*time.Second), "b", ""))
	waitPoolOf(t, a, "b")
	var sent atomic.Int64
	writers := make([]actor.PID, soakWriters)
	for i := range writers {
		w := &soakWriter{sink: SinkName(i % soakSinks), sent: &sent}
		pid, err := a.sys.Spawn(actor.PropsFromProducer(func() actor.Actor { return w }))
		require.NoError(t, err)
		writers[i] = pid
	}
	led := openLedger(a, "b")

	// The pacer: every 100 ms it ticks the writers whose turn it is.
	const step = 100 * time.Millisecond
	slots := int(soakPace / step)
	stop, paced := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(paced)
		tk := time.NewTicker(step)
		defer tk.Stop()
		for n := 0; ; n++ {
			for i := n % slots; i < len(writers); i += slots {
				a.sys.Send(writers[i], tick{})
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	var as, bs []Sample
	start := time.Now()
	lastDelivered := bCtr.Load(Delivered)
	sample := func() {
		at := time.Since(start)
		d := bCtr.Load(Delivered)
		rate := float64(d-lastDelivered) / soakSample.Seconds()
		lastDelivered = d
		as = append(as, Sample{At: at, RSS: selfRSS(), Goroutines: int64(runtime.NumGoroutine()), Rate: rate})
		bs = append(bs, Sample{At: at, RSS: bCtr.Load(Resident), Goroutines: bCtr.Load(Goroutines), Rate: rate})
		t.Logf("soak %v: a rss %s MiB, %d goroutines; b rss %s MiB, %d goroutines; %.0f msg/s",
			at.Round(time.Second), MiB(as[len(as)-1].RSS), as[len(as)-1].Goroutines, MiB(bs[len(bs)-1].RSS), bs[len(bs)-1].Goroutines, rate)
	}
	tk := time.NewTicker(soakSample)
	for time.Since(start) < *soakFor {
		<-tk.C
		sample()
	}
	tk.Stop()
	close(stop)
	<-paced
	bk := led.close(t, 0)
	attempted := sent.Load()
	bk.attempted = attempted
	delivered := settle(t, 60*time.Second, time.Second, func() int64 { return bCtr.Load(Delivered) })
	rss := func(s Sample) float64 { return float64(s.RSS) }
	gor := func(s Sample) float64 { return float64(s.Goroutines) }
	if *plotsTo != "" {
		require.NoError(t, writeSoakPlots(*plotsTo, as, bs))
	}

	sc.set("writers", soakWriters)
	sc.set("pace_ms", soakPace)
	sc.set("intended_rate", float64(soakWriters)/soakPace.Seconds())
	sc.set("achieved_rate", float64(delivered)/time.Since(start).Seconds())
	sc.set("minutes", time.Since(start).Minutes())
	sc.set("samples", len(as))
	sc.set("a_rss_start_mib", MiB(as[0].RSS))
	sc.set("a_rss_end_mib", MiB(as[len(as)-1].RSS))
	sc.set("b_rss_start_mib", MiB(bs[0].RSS))
	sc.set("b_rss_end_mib", MiB(bs[len(bs)-1].RSS))
	sc.set("a_goroutines_start", as[0].Goroutines)
	sc.set("a_goroutines_end", as[len(as)-1].Goroutines)
	sc.set("b_goroutines_start", bs[0].Goroutines)
	sc.set("b_goroutines_end", bs[len(bs)-1].Goroutines)
	am, ae := thirds(as, gor)
	sc.set("a_goroutines_mid_mean", am)
	sc.set("a_goroutines_end_mean", ae)
	af, aef := floors(as, gor)
	sc.set("a_goroutines_mid_floor", af)
	sc.set("a_goroutines_end_floor", aef)
	sc.set("a_rss_growth_pct", 100*Flatness(as, rss))
	sc.set("b_rss_growth_pct", 100*Flatness(bs, rss))
	bk.record(sc)
	sc.set("delivered", delivered)
	sc.set("lost", bk.written-delivered-bCtr.Load(DeadLetters))
	sc.set("out_of_order", bCtr.Load(OutOfOrder))

	require.GreaterOrEqual(t, len(as), 3, "at least three samples")
	for _, f := range []struct {
		name string
		s    []Sample
	}{{"a", as}, {"b", bs}} {
		require.Less(t, Flatness(f.s, rss), 0.15, "%s's RSS grew", f.name)
		// Goroutines come and go with the load (an actor holds one while
		// it runs), so a sample's count is noisy (means of 185 then 395
		// in one run whose first and last samples were 84 and 74): a
		// leak shows as a rising floor.
		mid, end := floors(f.s, gor)
		require.LessOrEqual(t, end, 1.25*mid+100, "%s's goroutines grew", f.name)
	}
	bk.check(t)
	require.Zero(t, bk.refused+bk.proxyDropped+bk.unsent, "sends dropped")
	require.Equal(t, bk.written, delivered, "every send delivered")
	require.Zero(t, bCtr.Load(OutOfOrder))
}

// writeSoakPlots draws RSS, goroutines and delivery rate over time.
func writeSoakPlots(dir string, as, bs []Sample) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	line := func(name string, s []Sample, v func(Sample) float64) Line {
		l := Line{Name: name}
		for _, x := range s {
			l.X = append(l.X, x.At.Minutes())
			l.Y = append(l.Y, v(x))
		}
		return l
	}
	mib := func(s Sample) float64 { return float64(s.RSS) / (1 << 20) }
	gor := func(s Sample) float64 { return float64(s.Goroutines) }
	rate := func(s Sample) float64 { return s.Rate / 1000 }
	charts := map[string]Chart{
		"soak-rss.svg":        {Title: "Soak: resident memory", XLabel: "minutes", YLabel: "RSS (MiB)", Lines: []Line{line("a (100k writers)", as, mib), line("b (1k sinks)", bs, mib)}},
		"soak-goroutines.svg": {Title: "Soak: goroutines", XLabel: "minutes", YLabel: "goroutines", Lines: []Line{line("a", as, gor), line("b", bs, gor)}},
		"soak-rate.svg":       {Title: "Soak: messages delivered", XLabel: "minutes", YLabel: "thousand msg/s", Lines: []Line{line("delivered at b", bs, rate)}},
	}
	for name, c := range charts {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = c.WriteSVG(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// floors are the least value in the middle and the last third of s. A
// sample catches whatever actors happen to be running; a leak raises the
// floor, a burst only the mean.
func floors(s []Sample, value func(Sample) float64) (mid, end float64) {
	if len(s) < 3 {
		return 0, 0
	}
	third := len(s) / 3
	least := func(xs []Sample) float64 {
		m := value(xs[0])
		for _, x := range xs[1:] {
			m = min(m, value(x))
		}
		return m
	}
	return least(s[third : 2*third]), least(s[2*third:])
}
