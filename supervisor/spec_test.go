package supervisor

import (
	"errors"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/stretchr/testify/require"
)

func TestSpecValidationNamesTheField(t *testing.T) {
	ok := workerSpec(&recorder{}, "a")
	with := func(f func(*ChildSpec)) ChildSpec { c := ok; f(&c); return c }
	cases := []struct {
		name  string
		spec  Spec
		field string
	}{
		{"strategy", Spec{Strategy: Strategy(7)}, "Strategy"},
		{"intensity", Spec{Intensity: -1}, "Intensity"},
		{"period", Spec{Period: -time.Second}, "Period"},
		{"empty id", Spec{Children: []ChildSpec{with(func(c *ChildSpec) { c.ID = "" })}}, "Children[0].ID"},
		{"nil props", Spec{Children: []ChildSpec{with(func(c *ChildSpec) { c.Props = nil })}}, "Children[0].Props"},
		{"nil producer", Spec{Children: []ChildSpec{with(func(c *ChildSpec) { c.Props = &actor.Props{} })}}, "Children[0].Props.Producer"},
		{"restart", Spec{Children: []ChildSpec{ok, with(func(c *ChildSpec) { c.ID, c.Restart = "b", RestartType(9) })}}, "Children[1].Restart"},
		{"shutdown", Spec{Children: []ChildSpec{with(func(c *ChildSpec) { c.Shutdown = -1 })}}, "Children[0].Shutdown"},
		{"duplicate id", Spec{Children: []ChildSpec{ok, ok}}, "Children[1].ID"},
		{"duplicate name", Spec{Children: []ChildSpec{
			with(func(c *ChildSpec) { c.Name = "n" }),
			with(func(c *ChildSpec) { c.ID, c.Name = "b", "n" }),
		}}, "Children[1].Name"},
	}
	sys := newSystem(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			var se *SpecError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.field, se.Field)
			require.ErrorIs(t, err, ErrInvalidSpec)
			require.ErrorContains(t, err, "supervisor: invalid spec: "+tc.field+" ")

			_, err = Start(sys, tc.spec)
			require.ErrorAs(t, err, &se, "Start validates first")
			require.Equal(t, tc.field, se.Field)
		})
	}
	require.NoError(t, Spec{Children: []ChildSpec{ok}}.Validate())
	require.Zero(t, sys.NumActors())
}

func TestSpawningPropsWithABadSpecFails(t *testing.T) {
	sys := newSystem(t)
	_, err := sys.Spawn(Props(Spec{Intensity: -3}))
	var se *SpecError
	require.ErrorAs(t, err, &se, "Spawn returns the *SpecError itself")
	require.Equal(t, "Intensity", se.Field)
	var pe *actor.PanicError
	require.False(t, errors.As(err, &pe), "a bad spec is not a crash")
}

func TestChildFailingAtInitFailsTheStart(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	bad := ChildSpec{ID: "bad", Props: worker{id: "bad", rec: rec, failStart: func() bool { return true }}.props()}
	_, err := Start(sys, Spec{Children: []ChildSpec{workerSpec(rec, "a"), workerSpec(rec, "b"), bad, workerSpec(rec, "c")}})

	var st *StartError
	require.ErrorAs(t, err, &st)
	require.Equal(t, "bad", st.Child)
	require.ErrorContains(t, err, `supervisor: start child "bad": `)
	require.ErrorContains(t, err, "bad cannot start")
	var pe *actor.PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, []string{
		"a:started", "b:started",
		"bad:stopped",                                        // a crash in Started still gets Stopped
		"b:stopping", "b:stopped", "a:stopping", "a:stopped", // reverse order; c never started
	}, rec.since(0))
	eventually(t, "no actor left", func() bool { return sys.NumActors() == 0 })
}

func TestNestedChildFailingAtInitFailsTheOuterStart(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{}
	bad := ChildSpec{ID: "bad", Props: worker{id: "bad", rec: rec, failStart: func() bool { return true }}.props()}
	_, err := StartNamed(sys, Spec{Children: []ChildSpec{
		workerSpec(rec, "a"),
		Nested("inner", Spec{Children: []ChildSpec{workerSpec(rec, "b"), bad}}),
	}}, "root")

	var st *StartError
	require.ErrorAs(t, err, &st)
	require.Equal(t, "inner", st.Child)
	var innerSt *StartError
	require.True(t, errors.As(st.Reason, &innerSt))
	require.Equal(t, "bad", innerSt.Child)
	require.ErrorContains(t, err, `supervisor: start child "inner": supervisor: start child "bad": `)
	require.Equal(t, []string{"a:started", "b:started", "bad:stopped", "b:stopping", "b:stopped", "a:stopping", "a:stopped"}, rec.since(0))
	eventually(t, "no actor left", func() bool { return sys.NumActors() == 0 })

	_, err = StartNamed(sys, Spec{}, "")
	require.ErrorContains(t, err, "empty name")
}

func TestNestedInvalidSpecFailsTheOuterStart(t *testing.T) {
	sys := newSystem(t)
	_, err := Start(sys, Spec{Children: []ChildSpec{Nested("inner", Spec{Strategy: 42})}})
	var st *StartError
	require.ErrorAs(t, err, &st)
	require.Equal(t, "inner", st.Child)
	var se *SpecError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "Strategy", se.Field)
}

func TestStringers(t *testing.T) {
	require.Equal(t, "one-for-one", OneForOne.String())
	require.Equal(t, "one-for-all", OneForAll.String())
	require.Equal(t, "rest-for-one", RestForOne.String())
	require.Equal(t, "Strategy(9)", Strategy(9).String())
	require.Equal(t, "permanent", Permanent.String())
	require.Equal(t, "transient", Transient.String())
	require.Equal(t, "temporary", Temporary.String())
	require.Equal(t, "RestartType(9)", RestartType(9).String())
}
