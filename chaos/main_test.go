//go:build !chaos

package chaos

import (
	"testing"

	"go.uber.org/goleak"
)

// Without the chaos tag only the chart's tests run; the scenarios'
// TestMain (harness_test.go) is behind the tag.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
