package actor

import (
	"testing"
	"time"
)

// FuzzParseCron: no expression makes the parser panic (robfig/cron's
// does on some zone prefixes; parseCron turns that into an error), and
// a parsed one names a time after any other.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/15 9-17 * JAN-MAR MON-FRI", "@every 1h", "@daily",
		"CRON_TZ=Europe/Rome 0 2 * * *", "TZ=", "TZ=UTC", "0 0 30 2 *", "5,10 */2 1-31/3 * 0"} {
		f.Add(s)
	}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		cs, err := parseCron(expr)
		if err != nil {
			return
		}
		if next := cs.s.Next(at); !next.IsZero() && !next.After(at) {
			t.Fatalf("%q: next %v is not after %v", expr, next, at)
		}
	})
}
