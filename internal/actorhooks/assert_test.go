package actorhooks

import (
	"reflect"
	"strings"
	"testing"
)

// The hooks.Actor that package actor set is the struct funcs aliases:
// the assertion at init held (this binary started), and it kept every
// function.
func TestActorSetEveryHook(t *testing.T) {
	v := reflect.ValueOf(fns).Elem()
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			t.Errorf("hook %s is nil", v.Type().Field(i).Name)
		}
	}
}

// A struct that parts from funcs is named where it parts, so whoever adds
// a hook on one side only sees which at init.
func TestMismatchNamesTheField(t *testing.T) {
	want := reflect.TypeFor[*funcs]()
	cases := []struct {
		got  any
		says string
	}{
		{42, "not a pointer to a struct"},
		{&struct{ SetTransport func() }{}, "field 0 is SetTransport func() in actor's"},
		{&struct {
			SetTransport func(int)
		}{}, "field 0 is SetTransport func(int)"},
	}
	for _, c := range cases {
		if got := mismatch(reflect.TypeOf(c.got), want); !strings.Contains(got, c.says) {
			t.Errorf("mismatch(%T) = %q, want it to say %q", c.got, got, c.says)
		}
	}
	// One field short: the missing one is named.
	fs := make([]reflect.StructField, want.Elem().NumField()-1)
	for i := range fs {
		fs[i] = want.Elem().Field(i)
	}
	short := reflect.PointerTo(reflect.StructOf(fs))
	last := want.Elem().Field(len(fs)).Name
	if got := mismatch(short, want); !strings.Contains(got, last+", is missing") {
		t.Errorf("mismatch(one short) = %q, want it to name %s", got, last)
	}
	if got := mismatch(want, want); !strings.Contains(got, "fields match") {
		t.Errorf("mismatch(same) = %q", got)
	}
}
