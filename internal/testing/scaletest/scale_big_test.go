//go:build scale

package scaletest

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/internal/testing/consultest"
)

var (
	flagSizes = flag.String("scale.sizes", "8,16,32", "cluster sizes to run, comma-separated")
	flagKill  = flag.Int("scale.kill", 4, "nodes SIGKILLed at once and restarted")
	flagDoc   = flag.String("scale.doc", "", "write docs/SCALE.md here (empty: do not)")
	flagJSON  = flag.String("scale.json", "", "write every run's Result here as JSON")
	flagLoad  = flag.Duration("scale.load", 5*time.Second, "how long the load runs before the kill and after the restart")
	flagPools = flag.String("scale.pools", "lazy,eager", "proxy pool modes to run at every size, comma-separated")
)

// TestScale runs the scale test at every size of -scale.sizes and prints
// one summary line per size.
func TestScale(t *testing.T) {
	addr := consultest.Addr(t)
	var runs []Result
	for _, mode := range strings.Split(*flagPools, ",") {
		for _, f := range strings.Split(*flagSizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 2 {
				t.Fatalf("-scale.sizes: bad size %q", f)
			}
			if mode != "lazy" && mode != "eager" {
				t.Fatalf("-scale.pools: bad mode %q", mode)
			}
			res, err := Run(Config{
				Nodes: n, Targets: 4, Kill: min(*flagKill, n/2), Lazy: mode == "lazy",
				Load:    Load{CallsPerSec: 10, RequestsPerSec: 10, SendsPerSec: 50, Holders: 2},
				Consul:  addr,
				Service: serviceName(mode + strconv.Itoa(n)),
				Dir:     t.TempDir(),
				Seed:    uint64(n),
				LoadFor: *flagLoad,
				Logf:    t.Logf,
			})
			if err != nil {
				t.Fatalf("%d nodes: %v", n, err)
			}
			fmt.Println(res.Line())
			runs = append(runs, res)
			if res.Hung != 0 || res.WrongIncarnation != 0 {
				t.Errorf("%d nodes: hung=%d wrong_incarnation=%d", n, res.Hung, res.WrongIncarnation)
			}
			if len(res.Unexpected) != 0 {
				t.Logf("%d nodes: unexpected errors: %q", n, res.Unexpected)
			}
		}
	}
	if *flagJSON != "" {
		b, _ := json.MarshalIndent(runs, "", "  ")
		if err := os.MkdirAll(filepath.Dir(*flagJSON), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*flagJSON, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if *flagDoc != "" && !t.Failed() {
		if err := WriteDoc(*flagDoc, runs, "make test-scale"); err != nil {
			t.Fatal(err)
		}
	}
}
