package observer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPanelExtension: extra panels are asked once per snapshot and shown
// in order, each at its own endpoint; an error, a panic or a missing Data
// takes the place of that panel's tables only; what a panel returns is
// cut to the bounds, and says how much was cut.
func TestPanelExtension(t *testing.T) {
	a := startNode(t, "a")
	calls := 0
	long := strings.Repeat("é", maxPanelCell) // 2 bytes a rune: cut on a rune boundary
	rows := make([][]string, maxPanelRows+7)
	for i := range rows {
		rows[i] = []string{fmt.Sprint(i), "x", "extra cell"}
	}
	srv := httptest.NewServer(Handler(a.n, Options{Panels: []Panel{
		{Name: "grains", Data: func(ctx context.Context) (PanelData, error) {
			calls++
			if _, ok := ctx.Deadline(); !ok {
				return PanelData{}, errors.New("no deadline")
			}
			return PanelData{Tables: []Table{
				{Title: "kinds", Columns: []string{"kind", "activations"}, Rows: [][]string{{"account", "12"}, {"cart"}}},
				{Columns: []string{"n", long}, Rows: rows, Left: 3},
			}}, nil
		}},
		{Name: "broken", Data: func(context.Context) (PanelData, error) { return PanelData{}, errors.New("cluster: not started") }},
		{Name: "panics", Data: func(context.Context) (PanelData, error) { panic("on purpose") }},
		{Name: "lease owners"},
		{Data: func(context.Context) (PanelData, error) {
			return PanelData{Tables: make([]Table, maxPanelTables+2)}, nil
		}},
	}}))
	t.Cleanup(srv.Close)

	var s Snapshot
	getJSON(t, srv.URL+"/api/snapshot", &s)
	require.Equal(t, 1, calls, "asked once for the snapshot")
	require.Len(t, s.Panels, 5)
	names := []string{}
	for _, p := range s.Panels {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"grains", "broken", "panics", "lease owners", "panel 5"}, names)

	g := s.Panels[0]
	require.Empty(t, g.Err)
	require.Len(t, g.Tables, 2)
	require.Equal(t, Table{Title: "kinds", Columns: []string{"kind", "activations"}, Rows: [][]string{{"account", "12"}, {"cart", ""}}}, g.Tables[0], "a short row padded")
	big := g.Tables[1]
	require.Len(t, big.Rows, maxPanelRows)
	require.Equal(t, 3+7, big.Left, "the panel's own left-out rows plus the observer's cut")
	require.Len(t, big.Rows[0], 2, "a long row cut to the columns")
	require.LessOrEqual(t, len(big.Columns[1]), maxPanelCell)
	require.True(t, strings.HasSuffix(big.Columns[1], "…"))
	require.True(t, strings.HasPrefix(big.Columns[1], "éé"))
	require.NotContains(t, big.Columns[1], "\uFFFD")

	require.Equal(t, "cluster: not started", s.Panels[1].Err)
	require.Empty(t, s.Panels[1].Tables)
	require.Contains(t, s.Panels[2].Err, `panel "panics" panicked: on purpose`)
	require.Contains(t, s.Panels[3].Err, "no Data function")
	require.Len(t, s.Panels[4].Tables, maxPanelTables)
	require.Contains(t, s.Panels[4].Err, "2 more tables not shown")
	require.Equal(t, "a", s.Node.Name, "the rest of the snapshot is there")

	var one PanelView
	getJSON(t, srv.URL+"/api/panels/grains", &one)
	require.Equal(t, "grains", one.Name)
	require.Len(t, one.Tables, 2)
	getJSON(t, srv.URL+"/api/panels/"+url.PathEscape("lease owners"), &one)
	require.Equal(t, "lease owners", one.Name)
	var all []PanelView
	getJSON(t, srv.URL+"/api/panels", &all)
	require.Len(t, all, 5)
	code, body := get(t, srv.URL+"/api/panels/nope")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, string(body), `no panel "nope"`)

	// Past maxPanels the rest are not asked, and the snapshot says so.
	many := make([]Panel, maxPanels+3)
	for i := range many {
		many[i] = Panel{Name: fmt.Sprint(i), Data: func(context.Context) (PanelData, error) { return PanelData{}, nil }}
	}
	o := Handler(a.n, Options{Panels: many}).(*observer)
	s2 := o.snapshot(ctxT(t))
	require.Len(t, s2.Panels, maxPanels)
	require.Equal(t, 3, s2.PanelsLeft)
}
