package main

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestMain makes the test binary a demo node when the demo starts it as
// one (the demo runs os.Args[0] for its nodes).
func TestMain(m *testing.M) {
	if name := os.Getenv(envNode); name != "" {
		if err := runNode(name, os.Getenv(envSeeds), os.Getenv(envDir)); err != nil {
			fmt.Fprintf(os.Stderr, "grains: node %s: %v\n", name, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestDemo runs the demo, smaller and shorter: three node processes, a
// SIGKILL under load, and every balance checked against what the
// clients were told (run returns false on any inconsistency, or when
// the accounts that moved are not exactly the killed node's).
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three processes under load for about 5 s")
	}
	ok, err := run(opts{accounts: 60, cold: 6, clients: 4, before: 1500 * time.Millisecond, after: 2500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("the demo found an inconsistency (see its output)")
	}
}
