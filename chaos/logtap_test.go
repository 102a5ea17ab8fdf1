//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
)

// LogTap is a slog handler for nodes under fault injection: it counts
// every record by message, keeps the text of the first few of each, and
// passes those to an output. A dead peer makes every send log the same
// dial failure; the tap keeps that from flooding the test log while the
// counts still say what happened.
type LogTap struct {
	out   io.Writer
	level slog.Level
	keep  int

	mu     sync.Mutex // protects following
	counts map[string]int
	lines  []string
}

// NewLogTap passes the first keep records of each message at level or
// above to out.
func NewLogTap(out io.Writer, level slog.Level, keep int) *LogTap {
	return &LogTap{out: out, level: level, keep: keep, counts: map[string]int{}}
}

// Logger is a logger writing to the tap.
func (lt *LogTap) Logger() *slog.Logger { return slog.New(&tapHandler{tap: lt}) }

// Count is how many records had a message containing s.
func (lt *LogTap) Count(s string) int {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	n := 0
	for msg, c := range lt.counts {
		if strings.Contains(msg, s) {
			n += c
		}
	}
	return n
}

// Contains reports whether a kept line contains s.
func (lt *LogTap) Contains(s string) bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	for _, l := range lt.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// Summary lists each message with its count, most frequent first.
func (lt *LogTap) Summary() string {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	msgs := make([]string, 0, len(lt.counts))
	for m := range lt.counts {
		msgs = append(msgs, m)
	}
	sort.Slice(msgs, func(i, j int) bool { return lt.counts[msgs[i]] > lt.counts[msgs[j]] })
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "%6d × %s\n", lt.counts[m], m)
	}
	return b.String()
}

func (lt *LogTap) record(r slog.Record, attrs []slog.Attr) {
	lt.mu.Lock()
	lt.counts[r.Message]++
	n := lt.counts[r.Message]
	var line string
	if n <= lt.keep {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s %s", r.Time.Format("15:04:05.000"), r.Level, r.Message)
		add := func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			return true
		}
		for _, a := range attrs {
			add(a)
		}
		r.Attrs(add)
		line = b.String()
		lt.lines = append(lt.lines, line)
	}
	lt.mu.Unlock()
	if line != "" && r.Level >= lt.level && lt.out != nil {
		_, _ = io.WriteString(lt.out, line+"\n")
	}
}

type tapHandler struct {
	tap   *LogTap
	attrs []slog.Attr
}

// Enabled: Info and above are counted (Debug is the hot path's level).
func (h *tapHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *tapHandler) Handle(_ context.Context, r slog.Record) error {
	h.tap.record(r, h.attrs)
	return nil
}

func (h *tapHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &tapHandler{tap: h.tap, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *tapHandler) WithGroup(string) slog.Handler { return h }
