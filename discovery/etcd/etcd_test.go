package etcd

import (
	"testing"

	"github.com/mailroom-go/mailroom/discovery/discoverytest"
)

// The shared conformance suite, the Consul provider's tests, against a
// real etcd.

func TestDiscover(t *testing.T)        { discoverytest.Discover(t, newEnv(t).harness()) }
func TestFrozenNode(t *testing.T)      { discoverytest.FrozenNode(t, newEnv(t).harness()) }
func TestCrashAndRestart(t *testing.T) { discoverytest.CrashAndRestart(t, newEnv(t).harness()) }

// TestWatchResume: every watch is cut and etcd's history compacted past
// what it saw; each relists, nobody is reported down, and the watches
// carry on.
func TestWatchResume(t *testing.T) { discoverytest.WatchResume(t, newEnv(t).harness()) }
