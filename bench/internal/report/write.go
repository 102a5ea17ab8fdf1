package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
)

// WriteJSON writes res to path (indented, trailing newline).
func WriteJSON(res *Result, path string) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, append(b, '\n'))
}

// ReadJSON reads a result. Results written before issue 13's targets
// carried them as an object of ratios: those are dropped (Rerender
// computes them again), and their points are writer actors with one
// receiver each.
func ReadJSON(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type plain Result
	var r Result
	aux := struct {
		*plain
		Targets json.RawMessage `json:"targets"`
	}{plain: (*plain)(&r)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(aux.Targets); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &r.Targets); err != nil {
			return nil, err
		}
	}
	for i := range r.Points {
		r.Points[i].normalize()
	}
	for i := range r.Rounds {
		r.Rounds[i].normalize()
	}
	return &r, nil
}

// Finish computes what a result derives from its rounds: the median
// points, the targets, the memory per writer and the notes.
func Finish(res *Result) {
	res.Points = Medians(res.Rounds)
	res.Targets = ComputeTargets(res)
	res.Memory = ComputeMemory(res.Points)
	res.Notes = Notes()
}

// WriteAll writes <dir>/<name>.json, <name>.md and the plots, and returns
// the files written.
func WriteAll(res *Result, dir string) ([]string, error) {
	var files []string
	jp := filepath.Join(dir, res.Name+".json")
	if err := WriteJSON(res, jp); err != nil {
		return nil, err
	}
	files = append(files, jp)
	plots := Plots(res)
	for _, p := range plots {
		path := filepath.Join(dir, p.File)
		if err := writeFile(path, p.SVG); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	mp := filepath.Join(dir, res.Name+".md")
	var md bytes.Buffer
	md.WriteString("# mailroom bench: " + res.Name + "\n\n")
	Markdown(&md, res, plots, "")
	if err := writeFile(mp, md.Bytes()); err != nil {
		return files, err
	}
	return append(files, mp), nil
}

// writeFile writes through a temporary file, so a reader never sees half
// a file.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
