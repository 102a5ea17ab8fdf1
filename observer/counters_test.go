package observer

import (
	"reflect"
	"testing"

	"github.com/mailroom-go/mailroom/remote"
	"github.com/stretchr/testify/require"
)

// TestStatsRows: every numeric field of remote.Stats is one row, in the
// order of the fields, named by the field with its value, in layer
// "remote" without labels; MemberEvents is one row per event type in
// layer "discovery", labelled as the metrics label it.
func TestStatsRows(t *testing.T) {
	var st remote.Stats
	v := reflect.ValueOf(&st).Elem()
	var want []Counter
	x := 1.0
	for i := range v.NumField() {
		name, f := v.Type().Field(i).Name, v.Field(i)
		switch {
		case name == "MemberEvents":
			for j, typ := range []string{"up", "updated", "down"} {
				f.Index(j).SetUint(uint64(x))
				want = append(want, Counter{Layer: "discovery", Name: name, Labels: map[string]string{"type": typ}, Value: x})
				x++
			}
			continue
		case f.CanUint():
			f.SetUint(uint64(x))
		case f.CanInt():
			f.SetInt(int64(x))
		default:
			t.Fatalf("Stats.%s is not a number", name)
		}
		want = append(want, Counter{Layer: "remote", Name: name, Value: x})
		x++
	}
	require.Equal(t, want, statsRows(st))
}
