// Command jobs is a job processor on three nodes that keeps exactly-once
// through a worker's SIGKILL. "api", an HTTP server, dispatches each job
// to one of two workers, "worker-1" and "worker-2", where a supervised
// runner actor runs it under an idempotency key over a durable store
// (idempotency.Dir) and appends its id to a ledger (the job's side
// effect). After a "may have executed" failure the api asks the worker
// the status of the key and runs again only what never ran.
//
// Run without arguments it starts the three as child processes
// (re-executing itself), submits 5,000 jobs and 10 poison ones (5 panic,
// 5 fail for good), SIGKILLs worker-1 mid-load and restarts it on the
// same store and ledger, then reads the ledgers and prints one line:
//
//	jobs=5010 done=5000 failed=10 lost=0 duplicated=0 ...
//
// It exits non-zero unless lost=0, duplicated=0, done+failed=jobs and
// the failed jobs are the poison ones. `make demo-jobs` runs it;
// README.md says how it works.
package main
