package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	cookie   = "grains-demo-cookie-0123456789abcdef"
	envNode  = "GRAINS_NODE"
	envSeeds = "GRAINS_SEEDS"
	envDir   = "GRAINS_DIR"
)

func main() {
	if name := os.Getenv(envNode); name != "" {
		if err := runNode(name, os.Getenv(envSeeds), os.Getenv(envDir)); err != nil {
			fmt.Fprintf(os.Stderr, "grains: node %s: %v\n", name, err)
			os.Exit(1)
		}
		return
	}
	var o opts
	flag.IntVar(&o.accounts, "accounts", 200, "accounts under load")
	flag.IntVar(&o.cold, "cold", 20, "accounts touched only at the start (they passivate, then reload at the check)")
	flag.IntVar(&o.clients, "clients", 16, "concurrent HTTP clients")
	flag.DurationVar(&o.before, "before", 4*time.Second, "load before the kill")
	flag.DurationVar(&o.after, "after", 6*time.Second, "load after the kill")
	flag.Parse()
	ok, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grains:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

type opts struct {
	accounts, cold, clients int
	before, after           time.Duration
}

var nodeNames = []string{"grains-1", "grains-2", "grains-3"}

// victim is the node killed under load.
const victim = "grains-2"

// proc is a node's child process.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string // remote
	http  string // base URL of its HTTP front
	dead  atomic.Bool
}

func startNode(name, seeds, dir string) (*proc, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envNode+"="+name, envSeeds+"="+seeds, envDir+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
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
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("node %s did not start (%q, %v)", name, line, err)
	}
	return &proc{name: name, cmd: cmd, stdin: stdin, addr: f[1], http: "http://" + f[2]}, nil
}

// stop closes the node's stdin (it stops itself) and waits, killing it
// after 10 s.
func (p *proc) stop() {
	_ = p.stdin.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

func run(o opts) (bool, error) {
	dir, err := os.MkdirTemp("", "grains-demo-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	start := time.Now()

	var nodes []*proc
	defer func() {
		for _, p := range nodes {
			p.stop()
		}
	}()
	var seeds []string
	for _, name := range nodeNames {
		p, err := startNode(name, strings.Join(seeds, ","), dir)
		if err != nil {
			return false, err
		}
		nodes = append(nodes, p)
		seeds = append(seeds, name+"="+p.addr)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.clients}}
	if err := waitFor(15*time.Second, "every node sees the three hosts", func() bool {
		for _, p := range nodes {
			st, err := stats(client, p)
			if err != nil || len(st.Hosts) != len(nodes) {
				return false
			}
		}
		return true
	}); err != nil {
		return false, err
	}
	fmt.Printf("grains: %s up (Static discovery, no leases), accounts in %s\n", strings.Join(nodeNames, ", "), dir)

	l := newLedger(o)
	// The cold accounts: one deposit each, then left alone until the check.
	for _, a := range l.accts[o.accounts:] {
		l.do(client, nodes, a, "deposit", 100)
	}
	fmt.Printf("grains: %d accounts under load from %d HTTP clients (deposit, withdraw, balance on any node), %d cold ones\n", o.accounts, o.clients, o.cold)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range o.clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 42))
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := l.accts[r.IntN(o.accounts)]
				switch p := r.IntN(100); {
				case p < 55:
					l.do(client, nodes, a, "deposit", 1+r.Int64N(100))
				case p < 85:
					l.do(client, nodes, a, "withdraw", 1+r.Int64N(120))
				default:
					l.do(client, nodes, a, "balance", 0)
				}
			}
		})
	}
	time.Sleep(o.before) // the load runs meanwhile: this is the demo's pace, not a synchronisation
	var killed *proc
	for _, p := range nodes {
		if p.name == victim {
			killed = p
		}
	}
	owned := l.ownedBy(victim)
	l.killed.Store(true)
	killed.dead.Store(true)
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return false, err
	}
	_ = killed.cmd.Wait()
	fmt.Printf("grains: %s killed (SIGKILL) at %.1fs under load; it ran %d of the accounts\n", victim, time.Since(start).Seconds(), owned)
	time.Sleep(o.after) // the load goes on against the two left
	close(stop)
	wg.Wait()
	fmt.Printf("grains: load stopped at %.1fs\n", time.Since(start).Seconds())

	// Every balance, read through a live node, against what was
	// acknowledged.
	res := l.check(client, nodes)
	for _, p := range nodes {
		if p.dead.Load() {
			continue
		}
		if st, err := stats(client, p); err == nil {
			fmt.Printf("grains: %s: running=%d activations=%d passivations=%d handovers=%d cache_hits=%d cache_misses=%d retries=%d\n",
				p.name, st.Running, st.Activations, st.Passivations, st.Handovers, st.CacheHits, st.CacheMisses, st.Retries)
		}
	}
	for _, line := range res.problems {
		fmt.Println("grains: INCONSISTENT:", line)
	}
	ok := len(res.problems) == 0 && l.ok.Load() > 0 && res.moved == owned
	if res.moved != owned {
		fmt.Printf("grains: INCONSISTENT: %d accounts moved, %d were on %s\n", res.moved, owned, victim)
	}
	fmt.Printf("grains: requests=%d ok=%d not_executed=%d may_have_executed=%d rejected=%d accounts=%d moved=%d unsure_ops=%d balances_consistent=%t took=%.1fs\n",
		l.requests.Load(), l.ok.Load(), l.notExecuted.Load(), l.mayHave.Load(), l.rejected.Load(), len(l.accts), res.moved, res.unsure,
		len(res.problems) == 0, time.Since(start).Seconds())
	return ok, nil
}

func stats(client *http.Client, p *proc) (nodeStats, error) {
	var st nodeStats
	resp, err := client.Get(p.http + "/stats")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond) // polling
	}
	return nil
}

// call is one HTTP request to node p; it returns the answer and the
// outcome: "ok", or that of the failure.
func call(client *http.Client, p *proc, user, op string, amount int64) (answer, string) {
	u := fmt.Sprintf("%s/op?op=%s&user=%s&amount=%d", p.http, op, url.QueryEscape(user), amount)
	resp, err := client.Post(u, "", nil)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			return answer{Err: err.Error()}, "not_executed" // never reached the node
		}
		return answer{Err: err.Error()}, "may_have_executed" // sent; the answer was lost
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return answer{Err: err.Error()}, "may_have_executed"
	}
	if resp.StatusCode == http.StatusOK {
		return a, "ok"
	}
	if a.Outcome == "" {
		a.Outcome = "may_have_executed"
	}
	return a, a.Outcome
}
