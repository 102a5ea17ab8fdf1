package svg

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"sort"
)

// Series is one line.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
	Color  string // default: the palette, in order
}

// Chart is a line chart.
type Chart struct {
	Title, XLabel, YLabel string
	LogX                  bool
	Series                []Series
	Width, Height         int // default 720 × 420
}

const (
	padL, padR, padT, padB = 78, 170, 44, 56
)

type canvas struct {
	b    bytes.Buffer
	w, h int
}

func newCanvas(w, h int, title string) *canvas {
	c := &canvas{w: w, h: h}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&c.b, `<title>%s</title>`+"\n", esc(title))
	fmt.Fprintf(&c.b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	c.text(float64(w)/2, 24, "middle", "font-size=\"15\" font-weight=\"bold\"", title)
	return c
}

func (c *canvas) text(x, y float64, anchor, attrs, s string) {
	fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f" text-anchor="%s" %s>%s</text>`+"\n", x, y, anchor, attrs, esc(s))
}

func (c *canvas) line(x1, y1, x2, y2 float64, attrs string) {
	fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" %s/>`+"\n", x1, y1, x2, y2, attrs)
}

func (c *canvas) end() []byte {
	c.b.WriteString("</svg>\n")
	return c.b.Bytes()
}

func esc(s string) string { return html.EscapeString(s) }

// frame draws the axes, y grid and labels; it returns the plot box.
func (c *canvas) frame(xlabel, ylabel string, yticks []float64, yfmt func(float64) string) (x0, y0, x1, y1 float64) {
	x0, y0, x1, y1 = padL, float64(c.h-padB), float64(c.w-padR), padT
	top := yticks[len(yticks)-1]
	for _, t := range yticks {
		y := y0 - (y0-y1)*t/top
		c.line(x0, y, x1, y, `stroke="#ddd"`)
		c.text(x0-6, y+4, "end", "", yfmt(t))
	}
	c.line(x0, y0, x1, y0, `stroke="#333"`)
	c.line(x0, y0, x0, y1, `stroke="#333"`)
	c.text((x0+x1)/2, float64(c.h)-14, "middle", "", xlabel)
	fmt.Fprintf(&c.b, `<text x="18" y="%.1f" text-anchor="middle" transform="rotate(-90 18 %.1f)">%s</text>`+"\n", (y0+y1)/2, (y0+y1)/2, esc(ylabel))
	return
}

func (c *canvas) legend(x, y float64, names, colors []string, dashed []bool) {
	for i, n := range names {
		yy := y + float64(i)*20
		dash := ""
		if dashed[i] {
			dash = ` stroke-dasharray="6 4"`
		}
		c.line(x, yy, x+26, yy, fmt.Sprintf(`stroke="%s" stroke-width="2.5"%s`, colors[i], dash))
		c.text(x+32, yy+4, "start", "", n)
	}
}

// SVG renders the chart.
func (ch Chart) SVG() []byte {
	w, h := ch.Width, ch.Height
	if w == 0 {
		w, h = 720, 420
	}
	c := newCanvas(w, h, ch.Title)
	var xs []float64
	ymax := 0.0
	seen := map[float64]bool{}
	for _, s := range ch.Series {
		for i, x := range s.X {
			if !seen[x] {
				seen[x] = true
				xs = append(xs, x)
			}
			if i < len(s.Y) && !math.IsNaN(s.Y[i]) {
				ymax = math.Max(ymax, s.Y[i])
			}
		}
	}
	sort.Float64s(xs)
	yt := niceTicks(ymax*1.05, 5)
	x0, y0, x1, y1 := c.frame(ch.XLabel, ch.YLabel, yt, Human)
	xpos := func(x float64) float64 {
		if len(xs) < 2 {
			return (x0 + x1) / 2
		}
		lo, hi, v := xs[0], xs[len(xs)-1], x
		if ch.LogX && lo > 0 {
			lo, hi, v = math.Log(lo), math.Log(hi), math.Log(x)
		}
		return x0 + 10 + (x1-x0-20)*(v-lo)/(hi-lo)
	}
	ypos := func(y float64) float64 { return y0 - (y0-y1)*y/yt[len(yt)-1] }
	for _, x := range xs {
		c.line(xpos(x), y0, xpos(x), y0+5, `stroke="#333"`)
		c.text(xpos(x), y0+19, "middle", "", Human(x))
	}
	var names, colors []string
	var dashed []bool
	for i, s := range ch.Series {
		color := s.Color
		if color == "" {
			color = Palette[i%len(Palette)]
		}
		names, colors, dashed = append(names, s.Name), append(colors, color), append(dashed, s.Dashed)
		var pts bytes.Buffer
		for j := range s.X {
			if j < len(s.Y) && !math.IsNaN(s.Y[j]) {
				fmt.Fprintf(&pts, "%.1f,%.1f ", xpos(s.X[j]), ypos(s.Y[j]))
			}
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&c.b, `<polyline fill="none" stroke="%s" stroke-width="2.5"%s points="%s"/>`+"\n", color, dash, bytes.TrimSpace(pts.Bytes()))
		for j := range s.X {
			if j < len(s.Y) && !math.IsNaN(s.Y[j]) {
				fmt.Fprintf(&c.b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %s at %s</title></circle>`+"\n",
					xpos(s.X[j]), ypos(s.Y[j]), color, esc(s.Name), Human(s.Y[j]), Human(s.X[j]))
			}
		}
	}
	c.legend(x1+18, y1+10, names, colors, dashed)
	return c.end()
}
