package nodename

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The rule as the packages wrote it before they shared this one.
var ruleRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func TestValidIsTheRule(t *testing.T) {
	cases := []string{"", "a", "orders-1", "a.b_c-D9", strings.Repeat("x", 128), strings.Repeat("x", 129),
		"mallory\xff\xfe", "with space", "ünïcode", "a/b", "a\x00", "UPPER", "-", "."}
	for _, c := range cases {
		require.Equal(t, ruleRE.MatchString(c), Valid(c), "%q", c)
	}
}

func FuzzValidIsTheRule(f *testing.F) {
	f.Add("orders-1")
	f.Add("mallory\xff\xfe")
	f.Fuzz(func(t *testing.T, s string) {
		if ruleRE.MatchString(s) != Valid(s) {
			t.Fatalf("%q: the rule says %v", s, ruleRE.MatchString(s))
		}
	})
}

func TestQuoteBoundsWhatItShows(t *testing.T) {
	require.Equal(t, `"orders-1"`, Quote("orders-1"))
	require.Equal(t, `"mallory\xff\xfe"`, Quote("mallory\xff\xfe"))
	long := Quote(strings.Repeat("\xff", 3000))
	require.Less(t, len(long), 300)
	require.Contains(t, long, "(3000 bytes)")
}
