package pacer

import "time"

// Plan is one paced writer's schedule for a phase: Left operations, the
// next due at Due, one every Pace. A writer that falls behind (its
// operation blocked past the next due time) goes on at once, and never
// does more than one operation to catch up: a slow point is a long one,
// as in the ecall workload.
type Plan struct {
	Left int
	Due  time.Time
	Pace time.Duration
}

// FirstDue staggers writer i of n evenly over the first pace after
// start, so n writers at pace p ask for n/p operations per second from
// the start instead of in bursts.
func FirstDue(start time.Time, i, n int, pace time.Duration) time.Time {
	return start.Add(time.Duration(int64(pace) * int64(i) / int64(n)))
}

// Next records that the operation due at Due finished at now and returns
// when the next one is due; false when the phase is over.
func (p *Plan) Next(now time.Time) (time.Time, bool) {
	p.Left--
	if p.Left <= 0 {
		return time.Time{}, false
	}
	p.Due = p.Due.Add(p.Pace)
	if p.Due.Before(now) {
		p.Due = now
	}
	return p.Due, true
}
