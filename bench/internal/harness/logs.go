package harness

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// logReason returns the first error line, else the first warning, of a
// point's node logs: why a point failed, for its note.
func (h *Harness) logReason(tag string) string {
	var firstWarn string
	for _, role := range []string{"sender", "receiver"} {
		f, err := os.Open(filepath.Join(h.logDir, tag+"."+role+".log"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.Contains(line, "level=ERROR"):
				f.Close()
				return role + " log: " + trimLog(line)
			case firstWarn == "" && strings.Contains(line, "level=WARN"):
				firstWarn = role + " log: " + trimLog(line)
			}
		}
		f.Close()
	}
	return firstWarn
}

// trimLog drops the timestamp and caps the length.
func trimLog(line string) string {
	if i := strings.Index(line, " level="); i >= 0 {
		line = line[i+1:]
	}
	if len(line) > 240 {
		line = line[:240] + "…"
	}
	return line
}
