package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// ledger is what the clients were told, per account: the sum of the
// acknowledged deposits and withdrawals, and the operations that may
// have executed (the balance holds any subset of them).
type ledger struct {
	accts                                        []*acct
	killed                                       atomic.Bool
	requests, ok, notExecuted, mayHave, rejected atomic.Int64
}

type acct struct {
	user string

	mu     sync.Mutex // protects following
	acked  int64      // acknowledged deposits minus acknowledged withdrawals
	unsure []int64    // signed amounts of deposits and withdrawals that may have executed
	before string     // the node that answered last before the kill
}

func newLedger(o opts) *ledger {
	l := &ledger{}
	for i := range o.accounts {
		l.accts = append(l.accts, &acct{user: fmt.Sprintf("user-%d", i)})
	}
	for i := range o.cold {
		l.accts = append(l.accts, &acct{user: fmt.Sprintf("cold-%d", i)})
	}
	return l
}

// do runs op on a through a random live node and records its outcome.
func (l *ledger) do(client *http.Client, nodes []*proc, a *acct, op string, amount int64) {
	var live []*proc
	for _, p := range nodes {
		if !p.dead.Load() {
			live = append(live, p)
		}
	}
	p := live[rand.IntN(len(live))]
	killedBefore := l.killed.Load()
	ans, outcome := call(client, p, a.user, op, amount)
	l.requests.Add(1)
	delta := amount
	if op == "withdraw" {
		delta = -amount
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch outcome {
	case "ok":
		l.ok.Add(1)
		if op != "balance" {
			a.acked += delta
		}
		if !killedBefore && !l.killed.Load() {
			a.before = ans.Node
		}
	case "executed":
		l.rejected.Add(1) // a rejection: it ran and changed nothing
	case "not_executed":
		l.notExecuted.Add(1) // it did not run: the balance must not show it
	default:
		l.mayHave.Add(1)
		if op != "balance" {
			a.unsure = append(a.unsure, delta)
		}
	}
}

// ownedBy counts the accounts that node answered for last before the kill.
func (l *ledger) ownedBy(node string) int {
	n := 0
	for _, a := range l.accts {
		a.mu.Lock()
		if a.before == node {
			n++
		}
		a.mu.Unlock()
	}
	return n
}

type result struct {
	problems []string
	moved    int // accounts answered for after the kill by another node than before
	unsure   int // operations that may have executed
}

// check reads every balance through a live node (retrying what did not
// execute) and compares it with the ledger: balance = acknowledged +
// some subset of the operations that may have executed. It also checks
// that only the accounts of the killed node moved.
func (l *ledger) check(client *http.Client, nodes []*proc) result {
	var res result
	for _, a := range l.accts {
		var ans answer
		got := false
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			var live []*proc
			for _, p := range nodes {
				if !p.dead.Load() {
					live = append(live, p)
				}
			}
			var outcome string
			ans, outcome = call(client, live[rand.IntN(len(live))], a.user, "balance", 0)
			if outcome == "ok" {
				got = true
				break
			}
			time.Sleep(50 * time.Millisecond) // polling
		}
		a.mu.Lock()
		res.unsure += len(a.unsure)
		switch {
		case !got:
			res.problems = append(res.problems, fmt.Sprintf("%s: no balance within 5s (%s)", a.user, ans.Err))
		case !reachable(ans.Balance-a.acked, a.unsure):
			res.problems = append(res.problems, fmt.Sprintf("%s: balance %d, acknowledged %d, unsure %v", a.user, ans.Balance, a.acked, a.unsure))
		}
		if got && a.before != "" && ans.Node != a.before {
			res.moved++
			if a.before != victim {
				res.problems = append(res.problems, fmt.Sprintf("%s moved from %s, which is alive, to %s", a.user, a.before, ans.Node))
			}
		}
		a.mu.Unlock()
	}
	sort.Strings(res.problems)
	return res
}

// reachable reports whether some subset of unsure sums to d. Past 16
// unsure operations it checks d against their range only.
func reachable(d int64, unsure []int64) bool {
	if len(unsure) > 16 {
		var lo, hi int64
		for _, u := range unsure {
			if u < 0 {
				lo += u
			} else {
				hi += u
			}
		}
		return lo <= d && d <= hi
	}
	sums := map[int64]bool{0: true}
	for _, u := range unsure {
		next := make(map[int64]bool, 2*len(sums))
		for s := range sums {
			next[s], next[s+u] = true, true
		}
		sums = next
	}
	return sums[d]
}
