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
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mailroom-go/mailroom/remote"
)

func main() {
	switch os.Getenv("JOBS_ROLE") {
	case "worker":
		runWorker()
		return
	case "api":
		runAPI()
		return
	}
	jobs := flag.Int("jobs", 5000, "ordinary jobs to submit (10 poison jobs come on top)")
	killAt := flag.Int("kill-at", 2000, "SIGKILL worker-1 when this many jobs are settled (0: never)")
	inflight := flag.Int("inflight", 64, "jobs submitted at once")
	keep := flag.Bool("keep", false, "keep the data directory (stores and ledgers) and print its path")
	flag.Parse()
	if *jobs < 20 || *inflight < 1 || *killAt < 0 {
		fmt.Fprintln(os.Stderr, "jobs: want -jobs of 20 or more, -inflight of 1 or more, -kill-at of 0 or more")
		os.Exit(2)
	}
	if err := drive(*jobs, *killAt, *inflight, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
}

// child is one node's process.
type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	ready map[string]string // the key=value fields of its "ready" line
}

// spawn starts a node from this same binary and waits for its "ready".
func spawn(env []string) (*child, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env...)
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
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, out)
	}()
	t := time.NewTimer(60 * time.Second)
	defer t.Stop()
	select {
	case s := <-line:
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s), "ready"); ok {
			c := &child{cmd: cmd, in: in, ready: map[string]string{}}
			for _, f := range strings.Fields(rest) {
				k, v, _ := strings.Cut(f, "=")
				c.ready[k] = v
			}
			return c, nil
		}
		err = fmt.Errorf("said %q", s)
	case <-t.C:
		err = fmt.Errorf("not ready in 60 s")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, fmt.Errorf("%v did not start: %w", env, err)
}

// stop stops the child gracefully (it stops when its stdin closes).
func (c *child) stop() { _ = c.in.Close(); _ = c.cmd.Wait() }

// kill SIGKILLs the child and reaps it.
func (c *child) kill() { _ = c.cmd.Process.Signal(syscall.SIGKILL); _ = c.cmd.Wait() }

// freeAddr is a loopback address nothing listens on now; a restarted
// worker listens on the same one.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// jobIDs are the ordinary jobs with the poison ones spread among them.
func jobIDs(n int) (ids []string, poison map[string]bool) {
	poison = map[string]bool{}
	for i := range n {
		ids = append(ids, fmt.Sprintf("job-%05d", i))
		if p := i / max(n/10, 1); i%max(n/10, 1) == n/20 && p < 10 {
			kind := "panic"
			if p%2 == 1 {
				kind = "fail"
			}
			id := fmt.Sprintf("poison-%s-%d", kind, p/2)
			ids = append(ids, id)
			poison[id] = true
		}
	}
	return ids, poison
}

