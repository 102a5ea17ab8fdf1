// Command cfgmove rewrites Go code written against the flat remote.Config
// (v0.x: Config.MaxFrameSize, Config.HeartbeatInterval, ...) to its
// Limits and Liveness sub-structs (Config.Limits.MaxFrameSize,
// Config.Liveness.HeartbeatInterval). It is the mechanical half of that
// change, kept so it can be re-run on code merged after it.
//
// It rewrites, using type information:
//   - a selector x.F whose x is a remote.Config (or a pointer to one, or a
//     struct embedding one) and F a moved field: x.Limits.F / x.Liveness.F;
//   - a remote.Config composite literal's moved keys, gathered into a
//     Limits: remote.Limits{...} / Liveness: remote.Liveness{...} element
//     (merged into one already there).
//
// Code that no longer type-checks because of the move (code written
// against the old Config, compiled with the new one) is handled too: the
// type of x in x.F still resolves.
//
// Usage, from a module's root (each module of the repository):
//
//	(cd scripts/cfgmove && go build -o /tmp/cfgmove .)
//	/tmp/cfgmove ./...
//	/tmp/cfgmove -tags chaos,scale,race ./...
//
// It edits files in place and runs gofmt on them; it prints each file it
// changed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/token"
	"go/types"
	"log"
	"os"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

const remotePath = "github.com/mailroom-go/mailroom/remote"

// moved is each moved field's sub-struct.
var moved = map[string]string{
	"HeartbeatInterval": "Liveness",
	"HeartbeatMisses":   "Liveness",
	"LinkIdleTimeout":   "Liveness",
	"ForgetNodesAfter":  "Liveness",

	"MaxFrameSize":            "Limits",
	"MaxHandshakes":           "Limits",
	"MaxHandshakesPerIP":      "Limits",
	"MaxInflightPerPeer":      "Limits",
	"MaxInflightBytesPerPeer": "Limits",
	"MaxMessageSize":          "Limits",
	"ReadBudgetBytes":         "Limits",
	"MaxLinksPerPeer":         "Limits",
	"MaxAnnounceBytes":        "Limits",
	"MaxWatchesPerPeer":       "Limits",
	"MaxNodes":                "Limits",
}

// groups in the order their elements are written.
var groups = []string{"Liveness", "Limits"}

type edit struct {
	start, end int
	text       string
}

func main() {
	tags := flag.String("tags", "", "build tags")
	flag.Parse()
	cfg := &packages.Config{
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports | packages.NeedDeps,
		Tests: true,
	}
	if *tags != "" {
		cfg.BuildFlags = []string{"-tags", *tags}
	}
	for pass := 1; ; pass++ {
		if !run(cfg, flag.Args()) {
			return
		}
		if pass == 5 {
			log.Fatal("still rewriting after 5 passes")
		}
	}
}

// run rewrites once and says whether another pass is needed (a rewrite
// nested in another).
func run(cfg *packages.Config, patterns []string) (again bool) {
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		log.Fatal(err)
	}
	edits := map[string][]edit{} // by file name
	seen := map[string]bool{}    // files already done (a package and its test variant share files)
	for _, p := range pkgs {
		for _, f := range p.Syntax {
			name := p.Fset.File(f.Pos()).Name()
			if seen[name] || p.TypesInfo == nil {
				continue
			}
			seen[name] = true
			edits[name] = fileEdits(p, f, &again)
		}
	}
	names := make([]string, 0, len(edits))
	for n := range edits {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if len(edits[n]) == 0 {
			continue
		}
		if err := apply(n, edits[n]); err != nil {
			log.Fatalf("%s: %v", n, err)
		}
		fmt.Println(n)
	}
	return again
}

// isConfig says whether t is remote.Config, a pointer to it, or a struct
// (or pointer to one) that embeds it.
func isConfig(t types.Type) bool {
	if t == nil {
		return false
	}
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Name() == "Config" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == remotePath {
		return true
	}
	if s, ok := t.Underlying().(*types.Struct); ok {
		for i := range s.NumFields() {
			if f := s.Field(i); f.Embedded() && isConfig(f.Type()) {
				return true
			}
		}
	}
	return false
}

