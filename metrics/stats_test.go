package metrics

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mailroom-go/mailroom/remote"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// TestStatFamilies: every value remote.Stats.Each gives a family names
// one of statFamilies, with exactly that family's labels, and every
// family has a value.
func TestStatFamilies(t *testing.T) {
	used := map[string]bool{}
	remote.Stats{}.Each(func(c remote.Counter, _ float64) {
		if c.Metric == "" {
			return
		}
		f, ok := statFamilies[c.Metric]
		require.True(t, ok, "Stats.%s: family %s unknown to metrics", c.Field, c.Metric)
		require.ElementsMatch(t, f.labels, slices.Collect(maps.Keys(c.Labels)), "Stats.%s: the labels of %s", c.Field, c.Metric)
		used[c.Metric] = true
	})
	for name := range statFamilies {
		require.True(t, used[name], "family %s has no value of remote.Stats", name)
	}
}

// TestStatsSeries: the series read from remote.Stats are the ones
// exported before the table, each with its field's value and type.
func TestStatsSeries(t *testing.T) {
	var st remote.Stats
	v := reflect.ValueOf(&st).Elem()
	n := uint64(1)
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.Array:
			for j := range f.Len() {
				f.Index(j).SetUint(n)
				n++
			}
		case f.CanUint():
			f.SetUint(n)
		case f.CanInt():
			f.SetInt(int64(n))
		}
		n++
	}
	g := func(x int64) string { return "gauge " + fmt.Sprint(x) }
	c := func(x uint64) string { return "counter " + fmt.Sprint(x) }
	want := map[string]string{
		"mailroom_remote_peers{}":                                             g(int64(st.Peers)),
		`mailroom_remote_frames_total{direction="out"}`:                       c(st.FramesOut),
		`mailroom_remote_frames_total{direction="in"}`:                        c(st.FramesIn),
		`mailroom_remote_bytes_total{direction="out"}`:                        c(st.BytesOut),
		`mailroom_remote_bytes_total{direction="in"}`:                         c(st.BytesIn),
		`mailroom_remote_messages_sent_total{op="send",path="native"}`:        c(st.SendsNative),
		`mailroom_remote_messages_sent_total{op="send",path="pooled"}`:        c(st.SendsPooled),
		`mailroom_remote_messages_sent_total{op="call",path="native"}`:        c(st.CallsNative),
		`mailroom_remote_messages_sent_total{op="call",path="pooled"}`:        c(st.CallsPooled),
		"mailroom_remote_messages_received_total{}":                           c(st.Received),
		"mailroom_remote_messages_delivered_total{}":                          c(st.Delivered),
		`mailroom_remote_replies_total{path="native"}`:                        c(st.RepliesNative),
		`mailroom_remote_replies_total{path="pooled"}`:                        c(st.RepliesPooled),
		`mailroom_remote_replies_total{path="dropped"}`:                       c(st.RepliesDropped),
		"mailroom_remote_late_replies_total{}":                                c(st.LateReplies),
		"mailroom_remote_heartbeats_missed_total{}":                           c(st.HeartbeatsMissed),
		`mailroom_remote_liveness_verdicts_total{verdict="link_silent"}`:      c(st.LinksSilent),
		`mailroom_remote_liveness_verdicts_total{verdict="link_stalled"}`:     c(st.LinksStalled),
		`mailroom_remote_liveness_verdicts_total{verdict="link_idle"}`:        c(st.LinksIdleClosed),
		`mailroom_remote_liveness_verdicts_total{verdict="incarnation_gone"}`: c(st.PeersGone),
		"mailroom_remote_failed_by_liveness_total{}":                          c(st.FailedByLiveness),
		"mailroom_remote_inflight_calls{}":                                    g(st.Inflight),
		`mailroom_remote_bad_input_total{kind="frame"}`:                       c(st.BadFrames),
		`mailroom_remote_bad_input_total{kind="message"}`:                     c(st.BadMessages),
		`mailroom_remote_bad_input_total{kind="handshake"}`:                   c(st.HandshakeFailures),
		"mailroom_remote_dropped_unsent_total{}":                              c(st.DroppedUnsent),
		`mailroom_remote_refused_total{limit="links"}`:                        c(st.LinksRefused),
		`mailroom_remote_refused_total{limit="handshakes"}`:                   c(st.HandshakesShed),
		`mailroom_remote_refused_total{limit="announces"}`:                    c(st.AnnouncesRefused),
		`mailroom_remote_refused_total{limit="watches"}`:                      c(st.WatchesRefused),
		"mailroom_discovery_members{}":                                        g(int64(st.Members)),
		`mailroom_discovery_events_total{type="up"}`:                          c(st.MemberEvents[0]),
		`mailroom_discovery_events_total{type="updated"}`:                     c(st.MemberEvents[1]),
		`mailroom_discovery_events_total{type="down"}`:                        c(st.MemberEvents[2]),
	}

	ch := make(chan prometheus.Metric, 100)
	collectStats(ch, st)
	close(ch)
	got := map[string]string{}
	for m := range ch {
		var pb dto.Metric
		require.NoError(t, m.Write(&pb))
		var ls []string
		for _, l := range pb.GetLabel() {
			ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		sort.Strings(ls)
		name := fqName(m.Desc())
		key := name + "{" + strings.Join(ls, ",") + "}"
		require.NotContains(t, got, key, "one series each")
		switch {
		case pb.Counter != nil:
			got[key] = c(uint64(pb.Counter.GetValue()))
		case pb.Gauge != nil:
			got[key] = g(int64(pb.Gauge.GetValue()))
		}
	}
	require.Equal(t, want, got)
}

// fqName is a Desc's family name, from its String form
// (Desc{fqName: "name", ...}).
func fqName(d *prometheus.Desc) string {
	s := d.String()
	_, s, _ = strings.Cut(s, `fqName: "`)
	s, _, _ = strings.Cut(s, `"`)
	return s
}
