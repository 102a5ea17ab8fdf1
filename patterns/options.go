package patterns

import "github.com/mailroom-go/mailroom/actor"

// Option is a per-call knob of a group call.
type Option func(*options)

// UnreachableIsError makes an unreachable node (see IsUnreachable) count
// as that node's error instead of being skipped as if it were not in the
// list: ecall's RpcErr = true. Use it when "unreachable" must decide:
// with CallAll an unreachable node then vetoes the call. Off by default.
// CallAllWait lists unreachable nodes among its rejects either way.
func UnreachableIsError() Option {
	return func(o *options) { o.unreachableIsError = true }
}

type options struct {
	unreachableIsError bool
	hooks              *hooks
}

func buildOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// counts reports whether a node's failure err is counted (recorded, and
// for CallAll decisive) rather than skipped.
func (o options) counts(err error) bool {
	return o.unreachableIsError || !IsUnreachable(err)
}

// hooks let tests see, and kill, the actors of one group call. Each runs
// on the coordinator's goroutine, inside its Receive: a hook that panics
// crashes the coordinator.
type hooks struct {
	// coordinator is called with the coordinator's PID when it begins.
	coordinator func(actor.PID)
	// caller is called after each caller is spawned, with its entry.
	caller func(node string, pid actor.PID)
	// report is called when a caller's report arrives, before the policy
	// sees it.
	report func(node string)
}

// withHooks installs test hooks.
func withHooks(h *hooks) Option {
	return func(o *options) { o.hooks = h }
}
