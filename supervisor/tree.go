package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
)

// Tree is one supervisor as Trees reports it: its configuration, its
// restarts, and its children, those that are supervisors with their own
// Tree.
type Tree struct {
	PID       actor.PID
	Name      string // its registered name, or ""
	Strategy  Strategy
	Intensity int           // restarts allowed within Period
	Period    time.Duration // the intensity window
	// RecentRestarts are the restarts made within the current Period:
	// one more than Intensity and the supervisor gives up.
	RecentRestarts int
	Children       []TreeChild
	// Err is set when the supervisor did not answer (it ended, or it was
	// busy past the ctx given to Trees); the rest is then zero but PID.
	Err error
}

// TreeChild is one child of a Tree.
type TreeChild struct {
	ChildInfo
	// Tree is the child's own tree when it is a running supervisor.
	Tree *Tree
}

// Trees reports every supervision tree on sys, one Tree per top-level
// supervisor (one whose parent is not a supervisor), ordered by PID. Each
// supervisor answers for itself, between the messages it handles, as
// WhichChildren does; supervisors are asked concurrently (at most
// treeAsks at a time), so one that does not answer within ctx is reported
// with Err set while the others still are. Trees changes nothing.
func Trees(ctx context.Context, sys *actor.System) []Tree {
	reg := registryOf(sys)
	roots := reg.roots()
	out := make([]Tree, len(roots))
	w := &treeWalk{ctx: ctx, sys: sys, reg: reg, sem: make(chan struct{}, treeAsks)}
	var wg sync.WaitGroup
	for i, pid := range roots {
		wg.Go(func() { out[i] = w.tree(pid, 0) })
	}
	wg.Wait()
	return out
}

const (
	// maxTreeDepth bounds the recursion of Trees, against a tree built to
	// be deeper than anyone reads.
	maxTreeDepth = 64
	// treeAsks bounds the supervisors Trees asks at once.
	treeAsks = 16
)

// treeWalk is one Trees pass.
type treeWalk struct {
	ctx context.Context
	sys *actor.System
	reg *registry
	sem chan struct{} // a slot per request in flight
}

func (w *treeWalk) ask(pid actor.PID) (any, error) {
	select {
	case w.sem <- struct{}{}:
	case <-w.ctx.Done():
		return nil, w.ctx.Err()
	}
	defer func() { <-w.sem }()
	return w.sys.Request(w.ctx, pid, treeReq{})
}

func (w *treeWalk) tree(pid actor.PID, depth int) Tree {
	v, err := w.ask(pid)
	if err == nil {
		if t, ok := v.(Tree); ok {
			var wg sync.WaitGroup
			for i := range t.Children {
				c := &t.Children[i]
				if c.PID.IsZero() || !w.reg.has(c.PID) {
					continue
				}
				if depth >= maxTreeDepth {
					c.Tree = &Tree{PID: c.PID, Err: errors.New("supervisor: tree deeper than 64 levels: not walked")}
					continue
				}
				wg.Go(func() {
					sub := w.tree(c.PID, depth+1)
					c.Tree = &sub
				})
			}
			wg.Wait()
			return t
		}
		err = fmt.Errorf("answered %T: %w", v, ErrNotSupervisor)
	}
	if errors.Is(err, actor.ErrNoProcess) {
		w.reg.remove(pid) // it ended without its Stopped reaching us
	}
	return Tree{PID: pid, Err: fmt.Errorf("supervisor: tree of %s: %w", pid, err)}
}

// String draws the tree, one line per child, indented by level: a
// supervisor's strategy and recent restarts, each child's ID, PID and
// restart count.
func (t Tree) String() string {
	var b strings.Builder
	t.draw(&b, "")
	return b.String()
}

func (t Tree) draw(b *strings.Builder, indent string) {
	if t.Err != nil {
		fmt.Fprintf(b, "%s%s: %v\n", indent, t.PID, t.Err)
		return
	}
	fmt.Fprintf(b, "%ssupervisor %s", indent, t.PID)
	if t.Name != "" {
		fmt.Fprintf(b, " %q", t.Name)
	}
	fmt.Fprintf(b, " %s, %d/%d restarts in %s\n", t.Strategy, t.RecentRestarts, t.Intensity, t.Period)
	for _, c := range t.Children {
		if c.Tree != nil {
			c.Tree.draw(b, indent+"  ")
			continue
		}
		state := c.PID.String()
		if c.PID.IsZero() {
			state = "not running"
		}
		fmt.Fprintf(b, "%s  %s %s (%s), %d restarts\n", indent, c.ID, state, c.Restart, c.Restarts)
	}
}

// treeReq asks a supervisor for its Tree (children not walked).
type treeReq struct{}

func (s *supervisor) tree(c *actor.Context) Tree {
	t := Tree{
		PID: c.Self(), Name: c.Name(), Strategy: s.spec.Strategy,
		Intensity: s.spec.Intensity, Period: s.spec.Period,
		RecentRestarts: s.restarts.recent(),
	}
	for _, ci := range s.which() {
		t.Children = append(t.Children, TreeChild{ChildInfo: ci})
	}
	return t
}

// registry is the supervisors running on one System, kept on it
// (actorhooks.Value): each adds itself once started and removes itself
// when it stops. Not touched per message: only when a supervisor starts
// or stops, and when Trees reads it.
type registry struct {
	restarts atomic.Uint64 // children restarted by any supervisor on the System

	mu   sync.Mutex              // protects sups
	sups map[actor.PID]actor.PID // supervisor -> its parent (zero for a top-level actor)
}

// Restarts is the number of children restarted on sys, by every
// supervisor that ran there since it started: a counter, for metrics
// (Trees has each child's own count, which goes with the child).
func Restarts(sys *actor.System) uint64 { return registryOf(sys).restarts.Load() }

type registryKey struct{}

func registryOf(sys *actor.System) *registry {
	return actorhooks.Value(sys, registryKey{}, func() any {
		return &registry{sups: make(map[actor.PID]actor.PID)}
	}).(*registry)
}

func (r *registry) add(pid, parent actor.PID) {
	r.mu.Lock()
	r.sups[pid] = parent
	r.mu.Unlock()
}

func (r *registry) remove(pid actor.PID) {
	r.mu.Lock()
	delete(r.sups, pid)
	r.mu.Unlock()
}

func (r *registry) has(pid actor.PID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.sups[pid]
	return ok
}

// roots are the supervisors whose parent is not one, by PID.
func (r *registry) roots() []actor.PID {
	r.mu.Lock()
	var out []actor.PID
	for pid, parent := range r.sups {
		if _, sup := r.sups[parent]; !sup {
			out = append(out, pid)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b actor.PID) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}
