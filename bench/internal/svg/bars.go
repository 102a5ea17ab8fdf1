package svg

import (
	"fmt"
	"math"
)

// BarSeries is one bar per group.
type BarSeries struct {
	Name   string
	Values []float64 // by group; NaN for none
	Color  string    // default: the palette, in order
}

// Bars is a grouped bar chart.
type Bars struct {
	Title, XLabel, YLabel string
	Groups                []string
	Series                []BarSeries
	Width, Height         int // default 720 × 420
}

// SVG renders the chart.
func (bc Bars) SVG() []byte {
	w, h := bc.Width, bc.Height
	if w == 0 {
		w, h = 720, 420
	}
	c := newCanvas(w, h, bc.Title)
	ymax := 0.0
	for _, s := range bc.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				ymax = math.Max(ymax, v)
			}
		}
	}
	yt := niceTicks(ymax*1.08, 5)
	x0, y0, x1, y1 := c.frame(bc.XLabel, bc.YLabel, yt, Human)
	top := yt[len(yt)-1]
	ng, ns := len(bc.Groups), len(bc.Series)
	if ng == 0 || ns == 0 {
		return c.end()
	}
	gw := (x1 - x0) / float64(ng)
	bw := gw * 0.8 / float64(ns)
	var names, colors []string
	var dashed []bool
	for si, s := range bc.Series {
		color := s.Color
		if color == "" {
			color = Palette[si%len(Palette)]
		}
		names, colors, dashed = append(names, s.Name), append(colors, color), append(dashed, false)
		for gi, v := range s.Values {
			if gi >= ng || math.IsNaN(v) {
				continue
			}
			x := x0 + float64(gi)*gw + gw*0.1 + float64(si)*bw
			y := y0 - (y0-y1)*v/top
			fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %s</title></rect>`+"\n",
				x, y, bw-2, y0-y, color, esc(s.Name), esc(bc.Groups[gi]), Human(v))
			c.text(x+(bw-2)/2, y-4, "middle", `font-size="10"`, Human(v))
		}
	}
	for gi, g := range bc.Groups {
		c.text(x0+(float64(gi)+0.5)*gw, y0+19, "middle", "", g)
	}
	c.legend(x1+18, y1+10, names, colors, dashed)
	return c.end()
}
