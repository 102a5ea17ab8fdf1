// Command shop is a three-node app: "api", an HTTP server on loopback;
// "orders", a versioned service (services.Provide); "stock", a supervised
// inventory actor behind a "reserve" function. Run without arguments it
// starts the three as child processes (re-executing itself), sends 2,000
// HTTP orders at 200/s, SIGKILLs stock mid-load and restarts it, and
// prints how every request ended:
//
//	requests=2000 answered=2000 hung=0 200=... 409=... 502=... 503=... max_ms=...
//
// The api maps each failure's outcome to a status: not executed → 503,
// may have executed → 502, a rejection (executed) → 409. See README.md.
//
// With SHOP_ROLE set it runs that one node, which is how
// deploy/kubernetes runs it: SHOP_DISCOVERY=kubernetes finds the peers
// through discovery/kubernetes, and SIGTERM drains the node (drain.go).
// `shop -env` lists the environment variables a node reads (env.go).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	switch os.Getenv("SHOP_ROLE") {
	case "stock":
		runStock()
		return
	case "orders":
		runOrders()
		return
	case "api":
		runAPI()
		return
	}
	requests := flag.Int("requests", 2000, "HTTP requests to send")
	rate := flag.Int("rate", 200, "requests per second")
	killAt := flag.Int("kill-at", 600, "SIGKILL stock when this request is sent (0: never)")
	env := flag.Bool("env", false, "print the environment variables a node reads (SHOP_ROLE set), and exit")
	flag.Parse()
	if *env {
		for _, v := range envVars {
			fmt.Printf("%s\t%s\n", v.name, v.doc)
		}
		return
	}
	if err := drive(*requests, *rate, *killAt); err != nil {
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(1)
	}
}

// child is one node's process.
type child struct {
	role string
	cmd  *exec.Cmd
	in   io.WriteCloser
}

// spawn starts role from this same binary and waits for its "ready".
func spawn(role string, env []string) (*child, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), "SHOP_ROLE="+role, "SHOP_STOP_ON_STDIN=1"), env...)
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
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s did not start (%q, %v)", role, line, err)
	}
	return &child{role: role, cmd: cmd, in: in}, nil
}

// stop stops the child gracefully (it stops when its stdin closes).
func (c *child) stop() { _ = c.in.Close(); _ = c.cmd.Wait() }

// kill SIGKILLs the child and reaps it.
func (c *child) kill() { _ = c.cmd.Process.Signal(syscall.SIGKILL); _ = c.cmd.Wait() }

// freeAddr is a loopback address nothing listens on now; a restarted
// stock listens on the same one.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func drive(requests, rate, killAt int) error {
	var addrs [4]string
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return err
		}
		addrs[i] = a
	}
	env := []string{"SHOP_STOCK=" + addrs[0], "SHOP_ORDERS=" + addrs[1], "SHOP_API_NODE=" + addrs[2], "SHOP_HTTP=" + addrs[3]}
	var mu sync.Mutex // protects stock
	stock, err := spawn("stock", env)
	if err != nil {
		return err
	}
	defer func() { mu.Lock(); stock.stop(); mu.Unlock() }()
	orders, err := spawn("orders", env)
	if err != nil {
		return err
	}
	defer orders.stop()
	api, err := spawn("api", env)
	if err != nil {
		return err
	}
	defer api.stop()
	fmt.Printf("api on http://%s, orders and stock linked; %d orders at %d/s, stock SIGKILLed at order %d\n", addrs[3], requests, rate, killAt)

	const hangAfter = 10 * time.Second // an answer later than this is a hang
	client := &http.Client{Timeout: hangAfter}
	type result struct {
		status int // 0: no answer
		took   time.Duration
	}
	results := make(chan result, requests)
	restarted := make(chan error, 1)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for i := range requests {
		<-tick.C
		if i == killAt && killAt > 0 {
			go func() {
				mu.Lock()
				defer mu.Unlock()
				killed := time.Now()
				stock.kill()
				s, err := spawn("stock", env)
				if err == nil {
					stock = s
					fmt.Printf("stock SIGKILLed at order %d, restarted and ready in %v\n", killAt, time.Since(killed).Round(time.Millisecond))
				}
				restarted <- err
			}()
		}
		item := "lamp"
		if i%10 == 0 {
			item = "rare"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := client.Post(fmt.Sprintf("http://%s/order?id=o-%04d&item=%s", addrs[3], i, item), "text/plain", nil)
			r := result{took: time.Since(start)}
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				r.status = resp.StatusCode
			}
			results <- r
		}()
	}
	wg.Wait()
	close(results)
	if killAt > 0 && killAt < requests {
		if err := <-restarted; err != nil {
			return fmt.Errorf("restarting stock: %w", err)
		}
	}

	counts := map[int]int{}
	answered, hung := 0, 0
	var maxTook time.Duration
	for r := range results {
		if r.status == 0 {
			hung++
			continue
		}
		answered++
		counts[r.status]++
		maxTook = max(maxTook, r.took)
	}
	var statuses []int
	for s := range counts {
		statuses = append(statuses, s)
	}
	sort.Ints(statuses)
	line := fmt.Sprintf("requests=%d answered=%d hung=%d", requests, answered, hung)
	for _, s := range []int{200, 409, 502, 503} {
		line += fmt.Sprintf(" %d=%d", s, counts[s])
	}
	for _, s := range statuses {
		if s != 200 && s != 409 && s != 502 && s != 503 {
			line += fmt.Sprintf(" %d=%d", s, counts[s])
		}
	}
	fmt.Printf("%s max_ms=%.1f\n", line, float64(maxTook.Microseconds())/1000)
	if answered != requests || hung != 0 {
		return fmt.Errorf("%d of %d requests got no answer within %v", requests-answered, requests, hangAfter)
	}
	return nil
}
