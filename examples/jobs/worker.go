package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/examples/examplepb"
	"github.com/mailroom-go/mailroom/idempotency"
	"github.com/mailroom-go/mailroom/supervisor"
	"google.golang.org/protobuf/proto"
)

// runners is how many supervised actors run a worker's jobs.
const runners = 4

// A job travels as an examplepb.Echo: Text is the job id, N the attempt.
// The idempotency key of an attempt is "id#attempt": a new attempt after
// Status answered never-ran (which fences the old key) gets a new key.
func jobKey(id string, attempt int64) string { return fmt.Sprintf("%s#%d", id, attempt) }

// runWorker is a worker node: a supervisor over the runner actors, the
// "run" function that hands each job to one of them and the "status"
// function, over a Dir store and a ledger in JOBS_DIR that outlive the
// process. It stops when stdin closes.
func runWorker() {
	name, dir := os.Getenv("JOBS_NAME"), os.Getenv("JOBS_DIR")
	sys, err := actor.Start(actor.Config{Name: name, Logger: logger()})
	check(err)
	check(sys.RegisterTypes(&examplepb.Echo{}))
	store, err := idempotency.OpenDir(filepath.Join(dir, "store"), idempotency.DirConfig{})
	check(err)
	led, err := openLedger(filepath.Join(dir, "ledger"))
	check(err)
	defer led.close()
	recovered, err := recoverRecords(store, filepath.Join(dir, "ledger"))
	check(err)
	// RerunInterrupted is true of these jobs once recoverRecords has run:
	// a record an earlier incarnation left running has no ledger line, so
	// the job's effect did not happen and running it again does it once.
	g := idempotency.NewGuard(store, sys.Incarnation(), idempotency.RerunInterrupted())
	inc := actor.FormatIncarnation(sys.Incarnation())

	// A poison job's panic crashes its runner; the supervisor restarts it
	// (the intensity allows every poison job at once, and more).
	var children []supervisor.ChildSpec
	for i := range runners {
		children = append(children, supervisor.ChildSpec{
			ID: fmt.Sprint("runner-", i), Name: fmt.Sprint("runner-", i),
			Props: actor.PropsFromFunc(runner(g, led, inc)),
		})
	}
	_, err = supervisor.Start(sys, supervisor.Spec{Intensity: 100, Period: 10 * time.Second, Children: children})
	check(err)
	check(sys.Register("run", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		// The runner's answer or error as it is: a poison job's panic
		// (executed), or a queued job's not executed when its runner
		// crashed before taking it.
		job, err := asEcho(arg)
		if err != nil {
			return nil, err
		}
		return actor.RequestNamedAs[*examplepb.Echo](ctx, sys, "", runnerOf(job.Text), job)
	}))
	check(sys.Register("status", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		q, err := asEcho(arg)
		if err != nil {
			return nil, err
		}
		return serveStatus(g, q)
	}))
	startNode(sys, os.Getenv("JOBS_LISTEN"), nil)
	fmt.Printf("ready inc=%s recovered=%d\n", inc, recovered)
	waitStdin()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = sys.Stop(ctx) // drains, then stops the node
}

// asEcho is arg as the job (or status query) it must be; another type is
// refused, not executed.
func asEcho(arg proto.Message) (*examplepb.Echo, error) {
	m, ok := arg.(*examplepb.Echo)
	if !ok {
		return nil, actor.NotExecutedError(fmt.Errorf("jobs: want an *examplepb.Echo, got %T", arg))
	}
	return m, nil
}

// runnerOf spreads the jobs over the runners by id, so the repeats of a
// job queue behind its first attempt.
func runnerOf(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return fmt.Sprint("runner-", h.Sum32()%runners)
}

// runner runs each job it is asked under its key: the effect is one
// ledger line. Poison jobs panic ("poison-panic-*") or fail for good
// ("poison-fail-*") before any effect.
func runner(g *idempotency.Guard, led *ledger, inc string) actor.ReceiveFunc {
	return func(c *actor.Context) {
		job, ok := c.Message().(*examplepb.Echo)
		if !ok {
			return
		}
		reply, err := runKeyed(c.Context(), g, job, func(context.Context) ([]byte, error) {
			switch {
			case strings.HasPrefix(job.Text, "poison-panic-"):
				panic("poison job " + job.Text)
			case strings.HasPrefix(job.Text, "poison-fail-"):
				return nil, actor.Reject("poison", "job "+job.Text+" fails every time")
			}
			if err := led.add(ledgerLine{id: job.Text, attempt: int(job.N), inc: inc}); err != nil {
				return nil, fmt.Errorf("ledger: %w", err)
			}
			return []byte("done by " + inc), nil
		})
		if err != nil {
			c.RespondError(err)
			return
		}
		c.Respond(&examplepb.Echo{Text: string(reply)})
	}
}

// runKeyed runs fn under the key the job argument carries.
//
// Replace with idempotency.WithKey/Status when on main: the api sets the
// key with idempotency.WithKey on the call and the worker's receive
// middleware (idempotency.Middleware) runs the handler under it, so the
// key no longer rides in the job argument.
func runKeyed(ctx context.Context, g *idempotency.Guard, job *examplepb.Echo, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	return g.Run(ctx, jobKey(job.Text, job.N), fn)
}

// serveStatus is the worker's side of the api's status request: the
// state of key (Text) as the guard answers it; never-ran fences the key.
// The reply's N is the idempotency.State, Text the recorded error.
//
// Replace with idempotency.WithKey/Status when on main: idempotency.Serve
// answers a remote idempotency.Status, and this function goes.
func serveStatus(g *idempotency.Guard, q *examplepb.Echo) (proto.Message, error) {
	rec, err := g.Status(q.Text, uint64(q.N))
	if err != nil {
		return nil, err
	}
	if rec.State == idempotency.Done && rec.Err != "" && rec.Outcome == actor.MayHaveExecuted {
		// Not made by these jobs (they never end on their ctx): say so
		// rather than call it a failure.
		return nil, actor.MayHaveExecutedError(errors.New("status: " + rec.Err))
	}
	return &examplepb.Echo{N: int64(rec.State), Text: rec.Err}, nil
}

// recoverRecords reconciles the store with the ledger before the worker
// serves: a record left Running by a killed incarnation whose job has a
// ledger line did its effect (the line is written before the record of
// the end): it is recorded Done. What stays Running then did no effect.
// It returns how many records it completed.
func recoverRecords(store *idempotency.Dir, path string) (int, error) {
	lines, err := readLedger(path)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range lines {
		key := jobKey(l.id, int64(l.attempt))
		rec, ok, err := store.Get(key)
		if err != nil {
			return n, err
		}
		if ok && rec.State == idempotency.Running {
			if err := store.Put(key, idempotency.Record{State: idempotency.Done, Inc: rec.Inc, Reply: []byte("done by " + l.inc + " (recovered from the ledger)")}); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
