package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/examples/examplepb"
	"github.com/mailroom-go/mailroom/idempotency"
)

// jobTimeout bounds one job at the api, retries and status checks
// included; a job not settled by then is answered 504 (the driver counts
// it lost).
const jobTimeout = 90 * time.Second

// workers are the worker nodes' names.
var workers = []string{"worker-1", "worker-2"}

// workerOf pins a job to one worker: its key's record lives in that
// worker's store, so every attempt and status check of the job goes
// there (keys shared across nodes want a shared store).
func workerOf(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return workers[h.Sum32()%uint32(len(workers))]
}

// apiStats counts what the api did to settle the jobs.
type apiStats struct {
	mayHave    atomic.Int64 // run calls that came back may have executed
	notExec    atomic.Int64 // run calls that came back not executed (retried as they were)
	statusAsks atomic.Int64 // status requests answered
	reattempts atomic.Int64 // new attempts after status answered never-ran
	fromStatus atomic.Int64 // jobs settled by a status answer (done or failed)
}

// runAPI is the api node: POST /job?id=ID runs job ID on its worker and
// answers once the job is settled: 200 done, 422 failed (it ran and
// failed: a poison job), 504 not settled within jobTimeout. GET /stats
// says how it got there. It stops when stdin closes.
func runAPI() {
	sys, err := actor.Start(actor.Config{Name: "api", Logger: logger()})
	check(err)
	check(sys.RegisterTypes(&examplepb.Echo{}))
	node := startNode(sys, os.Getenv("JOBS_LISTEN"), strings.Split(os.Getenv("JOBS_SEEDS"), ","))
	a := &api{sys: sys}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /job", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if id == "" || len(id) > 64 {
			http.Error(w, "want id, 1 to 64 bytes", http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), jobTimeout)
		defer cancel()
		reply, err := a.settle(ctx, id)
		switch {
		case err == nil:
			fmt.Fprintln(w, reply)
		case errors.Is(err, errFailed):
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		default:
			http.Error(w, err.Error(), http.StatusGatewayTimeout)
		}
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		s := &a.stats
		fmt.Fprintf(w, "may_have_executed=%d not_executed=%d status_checks=%d reattempts=%d settled_by_status=%d\n",
			s.mayHave.Load(), s.notExec.Load(), s.statusAsks.Load(), s.reattempts.Load(), s.fromStatus.Load())
	})
	ln, err := net.Listen("tcp", os.Getenv("JOBS_HTTP"))
	check(err)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			check(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	for _, w := range workers {
		_, err := node.WaitPeer(ctx, w)
		check(err)
	}
	cancel()
	fmt.Println("ready")
	waitStdin()
	_ = srv.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = sys.Stop(ctx) // drains, then stops the node
}

type api struct {
	sys   *actor.System
	stats apiStats
}

// errFailed marks a job that ran and failed (executed): not retried.
var errFailed = errors.New("job failed")

// settle runs job id until it is known done or failed, by the outcome of
// each failure: not executed, the same attempt again; may have executed,
// ask the worker's status of that attempt's key: done (or failed) is the
// answer, running is asked again, never-ran (the key now fenced, so a
// copy of it still queued cannot run later) is a new attempt with a new
// key. Only what never ran is run again.
func (a *api) settle(ctx context.Context, id string) (string, error) {
	w := workerOf(id)
	var b backoff
	for attempt := int64(1); ; {
		reply, err := callJob(ctx, a.sys, w, id, attempt)
		if err == nil {
			return reply, nil
		}
		switch actor.Outcome(err) {
		case actor.Executed:
			return "", fmt.Errorf("%w: %w", errFailed, err)
		case actor.NotExecuted:
			a.stats.notExec.Add(1)
			if werr := b.wait(ctx); werr != nil {
				return "", fmt.Errorf("job %s not run: %w (last: %v)", id, werr, err)
			}
			continue
		}
		a.stats.mayHave.Add(1)
		var inc uint64
		if e := (*actor.Error)(nil); errors.As(err, &e) {
			inc = e.Incarnation
		}
		st, failure, err := a.status(ctx, w, jobKey(id, attempt), inc)
		if err != nil {
			return "", fmt.Errorf("job %s attempt %d: %w", id, attempt, err)
		}
		switch st {
		case idempotency.Done:
			a.stats.fromStatus.Add(1)
			if failure != "" {
				return "", fmt.Errorf("%w: %s", errFailed, failure)
			}
			return "done (status)", nil
		case idempotency.NeverRan:
			a.stats.reattempts.Add(1)
			attempt++
			b = backoff{}
		default:
			return "", fmt.Errorf("job %s attempt %d: unexpected status %v", id, attempt, st)
		}
	}
}

// status asks w about key until it has an answer that settles it: Done
// or NeverRan (Running is asked again; a worker down or restarting is
// waited for).
func (a *api) status(ctx context.Context, w, key string, inc uint64) (idempotency.State, string, error) {
	var b backoff
	for {
		st, failure, err := askStatus(ctx, a.sys, w, key, inc)
		if err == nil {
			a.stats.statusAsks.Add(1)
			if st != idempotency.Running {
				return st, failure, nil
			}
		} else if actor.Outcome(err) == actor.Executed {
			return 0, "", fmt.Errorf("status of %s: %w", key, err) // refused: no answer will come
		}
		if werr := b.wait(ctx); werr != nil {
			return 0, "", fmt.Errorf("status of %s: %w (last: %v)", key, werr, err)
		}
	}
}

// callJob runs attempt of job id on worker w, the attempt's key in the
// call's ctx (idempotency.WithKey): the worker's guarded "run" records
// it before the job runs.
func callJob(ctx context.Context, sys *actor.System, w, id string, attempt int64) (string, error) {
	ctx = idempotency.WithKey(ctx, jobKey(id, attempt))
	r, err := actor.CallAs[*examplepb.Echo](ctx, sys, w, "run", &examplepb.Echo{Text: id, N: attempt})
	if err != nil {
		return "", err
	}
	return r.Text, nil
}

// askStatus asks worker w (its idempotency.Serve) what became of key,
// which incarnation inc took: the state, and the recorded error of a Done
// key that failed. Asking fences a key that never ran, so a copy of its
// call still queued is refused, not run.
func askStatus(ctx context.Context, sys *actor.System, w, key string, inc uint64) (idempotency.State, string, error) {
	rec, err := idempotency.Status(ctx, sys, w, key, inc)
	if err != nil {
		return 0, "", err
	}
	if rec.State == idempotency.Done && rec.Err != "" && rec.Outcome == actor.MayHaveExecuted {
		// Not made by these jobs (they never end on their ctx): say so
		// rather than call it a failure.
		return 0, "", actor.MayHaveExecutedError(errors.New("status: " + rec.Err))
	}
	return rec.State, rec.Err, nil
}

// backoff waits between retries: 10 ms doubling to 250 ms.
type backoff struct{ d time.Duration }

func (b *backoff) wait(ctx context.Context) error {
	b.d = min(max(2*b.d, 10*time.Millisecond), 250*time.Millisecond)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
