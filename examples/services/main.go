package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/examples/examplepb"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/services"
	"google.golang.org/protobuf/proto"
)

const cookie = "services-demo-cookie"

func main() {
	if spec := os.Getenv("SERVICES_CHILD"); spec != "" {
		child(strings.Fields(spec))
		return
	}
	if err := parent(); err != nil {
		fmt.Fprintln(os.Stderr, "services:", err)
		os.Exit(1)
	}
}

// child runs provider node args[0] with search at version args[1] (or,
// with "maint", the maint service), recording index ids in args[2].
func child(args []string) {
	name, version, dir := args[0], args[1], args[2]
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	check(err)
	check(sys.RegisterTypes(&examplepb.Echo{}))
	n, err := remote.Start(context.Background(), sys, remote.Config{Cookie: cookie})
	check(err)
	svc, err := services.Start(context.Background(), n, services.Config{})
	check(err)
	ctx := context.Background()
	if version == "maint" {
		check(svc.Provide(ctx, maint(name)))
	} else {
		check(svc.Provide(ctx, search(name, services.MustVersion(version), dir)))
	}
	fmt.Println(n.Addr())
	_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until the parent closes stdin
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	check(sys.Stop(sctx)) // graceful: drain, finish running calls, leave
}

// search is the versioned service: 2.2.0 adds suggest.
func search(node string, v services.Version, dir string) services.Service {
	var mu sync.Mutex
	fns := []services.Function{
		{Name: "query", Idempotent: true, Handler: func(_ context.Context, arg proto.Message) (proto.Message, error) {
			q := arg.(*examplepb.Echo).Text
			if q == "" {
				return nil, actor.Reject("empty_query", "a query needs at least one word")
			}
			return &examplepb.Echo{Text: fmt.Sprintf("results for %q", q), From: node + " v" + v.String()}, nil
		}},
		{Name: "index", Handler: func(_ context.Context, arg proto.Message) (proto.Message, error) {
			mu.Lock() // not idempotent: every run is recorded
			defer mu.Unlock()
			f, err := os.OpenFile(filepath.Join(dir, node+".ids"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			_, err = f.WriteString(arg.(*examplepb.Echo).Text + "\n")
			time.Sleep(time.Millisecond) // the work
			return &examplepb.Echo{From: node}, err
		}},
	}
	if !v.Less(services.MustVersion("2.2.0")) {
		fns = append(fns, services.Function{Name: "suggest", Idempotent: true, Handler: func(_ context.Context, arg proto.Message) (proto.Message, error) {
			return &examplepb.Echo{Text: arg.(*examplepb.Echo).Text + "ing", From: node}, nil
		}})
	}
	return services.Service{
		Name: "search", Version: v, Functions: fns,
		Defaults: services.Defaults{Retry: services.RetryPolicy{Budget: 20 * time.Second, Backoff: 5 * time.Millisecond}},
	}
}

// maint has one slow, non-idempotent function, to show a provider dying
// mid-call.
func maint(node string) services.Service {
	return services.Service{Name: "maint", Version: services.MustVersion("1.0.0"), Functions: []services.Function{
		{Name: "rebuild", Handler: func(ctx context.Context, _ proto.Message) (proto.Message, error) {
			select {
			case <-time.After(time.Minute):
				return &examplepb.Echo{From: node}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}},
	}}
}

// proc is a provider process.
type proc struct {
	name string
	cmd  *exec.Cmd
	in   interface{ Close() error }
}

// start runs a provider, links app to it and waits until app knows what
// it provides. Each search provider is started with a version above every
// earlier one's, so "a provider at least this version" is that one.
func start(ctx context.Context, node *remote.Node, svc *services.Services, name, version, dir string) (*proc, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SERVICES_CHILD="+name+" "+version+" "+dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("node %s did not start: %w", name, err)
	}
	if err := node.Connect(ctx, name, strings.TrimSpace(addr)); err != nil {
		return nil, err
	}
	service, want := "maint", services.Major(1)
	if version != "maint" {
		service, want = "search", services.AtLeast(version)
	}
	if _, err := svc.WaitProvider(ctx, service, want); err != nil {
		return nil, err
	}
	return &proc{name: name, cmd: cmd, in: in}, nil
}

// stop stops the provider gracefully and waits for it.
func (p *proc) stop() { _ = p.in.Close(); _ = p.cmd.Wait() }

func parent() error {
	sys, err := actor.Start(actor.Config{Name: "app", Logger: actor.DiscardLogger()})
	if err != nil {
		return err
	}
	defer sys.Stop(context.Background())
	if err := sys.RegisterTypes(&examplepb.Echo{}); err != nil {
		return err
	}
	node, err := remote.Start(context.Background(), sys, remote.Config{Cookie: cookie})
	if err != nil {
		return err
	}
	svc, err := services.Start(context.Background(), node, services.Config{})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "services-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	procs := map[string]*proc{}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for _, nv := range [][2]string{{"search-a1", "2.1.0"}, {"search-b1", "2.1.1"}, {"search-legacy", "1.9.0"}, {"maint-1", "maint"}} {
		p, err := start(ctx, node, svc, nv[0], nv[1], dir)
		if err != nil {
			return err
		}
		procs[nv[0]] = p
	}
	search := svc.Ref("search", services.Major(2))
	q := func(s string) proto.Message { return &examplepb.Echo{Text: s} }

	title("providers of search")
	for _, p := range svc.Providers("search") {
		fmt.Println("  " + p.String())
	}
	title("search ^2.0.0 query: any 2.x provider answers; ^1 reaches the legacy node")
	for range 4 {
		show(search.Call(ctx, "query", q("mailroom")))
	}
	show(svc.Call(ctx, "search", services.Major(1), "query", q("mailroom")))

	title("what failures say")
	show(svc.Call(ctx, "billing", services.Major(1), "charge", q("x"), services.NoRetry()))
	show(svc.Call(ctx, "search", services.Major(3), "query", q("x"), services.NoRetry()))
	show(svc.Call(ctx, "search", services.Major(2), "suggest", q("x"), services.NoRetry()))
	show(search.Call(ctx, "query", q("")))
	rebuild := make(chan error, 1)
	go func() {
		_, err := svc.Call(ctx, "maint", services.Major(1), "rebuild", q("all"))
		rebuild <- err
	}()
	if err := waitFor(ctx, func() bool { return len(svc.Pending()) == 1 }); err != nil { // the call is in flight
		return err
	}
	_ = procs["maint-1"].cmd.Process.Kill() // dies mid-call
	show(nil, <-rebuild)
	_ = procs["maint-1"].cmd.Wait()
	delete(procs, "maint-1")

	title("rolling restart to 2.2.0 under new names, 1,000 index calls meanwhile")
	served, failed, err := rolling(ctx, node, svc, search, dir, procs)
	if err != nil {
		return err
	}
	twice, total := duplicates(dir)
	fmt.Printf("  calls=1000 failed=%d ran_twice=%d recorded=%d\n", failed, twice, total)
	fmt.Printf("  served by: %s\n", counts(served))
	var rs []string
	for _, r := range svc.Retries() {
		if r.Service == "search" {
			rs = append(rs, fmt.Sprintf("%s=%d", r.Reason, r.Count))
		}
	}
	fmt.Printf("  retries: %v\n", rs)

	title("after the upgrade: suggest exists from 2.2.0 on")
	show(svc.Call(ctx, "search", services.AtLeast("2.2"), "suggest", q("mail")))
	return nil
}

// rolling replaces search-a1 by search-a2 and search-b1 by search-b2
// (start the new one, stop the old one) from the 100th of 1,000 index
// calls on; it returns which node served how many calls and the failures.
func rolling(ctx context.Context, node *remote.Node, svc *services.Services, search services.Ref, dir string, procs map[string]*proc) (map[string]int, int, error) {
	replaced := make(chan error, 2)
	begin := make(chan struct{})
	go func() {
		<-begin
		for _, pair := range [][3]string{{"search-a1", "search-a2", "2.2.0"}, {"search-b1", "search-b2", "2.2.1"}} {
			p, err := start(ctx, node, svc, pair[1], pair[2], dir)
			if err != nil {
				replaced <- err
				return
			}
			procs[pair[1]] = p // the main goroutine reads procs only after both
			procs[pair[0]].stop()
			delete(procs, pair[0])
			replaced <- nil
		}
	}()
	served := map[string]int{}
	failed := 0
	for i := range 1000 {
		if i == 100 {
			close(begin)
		}
		if i == 700 {
			for range 2 { // both restarts done before the last 300 calls
				if err := <-replaced; err != nil {
					return nil, 0, err
				}
			}
		}
		res, err := search.Call(ctx, "index", &examplepb.Echo{Text: fmt.Sprintf("doc-%04d", i)})
		if err != nil {
			failed++
			fmt.Println("  failed:", err)
			continue
		}
		served[res.(*examplepb.Echo).From]++
	}
	return served, failed, nil
}

// duplicates counts ids recorded more than once across the providers.
func duplicates(dir string) (twice, total int) {
	seen := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.ids"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, id := range strings.Fields(string(b)) {
			seen[id]++
			total++
		}
	}
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	return twice, total
}

func counts(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func show(res proto.Message, err error) {
	if err != nil {
		fmt.Printf("  error: %v\n", err)
		fmt.Printf("         -> %s\n", actor.Outcome(err))
		return
	}
	e := res.(*examplepb.Echo)
	fmt.Printf("  %s from %s\n", e.Text, e.From)
}

func title(s string) { fmt.Printf("\n%s\n", s) }

// waitFor polls cond until it holds or ctx ends: for a call to be in
// flight, which no event announces (readiness has WaitPeer and
// WaitProvider).
func waitFor(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "services:", err)
		os.Exit(1)
	}
}
