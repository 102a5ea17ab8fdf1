package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/examples/examplepb"
	"github.com/mailroom-go/mailroom/patterns"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
)

const cookie = "patterns-demo-cookie"

func main() {
	if name := os.Getenv("PATTERNS_CHILD"); name != "" {
		child(name)
		return
	}
	if err := parent(); err != nil {
		fmt.Fprintln(os.Stderr, "patterns:", err)
		os.Exit(1)
	}
}

// register installs the demo's functions; every node has the same ones,
// and each behaves according to the node it runs on.
func register(sys *actor.System) error {
	node := sys.Name()
	var invalidations atomic.Int64
	delay := map[string]time.Duration{"a": 60 * time.Millisecond, "b": 10 * time.Millisecond, "c": 150 * time.Millisecond}
	fns := map[string]actor.Handler{
		// whoami answers with the node's name.
		"whoami": func(context.Context, proto.Message) (proto.Message, error) {
			return &examplepb.Echo{Text: "hello from " + node}, nil
		},
		// status takes a node-specific time, to show arrival order.
		"status": func(ctx context.Context, _ proto.Message) (proto.Message, error) {
			select {
			case <-time.After(delay[node]):
				return &examplepb.Echo{Text: fmt.Sprintf("up, answered after %v", delay[node])}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		// prepare is refused by c.
		"prepare": func(context.Context, proto.Message) (proto.Message, error) {
			if node == "c" {
				return nil, actor.Reject("locked", "the record is locked on c")
			}
			return &examplepb.Echo{Text: "prepared on " + node}, nil
		},
		// flaky rejects on a, crashes on b and works on c.
		"flaky": func(context.Context, proto.Message) (proto.Message, error) {
			switch node {
			case "a":
				return nil, actor.Reject("busy", "a is busy")
			case "b":
				panic("b has a bug")
			}
			return &examplepb.Echo{Text: "c did it"}, nil
		},
		// invalidate counts; invalidations says how many arrived.
		"invalidate": func(context.Context, proto.Message) (proto.Message, error) {
			invalidations.Add(1)
			return nil, nil
		},
		"invalidations": func(context.Context, proto.Message) (proto.Message, error) {
			return &examplepb.Echo{N: invalidations.Load()}, nil
		},
	}
	if err := sys.RegisterTypes(&examplepb.Echo{}); err != nil {
		return err
	}
	for name, h := range fns {
		if err := sys.Register(name, h); err != nil {
			return err
		}
	}
	return nil
}

// child runs node name until its parent closes stdin.
func child(name string) {
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	check(err)
	check(register(sys))
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: cookie})
	check(err)
	fmt.Println(n.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = sys.Stop(ctx)
}

// startChild starts node name and returns its address and a function
// that stops it and waits.
func startChild(name string) (string, func(), error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PATTERNS_CHILD="+name)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = in.Close(); _ = cmd.Wait() }
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		stop()
		return "", nil, fmt.Errorf("node %s did not start: %w", name, err)
	}
	return strings.TrimSpace(addr), stop, nil
}

func parent() error {
	sys, err := actor.Start(actor.Config{Name: "a", Logger: actor.DiscardLogger()})
	if err != nil {
		return err
	}
	defer sys.Stop(context.Background())
	if err := register(sys); err != nil {
		return err
	}
	node, err := remote.Start(context.Background(), sys, remote.Config{Cookie: cookie})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"b", "c"} {
		addr, stop, err := startChild(name)
		if err != nil {
			return err
		}
		defer stop()
		if err := node.Connect(ctx, name, addr); err != nil {
			return err
		}
	}
	pt, err := patterns.Start(sys)
	if err != nil {
		return err
	}
	return demo(ctx, pt)
}

