package patterns

import (
	"math/rand/v2"

	"google.golang.org/protobuf/proto"
)

// The policies are the synchronous core of a group call: given the
// results of the entries called so far, which entries to call (or cast
// to) next and whether the answer is ready. They know nothing of actors;
// the coordinator drives them, one event at a time, on its goroutine.

// policy decides one group call. Entries are indexes into the node list.
type policy interface {
	// begin is the first step.
	begin() step
	// result takes the outcome of the call to entry i (err is nil for a
	// success) and returns the next step. It is called once per called
	// entry; after the answer it is still called, and ignores the result.
	result(i int, v proto.Message, err error) step
}

// step is what the coordinator does next.
type step struct {
	call []int  // call these entries now, in parallel
	cast []int  // cast to these entries now
	done bool   // ans is the answer; set once per call
	ans  answer // valid when done
}

// answer is what the coordinator hands its owner.
type answer struct {
	one     Result      // CallOne, CallAny
	all     []Result    // CallAll; CallAllWait's replies
	rejects []NodeError // CallAllWait
	err     error       // NodeError, *AllFailedError, ErrNoneAvailable, *CoordinatorError
}

// localFirst returns the entries of nodes with the local node's first, in
// list order, then the others shuffled (CallOne's order).
func localFirst(nodes []string, local string, shuffle func(n int, swap func(i, j int))) []int {
	order := make([]int, 0, len(nodes))
	for i, n := range nodes {
		if n == local {
			order = append(order, i)
		}
	}
	k := len(order)
	for i, n := range nodes {
		if n != local {
			order = append(order, i)
		}
	}
	rest := order[k:]
	shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	return order
}

// indexOf is the first entry naming node, or -1.
func indexOf(nodes []string, node string) int {
	for i, n := range nodes {
		if n == node {
			return i
		}
	}
	return -1
}

// pickOne is CastOne's choice: the local node when listed, else a random
// entry. nodes is not empty.
func pickOne(nodes []string, local string) string {
	if indexOf(nodes, local) >= 0 {
		return local
	}
	return nodes[rand.IntN(len(nodes))]
}

// callOne tries the entries one at a time in order until one succeeds.
type callOne struct {
	nodes []string
	fn    string
	opt   options
	order []int
	next  int // position in order of the entry being called
	errs  []NodeError
	done  bool
}

func (p *callOne) begin() step { return step{call: []int{p.order[0]}} }

func (p *callOne) result(i int, v proto.Message, err error) step {
	if p.done {
		return step{}
	}
	if err == nil {
		p.done = true
		return step{done: true, ans: answer{one: Result{Node: p.nodes[i], Value: v}}}
	}
	if p.opt.counts(err) {
		p.errs = append(p.errs, NodeError{Node: p.nodes[i], Err: err})
	}
	if p.next++; p.next < len(p.order) {
		return step{call: []int{p.order[p.next]}}
	}
	p.done = true
	return step{done: true, ans: answer{err: &AllFailedError{Pattern: "call_one", Function: p.fn, Errors: p.errs}}}
}

// callAny calls the local entry first and alone when there is one; on its
// success it casts to every other entry and answers at once. Otherwise it
// calls the remaining entries in parallel and takes the first success.
type callAny struct {
	nodes   []string
	fn      string
	opt     options
	local   int // the local entry, or -1
	pending int // parallel calls not yet reported
	errs    []NodeError
	done    bool
}

func (p *callAny) begin() step {
	if p.local >= 0 {
		return step{call: []int{p.local}}
	}
	return p.callRest()
}

// callRest calls every entry but the local one in parallel.
func (p *callAny) callRest() step {
	var rest []int
	for i := range p.nodes {
		if i != p.local {
			rest = append(rest, i)
		}
	}
	p.pending = len(rest)
	if p.pending == 0 {
		return p.fail()
	}
	return step{call: rest}
}

func (p *callAny) fail() step {
	p.done = true
	return step{done: true, ans: answer{err: &AllFailedError{Pattern: "call_any", Function: p.fn, Errors: p.errs}}}
}

func (p *callAny) result(i int, v proto.Message, err error) step {
	if p.done {
		return step{}
	}
	if err == nil {
		p.done = true
		s := step{done: true, ans: answer{one: Result{Node: p.nodes[i], Value: v}}}
		if i == p.local {
			for j := range p.nodes {
				if j != i {
					s.cast = append(s.cast, j)
				}
			}
		}
		return s
	}
	if p.opt.counts(err) {
		p.errs = append(p.errs, NodeError{Node: p.nodes[i], Err: err})
	}
	if i == p.local {
		return p.callRest()
	}
	if p.pending--; p.pending == 0 {
		return p.fail()
	}
	return step{}
}

// callAll calls every entry in parallel; the first counted failure
// decides, else every success in arrival order.
type callAll struct {
	nodes   []string
	opt     options
	pending int
	results []Result
	done    bool
}

func (p *callAll) begin() step {
	p.pending = len(p.nodes)
	return step{call: allEntries(len(p.nodes))}
}

func (p *callAll) result(i int, v proto.Message, err error) step {
	if p.done {
		return step{}
	}
	p.pending--
	switch {
	case err == nil:
		p.results = append(p.results, Result{Node: p.nodes[i], Value: v})
	case p.opt.counts(err):
		p.done = true
		return step{done: true, ans: answer{err: NodeError{Node: p.nodes[i], Err: err}}}
	}
	if p.pending > 0 {
		return step{}
	}
	p.done = true
	if len(p.results) == 0 {
		return step{done: true, ans: answer{err: ErrNoneAvailable}}
	}
	return step{done: true, ans: answer{all: p.results}}
}

// callAllWait calls every entry in parallel and waits for all of them.
type callAllWait struct {
	nodes   []string
	pending int
	ans     answer
}

func (p *callAllWait) begin() step {
	p.pending = len(p.nodes)
	return step{call: allEntries(len(p.nodes))}
}

func (p *callAllWait) result(i int, v proto.Message, err error) step {
	if p.pending == 0 {
		return step{}
	}
	if err == nil {
		p.ans.all = append(p.ans.all, Result{Node: p.nodes[i], Value: v})
	} else {
		p.ans.rejects = append(p.ans.rejects, NodeError{Node: p.nodes[i], Err: err})
	}
	if p.pending--; p.pending > 0 {
		return step{}
	}
	return step{done: true, ans: p.ans}
}

func allEntries(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
