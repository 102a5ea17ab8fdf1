package remote

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A peer's phase and a slot's marks change only in state.go, by the
// core's transitions (remote/internal/peers/word.go); a link's word has
// no fields outside the core, so only its transitions change it. This
// walks remote's sources and names any other file that assigns a phase
// or marks field, takes its address, or calls a transition on one.
func TestStateChangesOnlyInStateGo(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var bad []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "state.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		stateField := func(e ast.Expr) bool {
			sel, ok := e.(*ast.SelectorExpr)
			return ok && (sel.Sel.Name == "phase" || sel.Sel.Name == "marks")
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, lhs := range n.Lhs {
					if stateField(lhs) {
						bad = append(bad, fset.Position(n.Pos()).String()+": assigns "+lhs.(*ast.SelectorExpr).Sel.Name)
					}
				}
			case *ast.UnaryExpr:
				if n.Op == token.AND && stateField(n.X) {
					bad = append(bad, fset.Position(n.Pos()).String()+": takes the address of "+n.X.(*ast.SelectorExpr).Sel.Name)
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && stateField(sel.X) {
					switch sel.Sel.Name {
					case "Leave", "End", "List", "Relist", "Pin", "Keep":
						bad = append(bad, fset.Position(n.Pos()).String()+": calls "+sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
	require.Empty(t, bad, "state changed outside state.go")
}
