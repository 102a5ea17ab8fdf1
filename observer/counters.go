package observer

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/actorstats"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/supervisor"
)

// maxRunning bounds the functions listed in the running-calls rows (the
// busiest first).
const maxRunning = 100

// Counters is the /api/counters answer.
type Counters struct {
	Remote remote.Stats `json:"remote"`
	// The actor system's losses and late answers.
	DeadLetters  uint64           `json:"deadLetters"`
	LateReplies  uint64           `json:"lateReplies"`
	CastFailures uint64           `json:"castFailures"`
	Running      map[string]int64 `json:"running"` // inbound calls running now, by function
	// Failed are the calls and requests made on this node that failed,
	// by outcome (successes are not counted).
	Failed Outcomes `json:"failed"`
	// Table is every counter above, and the actor system's others, one
	// row per value with its labels: what the page draws.
	Table []Counter `json:"table"`
}

// Outcomes count failed calls and requests by actor.Outcome.
type Outcomes struct {
	NotExecuted     uint64 `json:"notExecuted"`
	MayHaveExecuted uint64 `json:"mayHaveExecuted"`
	Executed        uint64 `json:"executed"` // the handler's rejection or panic
}

// Counter is one row of the counters table: one value of a counter or a
// level of the node, told apart from its siblings by its labels.
type Counter struct {
	// Layer is where it is counted: "actor" (the actor system and its
	// supervisors), "calls" (calls and requests made here), "remote"
	// (remote.Stats, Name being its field) or "discovery".
	Layer string `json:"layer"`
	Name  string `json:"name"`
	// Labels tell the values of one name apart, with the label values the
	// metrics use (outcome: actor.Execution.Label; reason: the dead-letter
	// reasons; type: the discovery event types; function).
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
}

// layers are the layers of the remote.Stats fields not in "remote".
var layers = map[string]string{"MemberEvents": "discovery"}

func (o *observer) counters() Counters {
	sys := o.node.System()
	f := actorhooks.FailedOutcomes(sys)
	c := Counters{
		Remote: o.node.Stats(), DeadLetters: sys.DeadLetters(), LateReplies: sys.LateReplies(),
		CastFailures: sys.CastFailures(), Running: o.node.Running(),
		Failed: Outcomes{
			NotExecuted: f[actor.NotExecuted], MayHaveExecuted: f[actor.MayHaveExecuted], Executed: f[actor.Executed],
		},
	}
	c.Table = counterTable(sys, c, f)
	return c
}

// counterTable is c as rows: the actor system's counters, the failed
// calls by outcome, the inbound calls running by function, then every
// value of remote.Stats in its order (remote.Stats.Each; an array field
// one row per element, labelled as the metrics label it).
func counterTable(sys *actor.System, c Counters, failed [3]uint64) []Counter {
	lc := actorhooks.Counters(sys)
	t := []Counter{
		{Layer: "actor", Name: "Actors", Value: float64(sys.NumActors())},
		{Layer: "actor", Name: "Spawns", Value: float64(lc.Spawns)},
		{Layer: "actor", Name: "Restarts", Value: float64(supervisor.Restarts(sys))},
		{Layer: "actor", Name: "Crashes", Value: float64(lc.Crashes)},
	}
	for i, n := range lc.DeadLetters {
		t = append(t, Counter{Layer: "actor", Name: "DeadLetters", Labels: map[string]string{"reason": actorstats.DeadReasonNames[i]}, Value: float64(n)})
	}
	t = append(t,
		Counter{Layer: "actor", Name: "LateReplies", Value: float64(c.LateReplies)},
		Counter{Layer: "actor", Name: "CastFailures", Value: float64(c.CastFailures)},
	)
	for _, o := range []actor.Execution{actor.NotExecuted, actor.MayHaveExecuted, actor.Executed} {
		t = append(t, Counter{Layer: "calls", Name: "Failed", Labels: map[string]string{"outcome": o.Label()}, Value: float64(failed[o])})
	}
	fns := make([]string, 0, len(c.Running))
	for fn := range c.Running {
		fns = append(fns, fn)
	}
	slices.SortFunc(fns, func(a, b string) int {
		return cmp.Or(cmp.Compare(c.Running[b], c.Running[a]), strings.Compare(a, b))
	})
	for _, fn := range fns[:min(len(fns), maxRunning)] {
		t = append(t, Counter{Layer: "calls", Name: "Running", Labels: map[string]string{"function": cut(fn)}, Value: float64(c.Running[fn])})
	}
	return append(t, statsRows(c.Remote)...)
}

// statsRows are the values of st, one row each: the elements of an array
// field (rows of one field, adjacent) have their labels, the others none.
func statsRows(st remote.Stats) []Counter {
	out := make([]Counter, 0, 64)
	labels := make([]map[string]string, 0, 64)
	st.Each(func(c remote.Counter, v float64) {
		out = append(out, Counter{Layer: cmp.Or(layers[c.Field], "remote"), Name: c.Field, Value: v})
		labels = append(labels, c.Labels)
	})
	for i := range out {
		if (i > 0 && out[i-1].Name == out[i].Name) || (i+1 < len(out) && out[i+1].Name == out[i].Name) {
			out[i].Labels = maps.Clone(labels[i])
		}
	}
	return out
}
