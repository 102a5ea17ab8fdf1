package testing_test

import (
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const module = "github.com/mailroom-go/mailroom"

// harnessUser reports whether pkg may link a harness outside its tests:
// the harnesses themselves, the chaos suite and the public testkit.
func harnessUser(pkg string) bool {
	rel := strings.TrimPrefix(pkg, module)
	for _, p := range []string{"/internal/testing/", "/chaos", "/mailroomtest"} {
		if strings.HasPrefix(rel+"/", p) || strings.HasPrefix(rel, p) {
			return true
		}
	}
	return false
}

// TestRuntimeLinksNoHarness is the rule of the split: no runtime package
// (non-test build) depends on a package under internal/testing. A runtime
// package that starts importing one fails here; move the import to a
// _test.go file or the package under internal/testing.
func TestRuntimeLinksNoHarness(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || harnessUser(f[0]) {
			continue
		}
		checked++
		for _, d := range f[1:] {
			if strings.HasPrefix(d, module+"/internal/testing/") {
				t.Errorf("%s links the harness %s", f[0], d)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d runtime packages; go list found too few, the pattern is wrong", checked)
	}
}
