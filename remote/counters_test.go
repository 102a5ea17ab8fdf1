package remote

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCounterTableCoversStats: Stats.Each yields every numeric field of
// Stats (an array field once per element), in the order of the fields,
// each read from its own field: a field added to Stats without its row,
// or a row reading another field, fails here. Signed fields are levels
// (gauges), unsigned ones counters.
func TestCounterTableCoversStats(t *testing.T) {
	var s Stats
	v := reflect.ValueOf(&s).Elem()
	type slot struct {
		field  string
		value  float64
		signed bool
	}
	var want []slot
	next := 1.0
	set := func(name string, f reflect.Value) {
		switch {
		case f.CanUint():
			f.SetUint(uint64(next))
		case f.CanInt():
			f.SetInt(int64(next))
		default:
			t.Fatalf("Stats.%s is a %s: Stats.Each reports numbers only", name, f.Type())
		}
		want = append(want, slot{name, next, f.CanInt()})
		next++
	}
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		f := v.Field(i)
		if f.Kind() == reflect.Array {
			for j := range f.Len() {
				set(name, f.Index(j))
			}
			continue
		}
		set(name, f)
	}

	var got []slot
	var cs []Counter
	s.Each(func(c Counter, x float64) {
		got = append(got, slot{c.Field, x, c.Kind == KindGauge})
		cs = append(cs, c)
	})
	require.Equal(t, want, got, "one row per value of Stats, in field order, each read from its field; gauges exactly the signed fields")
	require.Len(t, got, 49, "47 fields, MemberEvents 3 elements")

	require.Equal(t, "counter", KindCounter.String())
	require.Equal(t, "gauge", KindGauge.String())
	series := map[string]bool{}
	for _, c := range cs {
		require.NotEmpty(t, c.Help, c.Field)
		require.Contains(t, []CounterKind{KindCounter, KindGauge}, c.Kind, c.Field)
		if c.Metric == "" {
			require.Empty(t, c.Labels, c.Field)
			continue
		}
		id := c.Metric + fmt.Sprint(c.Labels)
		require.False(t, series[id], "%s: series %s twice", c.Field, id)
		series[id] = true
	}
}
