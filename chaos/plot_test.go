package chaos

import (
	"bytes"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChartIsWellFormedSVG(t *testing.T) {
	c := Chart{Title: "t <&>", XLabel: "minutes", YLabel: "MiB", Lines: []Line{
		{Name: "a", X: []float64{0, 1, 2}, Y: []float64{10, 12, 11}},
		{Name: "b", X: []float64{0, 1, 2}, Y: []float64{3, 3, 3}},
	}}
	var b bytes.Buffer
	require.NoError(t, c.WriteSVG(&b))
	d := xml.NewDecoder(&b)
	lines := 0
	for {
		tok, err := d.Token()
		if err != nil {
			require.ErrorContains(t, err, "EOF")
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	require.Equal(t, 2, lines)
	require.Equal(t, "0.25", fmtTick(0.25))
	require.Equal(t, "3", fmtTick(3))
}

func TestFlatness(t *testing.T) {
	flat := []Sample{{RSS: 100}, {RSS: 100}, {RSS: 100}, {RSS: 101}, {RSS: 100}, {RSS: 100}}
	rising := []Sample{{RSS: 100}, {RSS: 110}, {RSS: 120}, {RSS: 130}, {RSS: 140}, {RSS: 150}}
	rss := func(s Sample) float64 { return float64(s.RSS) }
	require.InDelta(t, 0.005, Flatness(flat, rss), 0.01)
	require.Greater(t, Flatness(rising, rss), 0.15)
	require.Zero(t, Flatness(flat[:2], rss))
}

func TestCountersAreSharedThroughTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c")
	w, err := OpenCounters(path)
	require.NoError(t, err)
	r, err := OpenCounters(path) // a second mapping, as the parent has
	require.NoError(t, err)
	w.Add(Delivered, 41)
	w.Add(Delivered, 1)
	w.Max(CallsLastEnd, 7)
	w.Max(CallsLastEnd, 5)
	require.Equal(t, int64(42), r.Load(Delivered))
	require.Equal(t, int64(7), r.Snapshot().Get(CallsLastEnd))
	require.NoError(t, w.Close())
	require.Equal(t, int64(42), r.Load(Delivered), "the counters outlive the writer's mapping")
	require.NoError(t, r.Close())
	require.True(t, strings.HasPrefix(Delivered.String(), "delivered"))
}
