package report

import (
	"math"
	"sort"

	"github.com/mailroom-go/mailroom/bench/internal/spec"
	"github.com/mailroom-go/mailroom/bench/internal/svg"
)

// Plot is one rendered SVG.
type Plot struct {
	File, Title string
	SVG         []byte
}

// pathOrder is the runtime paths' order in tables and plots.
var pathOrder = []string{spec.PathNative, spec.PathPooled, spec.PathProtoactor, spec.PathBridge}

// pathColors give each path one colour in every plot.
var pathColors = map[string]string{
	spec.PathNative:     svg.Palette[0],
	spec.PathPooled:     svg.Palette[1],
	spec.PathProtoactor: svg.Palette[2],
	spec.PathLean:       svg.Palette[3],
	spec.PathBridge:     svg.Palette[4],
}

// Plots renders a result's figures: for each paced operation, achieved
// rate and CPU per million operations against writers, one line per path;
// for the unpaced points at 1,000 writers, rate and CPU per million by
// workload and path.
func Plots(res *Result) []Plot {
	var out []Plot
	for _, op := range []string{"send", "cast", "call"} {
		var rate, cpu []svg.Series
		var intended svg.Series
		for _, path := range pathOrder {
			ps := pacedSeries(res.Points, op, path)
			if len(ps) == 0 {
				continue
			}
			r := svg.Series{Name: path, Color: pathColors[path]}
			c := svg.Series{Name: path, Color: pathColors[path]}
			for _, p := range ps {
				r.X, r.Y = append(r.X, float64(p.Writers)), append(r.Y, p.AchievedPerS)
				c.X, c.Y = append(c.X, float64(p.Writers)), append(c.Y, p.CPUSPerMillion)
				if len(intended.X) < len(ps) {
					intended.X, intended.Y = append(intended.X, float64(p.Writers)), append(intended.Y, p.IntendedPerS)
				}
			}
			rate, cpu = append(rate, r), append(cpu, c)
		}
		if len(rate) == 0 {
			continue
		}
		intended.Name, intended.Dashed, intended.Color = "intended", true, "#777"
		pace := pacedSeries(res.Points, op, rate[0].Name)[0].PaceMs
		out = append(out,
			Plot{File: res.Name + "-paced-" + op + ".svg", Title: "paced " + op + ": achieved rate against writers",
				SVG: svg.Chart{Title: "Paced " + op + " (data, pace " + ftoa(pace) + " ms): achieved rate", XLabel: "writers (log scale)",
					YLabel: op + "s per second", LogX: true, Series: append([]svg.Series{intended}, rate...)}.SVG()},
			Plot{File: res.Name + "-paced-" + op + "-cpu.svg", Title: "paced " + op + ": CPU per million operations",
				SVG: svg.Chart{Title: "Paced " + op + ": CPU seconds per million (both processes)", XLabel: "writers (log scale)",
					YLabel: "CPU s per million " + op + "s", LogX: true, Series: cpu}.SVG()})
	}
	// Unpaced, 1,000 writers: one bar group per workload that ran, one
	// bar per path (lean where it ran).
	type workload struct {
		label string
		sel   Sel
	}
	all := []workload{
		{"send data", SelSendData},
		{"send data-vt", SelSendVT},
		{"send bytes g1", SelSendBytes},
		{"send data g1", Sel{Op: "send", Payload: "data", Writers: 1000, WriterKind: "goroutine", Receivers: "one"}},
		{"call data", SelCallData},
		{"call data g", SelCallDataG},
	}
	var groups []string
	var ran []workload
	paths := []string{}
	for _, wl := range all {
		if _, ok := Get(res.Points, wl.sel.On("pooled")); ok {
			groups, ran = append(groups, wl.label), append(ran, wl)
		}
	}
	for _, path := range append(append([]string(nil), pathOrder...), spec.PathLean) {
		for _, wl := range ran {
			if _, ok := Get(res.Points, wl.sel.On(path)); ok {
				paths = append(paths, path)
				break
			}
		}
	}
	if len(groups) > 0 {
		var rate, cpu []svg.BarSeries
		for _, path := range paths {
			r, c := svg.BarSeries{Name: path, Color: pathColors[path]}, svg.BarSeries{Name: path, Color: pathColors[path]}
			for _, wl := range ran {
				p, ok := Get(res.Points, wl.sel.On(path))
				if !ok {
					r.Values, c.Values = append(r.Values, math.NaN()), append(c.Values, math.NaN())
					continue
				}
				r.Values, c.Values = append(r.Values, p.AchievedPerS), append(c.Values, p.CPUSPerMillion)
			}
			rate, cpu = append(rate, r), append(cpu, c)
		}
		out = append(out,
			Plot{File: res.Name + "-unpaced.svg", Title: "unpaced, 1,000 writers: operations per second",
				SVG: svg.Bars{Title: "Unpaced, 1,000 writers (actors; g: goroutines, g1: goroutines to one receiver): operations per second", XLabel: "workload", YLabel: "operations per second", Groups: groups, Series: rate, Width: 1240, Height: 440}.SVG()},
			Plot{File: res.Name + "-unpaced-cpu.svg", Title: "unpaced, 1,000 writers: CPU per million operations",
				SVG: svg.Bars{Title: "Unpaced, 1,000 writers (g: goroutines, g1: to one receiver): CPU s per million, both processes", XLabel: "workload", YLabel: "CPU seconds per million", Groups: groups, Series: cpu, Width: 1240, Height: 440}.SVG()})
	}
	return out
}

// pacedSeries are the paced data points of op on path, by writers.
func pacedSeries(points []Point, op, path string) []Point {
	var out []Point
	for _, p := range points {
		if p.Op == op && p.Path == path && p.Payload == "data" && p.PaceMs > 0 {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Writers < out[j].Writers })
	return out
}
