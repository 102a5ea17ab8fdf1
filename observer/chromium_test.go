package observer

import (
	"testing"

	"github.com/mailroom-go/mailroom/internal/testing/testutil"
)

// chromium finds headless Chromium (testutil.Chromium: skips without
// one, fails under CI=true).
func chromium(t *testing.T) string {
	t.Helper()
	return testutil.Chromium(t)
}

// runChromium runs headless Chromium once (testutil.RunChromium).
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	return testutil.RunChromium(t, bin, args...)
}
