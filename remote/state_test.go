package remote

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The link's transitions refuse what its state rules out, and keep what
// it was before it closed.
func TestLinkStateTransitions(t *testing.T) {
	var s linkState
	if s.String() != "registered" || s.started() || s.refuses() {
		t.Fatalf("new: %v", &s)
	}
	if !s.start() || s.start() {
		t.Fatal("start is once")
	}
	if !s.fence() || s.fence() || !s.fenced() {
		t.Fatal("fence is once")
	}
	if !s.idleCloseLocked() {
		t.Fatal("an open link closes idle")
	}
	if !s.idleClosed() || !s.writeShut() || !s.refuses() || s.closed() {
		t.Fatalf("idle-closing: %v", &s)
	}
	if s.idleCloseLocked() || s.shutWriteLocked() {
		t.Fatal("an idle-closing link closed idle again, or shut again")
	}
	if !s.idleWrittenLocked() || s.idleWrittenLocked() {
		t.Fatal("the idle frame is written once")
	}
	if !s.closeLocked() || s.closeLocked() {
		t.Fatal("close is once")
	}
	if !s.closed() || !s.idleClosed() || !s.fenced() {
		t.Fatalf("closed lost what it was: %v", &s)
	}
	if got := s.String(); got != "started|fenced|write-shut|idle-closed|closed" {
		t.Fatalf("String: %q", got)
	}

	var g linkState
	g.start()
	g.saidGoodbye(false)
	g.saidGoodbye(true) // the first goodbye stands
	if g.goodbye() != goodbyeUnclean || !g.refuses() || g.writeShut() {
		t.Fatalf("after goodbyes: %v", &g)
	}
	if g.idleCloseLocked() {
		t.Fatal("a link told goodbye closed idle")
	}
	if !g.shutWriteLocked() || !g.writeShut() {
		t.Fatal("a goodbye's lingering close shuts the writing side")
	}
	g.closeLocked()
	if g.shutWriteLocked() || g.idleCloseLocked() {
		t.Fatal("a closed link changed its writing side")
	}

	var pi linkState
	pi.saidIdle()
	if !pi.peerIdle() || pi.refuses() {
		t.Fatalf("peer idle: %v", &pi)
	}
}

func TestPeerPhaseOnlyMovesForward(t *testing.T) {
	var ph peerPhase
	if !ph.to(peerLeaving) || ph.to(peerLeaving) || ph != peerLeaving {
		t.Fatalf("leaving: %v", ph)
	}
	if !ph.to(peerGone) || ph.to(peerLeaving) || ph.to(peerGone) || ph != peerGone {
		t.Fatalf("gone: %v", ph)
	}
	var up peerPhase
	if !up.to(peerGone) || up.String() != "gone" {
		t.Fatalf("up to gone: %v", up)
	}
}

// The link's state word and the peer's phase are written only in
// state.go: anywhere else a write would be a flag set beside the
// transitions that check it.
func TestLinkAndPeerStateChangeOnlyInStateGo(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if name == "state.go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(nd ast.Node) bool {
			switch x := nd.(type) {
			case *ast.SelectorExpr:
				// l.state.w: the word itself.
				if inner, ok := x.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "state" && x.Sel.Name == "w" {
					t.Errorf("%s: the link's state word used outside state.go", fset.Position(x.Pos()))
				}
			case *ast.AssignStmt:
				for _, lhs := range x.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "phase" {
						t.Errorf("%s: a peer's phase assigned outside state.go (use phase.to)", fset.Position(sel.Pos()))
					}
				}
			}
			return true
		})
	}
}
