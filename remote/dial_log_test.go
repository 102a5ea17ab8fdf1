package remote

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDialFailedAgainListsDistinctErrors: the grouped line names every
// distinct error with its count, most frequent first, not only the last
// one; texts beyond dialLogDistinct are counted as other errors, so a
// peer varying its refusal text cannot grow the record.
func TestDialFailedAgainListsDistinctErrors(t *testing.T) {
	var buf bytes.Buffer
	d := newDialLog(slog.New(slog.NewTextHandler(&buf, nil)), time.Hour)
	refused, timeout := errors.New("connection refused"), errors.New("i/o timeout")
	d.failed("b", "x:1", refused) // logged at once, not counted again
	for range 3 {
		d.failed("b", "x:1", refused)
	}
	d.failed("b", "x:1", timeout)
	d.failed("b", "x:1", timeout)
	for i := range dialLogDistinct + 4 {
		d.failed("b", "x:1", fmt.Errorf("refusal %02d", i))
	}
	d.close()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, buf.String())
	again := lines[1]
	require.Contains(t, again, `msg="dial failed again"`)
	require.Contains(t, again, "times=17")
	require.Contains(t, again, `3× \"connection refused\"; 2× \"i/o timeout\"; 1× \"refusal 00\"`, again)
	require.Contains(t, again, `6× other errors`, "8 distinct texts kept, the other 6 counted")
	require.NotContains(t, again, "refusal 07")
}