func demo(ctx context.Context, pt *patterns.Patterns) error {
	arg := &examplepb.Echo{}
	all := []string{"a", "b", "c"}

	title("CallOne [b c a] whoami: the local node is tried first")
	showOne(pt.CallOne(ctx, []string{"b", "c", "a"}, "whoami", arg))
	title("CallOne [b c] flaky: one at a time in random order until one succeeds")
	showOne(pt.CallOne(ctx, []string{"b", "c"}, "flaky", arg))
	title("CallOne [a b] flaky: every node failed")
	showOne(pt.CallOne(ctx, []string{"a", "b"}, "flaky", arg))

	title("CallAny [b c a] status: local first and alone; on success cast to b and c")
	showOne(pt.CallAny(ctx, []string{"b", "c", "a"}, "status", arg))
	title("CallAny [b c] status: in parallel, the fastest wins")
	showOne(pt.CallAny(ctx, []string{"b", "c"}, "status", arg))
	title("CallAny [a b c zz] flaky: local rejected, then b and c in parallel (zz skipped)")
	showOne(pt.CallAny(ctx, []string{"a", "b", "c", "zz"}, "flaky", arg))
	title("CallAny [zz] whoami with UnreachableIsError")
	showOne(pt.CallAny(ctx, []string{"zz"}, "whoami", arg, patterns.UnreachableIsError()))

	title("CallAll [a b c] status: every node, in arrival order")
	showAll(pt.CallAll(ctx, all, "status", arg))
	title("CallAll [a b c] prepare: the first rejection decides")
	showAll(pt.CallAll(ctx, all, "prepare", arg))
	title("CallAll [a b zz] whoami: zz skipped")
	showAll(pt.CallAll(ctx, []string{"a", "b", "zz"}, "whoami", arg))
	title("CallAll [a b zz] whoami with UnreachableIsError: zz vetoes")
	showAll(pt.CallAll(ctx, []string{"a", "b", "zz"}, "whoami", arg, patterns.UnreachableIsError()))

	title("CallAllWait [a b c zz] flaky: everyone's answer, never fails")
	replies, rejects, err := pt.CallAllWait(ctx, []string{"a", "b", "c", "zz"}, "flaky", arg)
	if err != nil {
		return err
	}
	for _, r := range replies {
		fmt.Printf("  reply   %-2s %s\n", r.Node, r.Value.(*examplepb.Echo).Text)
	}
	for _, r := range rejects {
		fmt.Printf("  reject  %-2s %s\n", r.Node, reason(r.Err))
	}

	title("CastOne [b c] invalidate, CastAll [a b c] invalidate")
	chosen, err := pt.CastOne([]string{"b", "c"}, "invalidate", arg)
	if err != nil {
		return err
	}
	fmt.Printf("  CastOne chose %s\n", chosen)
	pt.CastAll(all, "invalidate", arg)
	want := map[string]int64{"a": 1, "b": 1, "c": 1}
	want[chosen]++
	// Casts are not waited for: poll until every node has counted them.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		got, _, err := pt.CallAllWait(ctx, all, "invalidations", arg)
		if err != nil {
			return err
		}
		if counted(got, want) {
			for _, r := range got {
				fmt.Printf("  %s has %d invalidations\n", r.Node, r.Value.(*examplepb.Echo).N)
			}
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline:
			return fmt.Errorf("the casts were not all counted within 10s: %v", got)
		}
	}
}

func counted(got []patterns.Result, want map[string]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for _, r := range got {
		if r.Value.(*examplepb.Echo).N != want[r.Node] {
			return false
		}
	}
	return true
}

func title(s string) { fmt.Printf("\n%s\n", s) }

func showOne(r patterns.Result, err error) {
	if err != nil {
		showErr(err)
		return
	}
	fmt.Printf("  %s answered: %s\n", r.Node, text(r.Value))
}

func showAll(rs []patterns.Result, err error) {
	if err != nil {
		showErr(err)
		return
	}
	for _, r := range rs {
		fmt.Printf("  %-2s %s\n", r.Node, text(r.Value))
	}
}

func showErr(err error) {
	var af *patterns.AllFailedError
	var ne patterns.NodeError
	switch {
	case errors.As(err, &af):
		fmt.Printf("  every node failed (%d counted):\n", len(af.Errors))
		for _, e := range af.Errors {
			fmt.Printf("    %-2s %s\n", e.Node, reason(e.Err))
		}
	case errors.As(err, &ne):
		fmt.Printf("  failed on %s: %s\n", ne.Node, reason(ne.Err))
	default:
		fmt.Printf("  error: %v\n", err)
	}
}

// reason says what a node's failure was, briefly.
func reason(err error) string {
	var re *actor.RemoteError
	var pe *actor.PanicError
	switch {
	case errors.As(err, &re):
		return fmt.Sprintf("rejected [%s]: %s", re.Code, re.Message)
	case errors.As(err, &pe):
		return fmt.Sprintf("crashed: %v", pe.Value)
	case patterns.IsUnreachable(err):
		return "unreachable"
	}
	return err.Error()
}

func text(m proto.Message) string {
	if e, ok := m.(*examplepb.Echo); ok {
		return e.Text
	}
	return fmt.Sprintf("%T", m)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "patterns:", err)
		os.Exit(1)
	}
}