func drive(jobs, killAt, inflight int, keep bool) error {
	start := time.Now()
	dir, err := os.MkdirTemp("", "mailroom-jobs-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("data in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	var addrs [4]string
	for i := range addrs {
		if addrs[i], err = freeAddr(); err != nil {
			return err
		}
	}
	cookie := "JOBS_COOKIE=" + remote.NewCookie()
	workerEnv := func(i int) []string {
		name := workers[i]
		return []string{"JOBS_ROLE=worker", "JOBS_NAME=" + name, "JOBS_LISTEN=" + addrs[i], "JOBS_DIR=" + filepath.Join(dir, name), cookie}
	}
	var mu sync.Mutex // protects w
	var w [2]*child
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range w {
			if c != nil {
				c.stop()
			}
		}
	}()
	for i := range w {
		c, err := spawn(workerEnv(i))
		if err != nil {
			return err
		}
		mu.Lock()
		w[i] = c
		mu.Unlock()
	}
	front, err := spawn([]string{"JOBS_ROLE=api", "JOBS_NAME=api", "JOBS_LISTEN=" + addrs[2], "JOBS_HTTP=" + addrs[3], cookie,
		fmt.Sprintf("JOBS_SEEDS=%s=%s,%s=%s", workers[0], addrs[0], workers[1], addrs[1])})
	if err != nil {
		return err
	}
	defer front.stop()

	ids, poison := jobIDs(jobs)
	client := &http.Client{Timeout: jobTimeout + 30*time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: inflight}}
	type answer struct {
		code int // 0: no answer
		body string
	}
	answers := make([]answer, len(ids))
	next := make(chan int)
	var settled atomic.Int64
	var restartMs int64
	var recovered string
	restarted := make(chan error, 1)
	kill := func() {
		mu.Lock()
		defer mu.Unlock()
		killed, old := time.Now(), w[0].ready["inc"]
		w[0].kill()
		c, err := spawn(workerEnv(0))
		w[0] = c
		if err == nil {
			restartMs = time.Since(killed).Milliseconds()
			recovered = c.ready["recovered"]
			if c.ready["inc"] == old {
				err = fmt.Errorf("the restarted %s has the incarnation of the killed one, %s", workers[0], old)
			}
		}
		restarted <- err
	}
	var wg sync.WaitGroup
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				resp, err := client.Post(fmt.Sprintf("http://%s/job?id=%s", addrs[3], ids[i]), "text/plain", nil)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					answers[i] = answer{resp.StatusCode, strings.TrimSpace(string(b))}
				} else {
					answers[i] = answer{0, err.Error()}
				}
				if settled.Add(1) == int64(killAt) {
					go kill()
				}
			}
		}()
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	if killAt > 0 && killAt <= len(ids) {
		if err := <-restarted; err != nil {
			return fmt.Errorf("restarting %s: %w", workers[0], err)
		}
	}
	stats := "stats=unavailable"
	if resp, err := client.Get("http://" + addrs[3] + "/stats"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		stats = strings.TrimSpace(string(b))
	}
	// Stop the nodes before reading what they wrote.
	front.stop()
	mu.Lock()
	for i, c := range w {
		if c != nil {
			c.stop()
		}
		w[i] = nil
	}
	mu.Unlock()

	ran := map[string]int{}
	for _, name := range workers {
		lines, err := readLedger(filepath.Join(dir, name, "ledger"))
		if err != nil {
			return err
		}
		for _, l := range lines {
			ran[l.id]++
		}
	}
	var done, failed, lost, duplicated int
	var problems []string
	submitted := map[string]bool{}
	for i, id := range ids {
		submitted[id] = true
		a := answers[i]
		switch {
		case a.code == http.StatusOK && ran[id] > 0:
			done++
		case a.code == http.StatusUnprocessableEntity:
			failed++
			if !poison[id] {
				problems = append(problems, fmt.Sprintf("%s is not poison and failed: %s", id, a.body))
			}
		default:
			lost++
			if len(problems) < 10 {
				problems = append(problems, fmt.Sprintf("%s lost: answer %d %q, ran %d times", id, a.code, a.body, ran[id]))
			}
		}
		if poison[id] && a.code != http.StatusUnprocessableEntity {
			problems = append(problems, fmt.Sprintf("poison job %s was not reported failed: %d %q", id, a.code, a.body))
		}
	}
	for id, n := range ran {
		if n > 1 {
			duplicated++
			if len(problems) < 20 {
				problems = append(problems, fmt.Sprintf("%s ran %d times", id, n))
			}
		}
		if !submitted[id] || poison[id] {
			problems = append(problems, fmt.Sprintf("%s ran and should not have", id))
		}
	}
	killed := "killed=none"
	if killAt > 0 && killAt <= len(ids) {
		killed = fmt.Sprintf("killed=%s@%d restart_ms=%d recovered=%s", workers[0], killAt, restartMs, recovered)
	}
	fmt.Printf("jobs=%d done=%d failed=%d lost=%d duplicated=%d %s %s took=%.1fs\n",
		len(ids), done, failed, lost, duplicated, killed, stats, time.Since(start).Seconds())
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "jobs:", p)
	}
	if lost != 0 || duplicated != 0 || done+failed != len(ids) || len(problems) > 0 {
		return fmt.Errorf("exactly-once broken: lost=%d duplicated=%d done+failed=%d of %d", lost, duplicated, done+failed, len(ids))
	}
	return nil
}
