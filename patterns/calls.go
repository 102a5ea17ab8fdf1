package patterns

import (
	"context"
	"math/rand/v2"
	"slices"

	"google.golang.org/protobuf/proto"
)

// CallOne calls fn with arg on the nodes one at a time until one
// succeeds: the local node first if listed, then the others in random
// order. A failure is recorded (an unreachable node only with
// UnreachableIsError) and the next node tried. It returns the first
// success, or an *AllFailedError with the recorded failures in order
// (empty when every node was unreachable and skipped), or
// ErrNoneAvailable for an empty list, or a *CoordinatorError.
func (p *Patterns) CallOne(ctx context.Context, nodes []string, fn string, arg proto.Message, opts ...Option) (Result, error) {
	if len(nodes) == 0 {
		return Result{}, ErrNoneAvailable
	}
	o := buildOptions(opts)
	nodes = slices.Clone(nodes)
	pol := &callOne{nodes: nodes, fn: fn, opt: o, order: localFirst(nodes, p.sys.Name(), rand.Shuffle)}
	a := p.run(ctx, "call_one", nodes, fn, arg, o, pol)
	return a.one, a.err
}

// CallAny calls fn with arg on the nodes and returns the first success.
// If the local node is listed it is called first and alone: on success
// fn is cast to every other entry and the local result returned without
// waiting for them; otherwise, or when the local node is not listed, the
// other entries are called in parallel and the first success wins; the
// rest finish their calls and their results are discarded. If none
// succeeds: an *AllFailedError with the failures in arrival order
// (unreachable nodes only with UnreachableIsError). ErrNoneAvailable for
// an empty list; a *CoordinatorError if the call itself fails.
func (p *Patterns) CallAny(ctx context.Context, nodes []string, fn string, arg proto.Message, opts ...Option) (Result, error) {
	if len(nodes) == 0 {
		return Result{}, ErrNoneAvailable
	}
	o := buildOptions(opts)
	nodes = slices.Clone(nodes)
	pol := &callAny{nodes: nodes, fn: fn, opt: o, local: indexOf(nodes, p.sys.Name())}
	a := p.run(ctx, "call_any", nodes, fn, arg, o, pol)
	return a.one, a.err
}

// CallAll calls fn with arg on every node in parallel and requires every
// one to succeed. The first counted failure ends the call with that
// node's NodeError (the others finish their calls; their results are
// discarded). Otherwise it returns the successes in the order they
// arrived. Unreachable nodes are skipped unless UnreachableIsError is
// given. ErrNoneAvailable when the list is empty or no node could be
// reached; a *CoordinatorError if the call itself fails.
func (p *Patterns) CallAll(ctx context.Context, nodes []string, fn string, arg proto.Message, opts ...Option) ([]Result, error) {
	if len(nodes) == 0 {
		return nil, ErrNoneAvailable
	}
	o := buildOptions(opts)
	nodes = slices.Clone(nodes)
	a := p.run(ctx, "call_all", nodes, fn, arg, o, &callAll{nodes: nodes, opt: o})
	return a.all, a.err
}

// CallAllWait calls fn with arg on every node in parallel and waits for
// all of them. replies are the successes and rejects the failures
// (rejections, crashes and unreachable nodes alike), each in arrival
// order. No node's failure makes it fail: err is nil unless the group
// call itself failed (a *CoordinatorError: ctx ended, the coordinator was
// killed or crashed), and then the lists are nil. An empty list returns
// two empty lists. UnreachableIsError changes nothing here.
func (p *Patterns) CallAllWait(ctx context.Context, nodes []string, fn string, arg proto.Message, opts ...Option) (replies []Result, rejects []NodeError, err error) {
	if len(nodes) == 0 {
		return nil, nil, nil
	}
	o := buildOptions(opts)
	nodes = slices.Clone(nodes)
	a := p.run(ctx, "call_all_wait", nodes, fn, arg, o, &callAllWait{nodes: nodes})
	if a.err != nil {
		return nil, nil, a.err
	}
	return a.all, a.rejects, nil
}
