package scaletest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// Proc is one reading of a process from /proc.
type Proc struct {
	FDs     int     // open file descriptors (/proc/<pid>/fd)
	Sockets int     // those of them that are sockets
	RSS     int64   // resident set, bytes (VmRSS)
	CPU     float64 // user + system seconds
}

// ReadProc reads pid's figures (Linux).
func ReadProc(pid int) (Proc, error) {
	var p Proc
	dir := "/proc/" + strconv.Itoa(pid)
	ents, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return p, err
	}
	p.FDs = len(ents)
	for _, e := range ents {
		if target, err := os.Readlink(dir + "/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			p.Sockets++
		}
	}
	b, err := os.ReadFile(dir + "/status")
	if err != nil {
		return p, err
	}
	if p.RSS, err = parseRSS(b); err != nil {
		return p, err
	}
	if b, err = os.ReadFile(dir + "/stat"); err != nil {
		return p, err
	}
	p.CPU, err = parseCPU(b)
	return p, err
}

// parseRSS returns VmRSS in bytes from /proc/<pid>/status.
func parseRSS(status []byte) (int64, error) {
	for _, line := range bytes.Split(status, []byte("\n")) {
		v, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(v)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("scaletest: status: bad VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb << 10, err
	}
	return 0, fmt.Errorf("scaletest: status: no VmRSS line")
}

// parseCPU returns utime + stime in seconds from /proc/<pid>/stat. The
// command name may hold spaces and parentheses, so fields are counted
// from the last ')'.
func parseCPU(stat []byte) (float64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("scaletest: stat: no command field")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 { // utime and stime are fields 14 and 15: f[11], f[12]
		return 0, fmt.Errorf("scaletest: stat: %d fields after the command, want at least 13", len(f))
	}
	ut, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("scaletest: stat: utime: %w", err)
	}
	st, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("scaletest: stat: stime: %w", err)
	}
	return float64(ut+st) / clockTicks, nil
}
