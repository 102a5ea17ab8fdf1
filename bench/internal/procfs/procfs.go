package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ClockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux architecture Go supports.
const ClockTicks = 100

// Sample is one reading of a process.
type Sample struct {
	HWMBytes   uint64  // peak resident set since start (VmHWM)
	RSSBytes   uint64  // resident set now (VmRSS)
	CPUSeconds float64 // user + system time
	WChar      uint64  // bytes passed to write-like syscalls (sockets included)
}

// Read samples pid.
func Read(pid int) (Sample, error) {
	var s Sample
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/status")
	if err != nil {
		return s, err
	}
	if s.HWMBytes, s.RSSBytes, err = ParseStatus(b); err != nil {
		return s, err
	}
	if b, err = os.ReadFile(dir + "/stat"); err != nil {
		return s, err
	}
	if s.CPUSeconds, err = ParseStatCPU(b); err != nil {
		return s, err
	}
	if b, err = os.ReadFile(dir + "/io"); err != nil {
		return s, err
	}
	s.WChar, err = ParseIOWChar(b)
	return s, err
}

// ParseStatus returns VmHWM and VmRSS in bytes from /proc/<pid>/status.
func ParseStatus(b []byte) (hwm, rss uint64, err error) {
	var haveHWM, haveRSS bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "VmHWM" && key != "VmRSS") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("procfs: status: bad %s line %q", key, line)
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("procfs: status: %s: %w", key, err)
		}
		if key == "VmHWM" {
			hwm, haveHWM = n<<10, true
		} else {
			rss, haveRSS = n<<10, true
		}
	}
	if !haveHWM || !haveRSS {
		return 0, 0, fmt.Errorf("procfs: status: no VmHWM/VmRSS lines")
	}
	return hwm, rss, nil
}

// ParseStatCPU returns utime + stime in seconds from /proc/<pid>/stat.
// The command name (field 2) may hold spaces and parentheses, so fields
// are counted from the last ')'.
func ParseStatCPU(b []byte) (float64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("procfs: stat: no command field")
	}
	f := strings.Fields(string(b[i+1:]))
	// After ")": state is field 3, so utime (14) is f[11] and stime (15) f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("procfs: stat: %d fields after the command, want at least 13", len(f))
	}
	ut, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("procfs: stat: utime: %w", err)
	}
	st, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("procfs: stat: stime: %w", err)
	}
	return float64(ut+st) / ClockTicks, nil
}

// ParseIOWChar returns wchar from /proc/<pid>/io.
func ParseIOWChar(b []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("procfs: io: wchar: %w", err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("procfs: io: no wchar line")
}
