package actor

import "sync/atomic"

// failures counts the calls and requests (Call, Request, RequestNamed,
// from any Caller) that returned an error, by its Outcome, for the read
// side (actorhooks.FailedOutcomes). Only the error path counts: a call
// that succeeds costs nothing more.
type failures [3]atomic.Uint64 // indexed by Execution

func (s *System) countFailure(err error) {
	if o := Outcome(err); o >= 0 && int(o) < len(s.failures) {
		s.failures[o].Add(1)
	}
}

// failedOutcomes returns the counts by Execution (Executed, NotExecuted,
// MayHaveExecuted).
func (s *System) failedOutcomes() [3]uint64 {
	return [3]uint64{s.failures[Executed].Load(), s.failures[NotExecuted].Load(), s.failures[MayHaveExecuted].Load()}
}
