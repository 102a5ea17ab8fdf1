package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// System is a reading of the whole machine's CPU time (/proc/stat).
type System struct {
	BusySeconds  float64 // user, nice, system, irq, softirq, steal
	TotalSeconds float64 // the above plus idle and iowait
	IRQSeconds   float64 // irq and softirq (e.g. loopback TCP receive work), of any process
	StealSeconds float64 // time the hypervisor gave to other guests
}

// ReadSystem reads /proc/stat.
func ReadSystem() (System, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return System{}, err
	}
	return ParseSystem(b)
}

// ParseSystem parses the aggregate "cpu" line of /proc/stat.
func ParseSystem(b []byte) (System, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var v [8]uint64
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return System{}, fmt.Errorf("procfs: stat: cpu field %d: %w", i+1, err)
			}
			v[i] = n
		}
		// user nice system idle iowait irq softirq steal
		busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
		return System{
			BusySeconds: float64(busy) / ClockTicks, TotalSeconds: float64(busy+v[3]+v[4]) / ClockTicks,
			IRQSeconds: float64(v[5]+v[6]) / ClockTicks, StealSeconds: float64(v[7]) / ClockTicks,
		}, nil
	}
	return System{}, fmt.Errorf("procfs: stat: no cpu line")
}

// LoadAvg1 is the one-minute load average, 0 if unknown.
func LoadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
