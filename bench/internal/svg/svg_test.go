package svg

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

// wellFormed parses doc as XML and returns its root element name and the
// number of elements.
func wellFormed(t *testing.T, doc []byte) (string, int) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	root, n, depth := "", 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if root != "" {
					t.Fatal("two root elements")
				}
				root = e.Name.Local
			}
			depth++
			n++
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 {
		t.Fatal("unclosed elements")
	}
	return root, n
}

func TestChartIsWellFormed(t *testing.T) {
	ch := Chart{
		Title: `Throughput <send> & "data"`, XLabel: "writers", YLabel: "msg/s", LogX: true,
		Series: []Series{
			{Name: "pooled", X: []float64{1000, 10000, 100000}, Y: []float64{4000, 40000, 390000}},
			{Name: "native", X: []float64{1000, 10000, 100000}, Y: []float64{4000, math.NaN(), 180000}},
			{Name: "intended", X: []float64{1000, 100000}, Y: []float64{4000, 400000}, Dashed: true},
		},
	}
	doc := ch.SVG()
	root, n := wellFormed(t, doc)
	if root != "svg" || n < 20 {
		t.Fatalf("root %q with %d elements", root, n)
	}
	if !strings.Contains(string(doc), "&lt;send&gt; &amp; &#34;data&#34;") {
		t.Error("title not escaped")
	}
	if got := strings.Count(string(doc), "<circle"); got != 7 {
		t.Errorf("%d points drawn, want 7 (NaN skipped)", got)
	}
}

func TestBarsAreWellFormed(t *testing.T) {
	b := Bars{Title: "CPU", YLabel: "s per million", Groups: []string{"send", "call"},
		Series: []BarSeries{{Name: "native", Values: []float64{3.2, 9}}, {Name: "protoactor", Values: []float64{8, math.NaN()}}}}
	root, _ := wellFormed(t, b.SVG())
	if root != "svg" {
		t.Fatal(root)
	}
	if got := strings.Count(string(b.SVG()), "<rect"); got != 4 { // background + 3 bars
		t.Errorf("%d rects, want 4", got)
	}
	empty := Bars{Title: "none"}
	wellFormed(t, empty.SVG())
	wellFormed(t, Chart{Title: "empty"}.SVG())
}

func TestTicksAndHuman(t *testing.T) {
	ticks := niceTicks(430000, 5)
	if ticks[0] != 0 || ticks[len(ticks)-1] < 430000 || len(ticks) > 8 {
		t.Errorf("ticks %v", ticks)
	}
	for v, want := range map[float64]string{1500000: "1.5M", 400000: "400k", 12: "12", 0.25: "0.25", 2.5e9: "2.5G", 15.5: "15.5"} {
		if got := Human(v); got != want {
			t.Errorf("Human(%v) = %q, want %q", v, got, want)
		}
	}
}
