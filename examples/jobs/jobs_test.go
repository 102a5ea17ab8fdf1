package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom-go/mailroom/idempotency"
)

// A torn last line (a crash mid-write) is no execution, and the next
// append starts on a line of its own.
func TestLedgerTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	if err := os.WriteFile(path, []byte("job-00001 1 00000000000000aa\njob-00002 1 0000"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := openLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.add(ledgerLine{id: "job-00003", attempt: 2, inc: "00000000000000bb"}); err != nil {
		t.Fatal(err)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	lines, err := readLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []ledgerLine{{"job-00001", 1, "00000000000000aa"}, {"job-00003", 2, "00000000000000bb"}}
	if len(lines) != len(want) || lines[0] != want[0] || lines[1] != want[1] {
		t.Fatalf("lines %v, want %v", lines, want)
	}
}

// recoverRecords completes a record left running whose effect is in the
// ledger, and leaves running one whose effect is not: after it, the
// guard (RerunInterrupted) runs the second again and not the first.
func TestRecoverRecords(t *testing.T) {
	dir := t.TempDir()
	store, err := idempotency.OpenDir(filepath.Join(dir, "store"), idempotency.DirConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const dead = 0xdead
	for _, key := range []string{jobKey("job-00001", 1), jobKey("job-00002", 1)} {
		if _, claimed, err := store.Claim(key, dead); err != nil || !claimed {
			t.Fatalf("claim %s: %v %v", key, claimed, err)
		}
	}
	path := filepath.Join(dir, "ledger")
	l, err := openLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.add(ledgerLine{id: "job-00001", attempt: 1, inc: "000000000000dead"}); err != nil {
		t.Fatal(err)
	}
	l.close()
	n, err := recoverRecords(store, path)
	if err != nil || n != 1 {
		t.Fatalf("recovered %d, %v; want 1", n, err)
	}
	g := idempotency.NewGuard(store, 0xbeef, idempotency.RerunInterrupted())
	ran := map[string]bool{}
	for _, id := range []string{"job-00001", "job-00002"} {
		reply, err := g.Run(t.Context(), jobKey(id, 1), func(context.Context) ([]byte, error) {
			ran[id] = true
			return []byte("ran"), nil
		})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if id == "job-00001" && !strings.Contains(string(reply), "recovered") {
			t.Fatalf("%s: reply %q, want the recovered record's", id, reply)
		}
	}
	if ran["job-00001"] || !ran["job-00002"] {
		t.Fatalf("ran %v: want job-00002 only", ran)
	}
}

// The demo's 10 poison jobs, 5 of each kind, among the ordinary ones.
func TestJobIDs(t *testing.T) {
	for _, n := range []int{5000, 100, 20} {
		ids, poison := jobIDs(n)
		kinds := map[string]int{}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("n=%d: %s twice", n, id)
			}
			seen[id] = true
			if poison[id] {
				kinds[strings.Split(id, "-")[1]]++
			}
		}
		if len(ids) != n+10 || len(poison) != 10 || kinds["panic"] != 5 || kinds["fail"] != 5 {
			t.Fatalf("n=%d: %d ids, poison %v", n, len(ids), kinds)
		}
	}
}
