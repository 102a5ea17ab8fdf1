package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ledger is a worker's record of the side effect of every job it ran:
// one line "id attempt incarnation" per execution, appended with one
// write to a file opened O_APPEND and synced before the job is answered.
// The driver reads the ledgers at the end: an id on two lines ran twice.
type ledger struct {
	mu sync.Mutex // protects following (one line at a time, in order)
	f  *os.File
}

// ledgerLine is one execution.
type ledgerLine struct {
	id      string
	attempt int
	inc     string
}

// openLedger opens path for appending, first cutting a torn last line
// (none is expected from a SIGKILL, which does not tear a write, but a
// machine crash may leave one) so the next line starts on its own.
func openLedger(path string) (*ledger, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if n := bytes.LastIndexByte(b, '\n') + 1; n < len(b) {
		if err := os.Truncate(path, int64(n)); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &ledger{f: f}, nil
}

// add appends one execution and syncs it: once add returns, the line is
// there after a kill of the process.
func (l *ledger) add(e ledgerLine) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := fmt.Fprintf(l.f, "%s %d %s\n", e.id, e.attempt, e.inc); err != nil {
		return err
	}
	return l.f.Sync()
}

func (l *ledger) close() error { return l.f.Close() }

// readLedger returns every whole line of the ledger at path (none when
// the file does not exist).
func readLedger(path string) ([]ledgerLine, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []ledgerLine
	r := bufio.NewReader(f)
	for {
		s, err := r.ReadString('\n')
		if err == io.EOF {
			return lines, nil // a last line with no newline is torn: not an execution
		}
		if err != nil {
			return nil, err
		}
		fields := strings.Fields(s)
		if len(fields) != 3 {
			return nil, fmt.Errorf("ledger %s: bad line %q", path, s)
		}
		attempt, err := strconv.Atoi(fields[1])
		if err != nil {
			return nil, fmt.Errorf("ledger %s: bad line %q", path, s)
		}
		lines = append(lines, ledgerLine{id: fields[0], attempt: attempt, inc: fields[2]})
	}
}
