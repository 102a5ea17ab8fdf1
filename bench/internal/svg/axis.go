package svg

import (
	"math"
	"strconv"
)

// niceTicks returns about n round tick values covering [0, hi].
func niceTicks(hi float64, n int) []float64 {
	if hi <= 0 || math.IsNaN(hi) || math.IsInf(hi, 0) {
		return []float64{0, 1}
	}
	raw := hi / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for v := 0.0; v < hi+step*0.999; v += step {
		ticks = append(ticks, v)
	}
	return ticks
}

// Human renders v compactly: 1.5M, 400k, 12, 0.25.
func Human(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e3:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func trim(v float64) string {
	if math.Abs(v) >= 100 || v == math.Trunc(v) {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	if math.Abs(v) >= 10 {
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// Palette colours series in order (colour-blind-safe, Okabe-Ito).
var Palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}
