package observer

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"
)

// Panel is an extra panel of the page, given in Options.Panels by a
// package the observer does not know: the package imports observer to
// build one, the observer never imports it. The page draws a panel's
// tables after the built-in panels; its data is also served as JSON at
// /api/panels/{Name} (every panel at /api/panels, and in /api/snapshot
// under "panels").
//
// Data is called once per snapshot (so at most once per
// Options.MinInterval, whatever the number of clients), on the goroutine
// of the request that takes the snapshot, one panel after the other and
// never concurrently with itself. Its ctx ends after Options.TreeTimeout:
// Data must return by then, since the snapshot waits for it. It must
// change nothing (the observer is read-only) and hold no lock a message
// path needs for long. An error, or a panic, is shown in place of the
// panel's tables; the other panels are unaffected.
//
// What the page shows is bounded whatever Data returns: at most
// maxPanelTables tables per panel, maxPanelColumns columns and
// maxPanelRows rows per table, maxPanelCell bytes per cell; the rows cut
// are added to Table.Left, which the page shows. Cells are text, drawn as
// text (never parsed as HTML): format numbers and incarnations as the
// reader should see them.
type Panel struct {
	// Name is the panel's title and the last segment of its endpoint's
	// path. Give each panel its own; an empty one is "panel N" (N its
	// index in Options.Panels, from 1), and of two panels with one name
	// only the first has the endpoint.
	Name string
	// Data returns what the panel shows now.
	Data func(ctx context.Context) (PanelData, error)
}

// PanelData is what a panel shows: its tables, drawn in order.
type PanelData struct {
	Tables []Table `json:"tables"`
}

// Table is a generic table: an optional title, the column headers and the
// rows, each a cell per column (a shorter row is padded with empty cells,
// a longer one cut).
type Table struct {
	Title   string     `json:"title,omitempty"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	// Left is how many rows are not listed: those the panel left out
	// itself, plus those the observer cut at maxPanelRows.
	Left int `json:"left,omitempty"`
}

// PanelView is one extra panel in a snapshot: its data, or the error
// that took its place.
type PanelView struct {
	Name   string  `json:"name"`
	Tables []Table `json:"tables"`
	Err    string  `json:"err,omitempty"`
	Took   string  `json:"took"`
}

const (
	// maxPanels bounds the extra panels shown (Options.Panels past it are
	// left out, and Snapshot.PanelsLeft says how many).
	maxPanels       = 32
	maxPanelTables  = 16
	maxPanelColumns = 32
	maxPanelRows    = 500
	maxPanelCell    = 512 // bytes
)

// panelName is the name panel i (from 0) is shown under.
func panelName(p Panel, i int) string {
	if p.Name == "" {
		return fmt.Sprintf("panel %d", i+1)
	}
	return cut(p.Name)
}

// panels asks every extra panel for its data, in order.
func (o *observer) panels(ctx context.Context) ([]PanelView, int) {
	ps := o.opts.Panels
	left := 0
	if len(ps) > maxPanels {
		left = len(ps) - maxPanels
		ps = ps[:maxPanels]
	}
	out := make([]PanelView, 0, len(ps))
	for i, p := range ps {
		out = append(out, o.panel(ctx, p, panelName(p, i)))
	}
	return out, left
}

// panel asks one panel for its data and applies the bounds.
func (o *observer) panel(ctx context.Context, p Panel, name string) (v PanelView) {
	ctx, cancel := context.WithTimeout(ctx, o.opts.TreeTimeout)
	defer cancel()
	start := time.Now()
	v = PanelView{Name: name, Tables: []Table{}}
	defer func() {
		if r := recover(); r != nil {
			v.Tables, v.Err = []Table{}, fmt.Sprintf("observer: panel %q panicked: %v", name, r)
		}
		v.Took = time.Since(start).Round(time.Microsecond).String()
	}()
	if p.Data == nil {
		v.Err = fmt.Sprintf("observer: panel %q has no Data function", name)
		return v
	}
	d, err := p.Data(ctx)
	if err != nil {
		v.Err = cut(err.Error())
		return v
	}
	tables := d.Tables
	if len(tables) > maxPanelTables {
		tables = tables[:maxPanelTables]
		v.Err = fmt.Sprintf("observer: %d more tables not shown (at most %d per panel)", len(d.Tables)-maxPanelTables, maxPanelTables)
	}
	for _, t := range tables {
		v.Tables = append(v.Tables, boundTable(t))
	}
	return v
}

// boundTable copies t within the bounds: columns, rows, cell sizes, every
// row as wide as the columns.
func boundTable(t Table) Table {
	out := Table{Title: cut(t.Title), Left: max(t.Left, 0)}
	cols := t.Columns[:min(len(t.Columns), maxPanelColumns)]
	out.Columns = make([]string, len(cols))
	for i, c := range cols {
		out.Columns[i] = cut(c)
	}
	rows := t.Rows
	if len(rows) > maxPanelRows {
		out.Left += len(rows) - maxPanelRows
		rows = rows[:maxPanelRows]
	}
	out.Rows = make([][]string, len(rows))
	for i, r := range rows {
		row := make([]string, len(cols))
		for j := range min(len(r), len(cols)) {
			row[j] = cut(r[j])
		}
		out.Rows[i] = row
	}
	return out
}

// cut shortens s to maxPanelCell bytes, on a rune boundary, marking the
// cut with an ellipsis.
func cut(s string) string {
	if len(s) <= maxPanelCell {
		return s
	}
	const ellipsis = "…"
	n := maxPanelCell - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}
