package chaos

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// RSS is the resident set size of process pid in bytes (Linux).
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(v)
			if len(f) < 1 {
				break
			}
			kb, err := strconv.ParseInt(string(f[0]), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("chaos: no VmRSS in /proc/%d/status", pid)
}

// Sample is one reading of a node's vitals.
type Sample struct {
	At         time.Duration // since the series started
	RSS        int64         // bytes
	Goroutines int64
	Rate       float64 // messages per second delivered since the last sample
}

// Series is a node's vitals over a run.
type Series struct {
	Name    string
	Samples []Sample
}

// Flatness compares the mean of the last third of a series with the mean
// of its middle third (the first third is warm-up) and returns the
// relative growth: 0.1 is 10% more at the end. It needs 3 samples.
func Flatness(s []Sample, value func(Sample) float64) float64 {
	mid, end := thirds(s, value)
	if mid == 0 {
		return 0
	}
	return end/mid - 1
}

// thirds returns the means of the middle and last thirds of a series (0
// with fewer than 3 samples).
func thirds(s []Sample, value func(Sample) float64) (mid, end float64) {
	if len(s) < 3 {
		return 0, 0
	}
	third := len(s) / 3
	mean := func(xs []Sample) float64 {
		var sum float64
		for _, x := range xs {
			sum += value(x)
		}
		return sum / float64(len(xs))
	}
	return mean(s[third : 2*third]), mean(s[2*third:])
}

// MiB formats bytes as mebibytes with one decimal.
func MiB(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }
