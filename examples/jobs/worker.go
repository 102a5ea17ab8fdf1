package main

import (
	"context"
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
	"google.golang.org/protobuf/types/known/anypb"
)

// runners is how many supervised actors run a worker's jobs.
const runners = 4

// A job travels as an examplepb.Echo: Text is the job id, N the attempt.
// The idempotency key of an attempt is "id#attempt": a new attempt after
// Status answered never-ran (which fences the old key) gets a new key.
func jobKey(id string, attempt int64) string { return fmt.Sprintf("%s#%d", id, attempt) }

// runWorker is a worker node: a supervisor over the runner actors, the
// guarded "run" function that hands each job to one of them and the
// guard's Status served to the api (idempotency.Serve), over a Dir store
// and a ledger in JOBS_DIR that outlive the process. It stops when stdin closes.
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
			Props: actor.PropsFromFunc(runner(led, inc)),
		})
	}
	_, err = supervisor.Start(sys, supervisor.Spec{Intensity: 100, Period: 10 * time.Second, Children: children})
	check(err)
	// "run" runs under the guard: a call carries its key in its ctx
	// (idempotency.WithKey on the api's side), the guard records the key
	// before the job goes to its runner and the result after, and a
	// repeat of the key gets that result without running again.
	check(sys.Register("run", idempotency.Handler(g, func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		// The runner's answer or error as it is: a poison job's panic
		// (executed), or a queued job's not executed when its runner
		// crashed before taking it (the guard then frees the key).
		job, err := asEcho(arg)
		if err != nil {
			return nil, err
		}
		return actor.RequestNamedAs[*examplepb.Echo](ctx, sys, "", runnerOf(job.Text), job)
	})))
	// The api asks what became of a key with idempotency.Status; a key
	// that never ran is fenced by the asking.
	check(idempotency.Serve(sys, g))
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

// runner runs each job it is asked (under its key: the "run" function
// is guarded): the effect is one ledger line. Poison jobs panic ("poison-panic-*") or fail for good
// ("poison-fail-*") before any effect.
func runner(led *ledger, inc string) actor.ReceiveFunc {
	return func(c *actor.Context) {
		job, ok := c.Message().(*examplepb.Echo)
		if !ok {
			return
		}
		switch {
		case strings.HasPrefix(job.Text, "poison-panic-"):
			panic("poison job " + job.Text)
		case strings.HasPrefix(job.Text, "poison-fail-"):
			c.RespondError(actor.Reject("poison", "job "+job.Text+" fails every time"))
			return
		}
		if err := led.add(ledgerLine{id: job.Text, attempt: int(job.N), inc: inc}); err != nil {
			c.RespondError(fmt.Errorf("ledger: %w", err))
			return
		}
		c.Respond(&examplepb.Echo{Text: "done by " + inc})
	}
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
			// A record's reply is an Any (idempotency.Record.Result
			// decodes it): the answer a repeat of the key gets.
			reply, err := anypb.New(&examplepb.Echo{Text: "done by " + l.inc + " (recovered from the ledger)"})
			if err != nil {
				return n, err
			}
			b, err := proto.Marshal(reply)
			if err != nil {
				return n, err
			}
			if err := store.Put(key, idempotency.Record{State: idempotency.Done, Inc: rec.Inc, Reply: b}); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
