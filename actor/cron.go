package actor

import (
	"fmt"

	"github.com/robfig/cron/v3"
)

// cronSchedule is a parsed cron expression. Parsing is robfig/cron/v3's
// standard parser (the one Kubernetes CronJobs use): 5 fields, names,
// ranges, lists, steps, descriptors and a CRON_TZ= prefix. Only its
// parser and its Next are used; the scheduler is ours.
type cronSchedule struct{ s cron.Schedule }

// parseCron parses expr. The parser panics on some malformed zone
// prefixes ("TZ=" with nothing after it); that is an error here.
func parseCron(expr string) (cs *cronSchedule, err error) {
	defer func() {
		if v := recover(); v != nil {
			cs, err = nil, fmt.Errorf("mailroom: cron expression %q: %v", expr, v)
		}
	}()
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("mailroom: cron expression %q: %w", expr, err)
	}
	return &cronSchedule{s: s}, nil
}

// parseFirst parses expr and finds its first time after now.
func (sc *scheduler) parseFirst(expr string) (*cronSchedule, int64, error) {
	cs, err := parseCron(expr)
	if err != nil {
		return nil, 0, err
	}
	first, ok := sc.cronNext(cs, sc.now())
	if !ok {
		return nil, 0, fmt.Errorf("mailroom: cron expression %q names no time in the next five years", expr)
	}
	return cs, first, nil
}
