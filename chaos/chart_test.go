package chaos

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Line is one series of a chart.
type Line struct {
	Name string
	X, Y []float64
}

// Chart is a line chart drawn as a standalone SVG, axes from zero.
type Chart struct {
	Title  string
	XLabel string
	YLabel string
	Lines  []Line
}

const (
	chartW, chartH         = 720, 360
	padL, padR, padT, padB = 70, 150, 40, 50
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// WriteSVG draws the chart.
func (c *Chart) WriteSVG(w io.Writer) error {
	xmax, ymax := 0.0, 0.0
	for _, l := range c.Lines {
		for i := range l.X {
			xmax, ymax = math.Max(xmax, l.X[i]), math.Max(ymax, l.Y[i])
		}
	}
	xstep, xtop := niceAxis(xmax)
	ystep, ytop := niceAxis(ymax)
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	px := func(x float64) float64 { return padL + x/xtop*pw }
	py := func(y float64) float64 { return padT + ph - y/ytop*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", padL, html.EscapeString(c.Title))
	for x := 0.0; x <= xtop+xstep/2; x += xstep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", px(x), padT, px(x), py(0))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), py(0)+16, fmtTick(x))
	}
	for y := 0.0; y <= ytop+ystep/2; y += ystep {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", padL, py(y), px(xtop), py(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, py(y)+4, fmtTick(y))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", padL+pw/2, chartH-10, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s</text>`+"\n", padT+ph/2, padT+ph/2, html.EscapeString(c.YLabel))
	for i, l := range c.Lines {
		color := palette[i%len(palette)]
		pts := make([]string, len(l.X))
		for j := range l.X {
			pts[j] = fmt.Sprintf("%.1f,%.1f", px(l.X[j]), py(l.Y[j]))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		ly := padT + 10 + 18*i
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", chartW-padR+12, ly, chartW-padR+32, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", chartW-padR+38, ly+4, html.EscapeString(l.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceAxis picks a round tick step for [0, max] and the axis top.
func niceAxis(max float64) (step, top float64) {
	if max <= 0 {
		return 1, 1
	}
	raw := max / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return step, math.Ceil(max/step) * step
}

func fmtTick(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}