func fileEdits(p *packages.Package, f *ast.File, again *bool) []edit {
	fset := p.Fset
	off := func(pos token.Pos) int { return fset.Position(pos).Offset }
	src := func(n ast.Node) string {
		b, _ := os.ReadFile(fset.Position(n.Pos()).Filename)
		return string(b[off(n.Pos()):off(n.End())])
	}
	inRemote := p.PkgPath == remotePath // the package itself, or its in-package tests
	var sels, lits []edit
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			g, ok := moved[x.Sel.Name]
			if !ok || !isConfig(p.TypesInfo.TypeOf(x.X)) {
				return true
			}
			sels = append(sels, edit{off(x.Sel.Pos()), off(x.Sel.Pos()), g + "."})
		case *ast.CompositeLit:
			if !isConfig(p.TypesInfo.TypeOf(x)) {
				return true
			}
			lits = append(lits, litEdits(x, off, src, qualifier(x, inRemote))...)
		}
		return true
	})
	// A selector inside an element a literal edit rewrites (Config{
	// HeartbeatInterval: hb.HeartbeatInterval}) is left to the next pass.
	out := lits
	for _, s := range sels {
		inside := false
		for _, l := range lits {
			if l.start <= s.start && s.start < l.end {
				inside = true
			}
		}
		if inside {
			*again = true
			continue
		}
		out = append(out, s)
	}
	return out
}

// qualifier is the prefix of the sub-struct types in the literal lit:
// "" inside package remote, else the package name lit's type is written
// with.
func qualifier(lit *ast.CompositeLit, inRemote bool) string {
	if se, ok := lit.Type.(*ast.SelectorExpr); ok {
		if id, ok := se.X.(*ast.Ident); ok {
			return id.Name + "."
		}
	}
	if inRemote {
		return ""
	}
	return "remote."
}

func litEdits(lit *ast.CompositeLit, off func(token.Pos) int, src func(ast.Node) string, q string) []edit {
	byGroup := map[string][]string{}
	var idx []int // the moved elements
	existing := map[string]*ast.CompositeLit{}
	for i, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		k, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		if g, ok := moved[k.Name]; ok {
			byGroup[g] = append(byGroup[g], src(kv))
			idx = append(idx, i)
			continue
		}
		for _, g := range groups {
			if k.Name == g {
				if cl, ok := kv.Value.(*ast.CompositeLit); ok {
					existing[g] = cl
				}
			}
		}
	}
	if len(idx) == 0 {
		return nil
	}
	var out []edit
	// Groups with a literal already there get the moved keys appended;
	// the others are written in place of the first moved element.
	var fresh []string
	for _, g := range groups {
		kvs := byGroup[g]
		if len(kvs) == 0 {
			continue
		}
		if cl := existing[g]; cl != nil {
			sep := ", "
			if len(cl.Elts) == 0 {
				sep = ""
			}
			at := off(cl.Rbrace)
			if len(cl.Elts) > 0 {
				at = off(cl.Elts[len(cl.Elts)-1].End())
			}
			out = append(out, edit{at, at, sep + strings.Join(kvs, ", ")})
			continue
		}
		fresh = append(fresh, g+": "+q+g+"{"+strings.Join(kvs, ", ")+"}")
	}
	for j, i := range idx {
		e := lit.Elts[i]
		switch {
		case j == 0 && len(fresh) > 0:
			out = append(out, edit{off(e.Pos()), off(e.End()), strings.Join(fresh, ", ")})
		case i > 0:
			// Delete ", key: value" back to the previous element's end.
			out = append(out, edit{off(lit.Elts[i-1].End()), off(e.End()), ""})
		default:
			// The first element, with nothing written in its place:
			// delete up to the next element.
			end := off(lit.Rbrace)
			if i+1 < len(lit.Elts) {
				end = off(lit.Elts[i+1].Pos())
			}
			out = append(out, edit{off(e.Pos()), end, ""})
		}
	}
	return out
}

func apply(name string, es []edit) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].start > es[j].start })
	last := len(b) + 1
	for _, e := range es {
		if e.end > last {
			return fmt.Errorf("overlapping edits at offset %d", e.start)
		}
		b = append(b[:e.start:e.start], append([]byte(e.text), b[e.end:]...)...)
		last = e.start
	}
	out, err := format.Source(b)
	if err != nil {
		return fmt.Errorf("gofmt: %w\n%s", err, bytes.TrimSpace(b))
	}
	return os.WriteFile(name, out, 0o644)
}
