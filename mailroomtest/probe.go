package mailroomtest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"google.golang.org/protobuf/proto"
)

// Probe is an actor a test sends to and watches from: every message it
// receives (Terminated included, lifecycle messages excluded) is queued
// for the Expect methods, in arrival order, with its sender. Each Expect
// waits at most the duration it is given and returns an error when what
// it expects does not come, so a test never hangs and never sleeps to
// synchronise: require.NoError(t, p.ExpectMessage(want, time.Second)).
//
// The queue is not bounded: a probe is for tests, which send it what
// they then expect. One goroutine at a time takes messages (Receive and the Expect
// methods); PID and Watch are safe from any goroutine.
type Probe struct {
	sys *actor.System
	pid actor.PID

	mu     sync.Mutex // protects following
	queue  []received
	signal chan struct{} // one slot: fires when queue grows
}

type received struct {
	msg    any
	sender actor.PID
}

// watchReq asks the probe actor to watch pid.
type watchReq struct{ pid actor.PID }

// NewProbe spawns a probe on sys. It ends with sys, or with Stop.
func NewProbe(sys *actor.System) (*Probe, error) {
	p := &Probe{sys: sys, signal: make(chan struct{}, 1)}
	pid, err := sys.SpawnFunc(p.receive)
	if err != nil {
		return nil, fmt.Errorf("mailroomtest: spawn probe: %w", err)
	}
	p.pid = pid
	return p, nil
}

// Stop stops the probe's actor.
func (p *Probe) Stop() { p.sys.StopActor(p.pid) }

func (p *Probe) receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started, actor.Stopping, actor.Stopped, actor.Restarting:
	case watchReq:
		c.Watch(m.pid)
		c.Respond(true)
	default:
		p.mu.Lock()
		p.queue = append(p.queue, received{msg: m, sender: c.Sender()})
		p.mu.Unlock()
		select {
		case p.signal <- struct{}{}:
		default:
		}
	}
}

// PID is the probe's address: send to it, or give it as a reply-to.
func (p *Probe) PID() actor.PID { return p.pid }

// Watch makes the probe watch pid (on any node): its end arrives as an
// actor.Terminated, for ExpectTerminated. It returns once the probe has
// set the watch (a remote pid's watch frame is then on its link, ahead of
// what this node sends on it later); an error when the probe is gone.
// Call it before what ends pid.
func (p *Probe) Watch(pid actor.PID) error {
	if _, err := p.sys.Request(context.Background(), p.pid, watchReq{pid: pid}); err != nil {
		return fmt.Errorf("mailroomtest: probe %v: watch %v: %w", p.pid, pid, err)
	}
	return nil
}

// next waits up to d for the next message.
func (p *Probe) next(d time.Duration) (received, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			r := p.queue[0]
			p.queue = p.queue[1:]
			p.mu.Unlock()
			return r, true
		}
		p.mu.Unlock()
		select {
		case <-p.signal:
		case <-timer.C:
			return received{}, false
		}
	}
}

// ErrNoMessage is what Receive and the Expect methods return when
// nothing came in time (wrapped, with the probe and the wait).
var ErrNoMessage = errors.New("mailroomtest: no message")

// Receive returns the next message and its sender, waiting up to d; the
// error wraps ErrNoMessage when none came.
func (p *Probe) Receive(d time.Duration) (msg any, sender actor.PID, err error) {
	r, ok := p.next(d)
	if !ok {
		return nil, actor.PID{}, fmt.Errorf("probe %v: %w within %v", p.pid, ErrNoMessage, d)
	}
	return r.msg, r.sender, nil
}

// ExpectMessage returns an error unless the next message, within d,
// equals want (proto.Equal for protobuf messages, reflect.DeepEqual
// otherwise). It returns the message's sender.
func (p *Probe) ExpectMessage(want any, d time.Duration) (actor.PID, error) {
	got, sender, err := p.Receive(d)
	if err != nil {
		return sender, fmt.Errorf("%w, want %s", err, show(want))
	}
	if !equal(want, got) {
		return sender, fmt.Errorf("mailroomtest: probe %v: got %s, want %s", p.pid, show(got), show(want))
	}
	return sender, nil
}

// ExpectNoMessage returns an error if a message arrives within d. It
// waits all of d: keep d short, it is the time the test grants the
// message to (wrongly) arrive.
func (p *Probe) ExpectNoMessage(d time.Duration) error {
	if r, ok := p.next(d); ok {
		return fmt.Errorf("mailroomtest: probe %v: got %s, want no message within %v", p.pid, show(r.msg), d)
	}
	return nil
}

// ExpectTerminated returns the next message, within d, if it is the
// actor.Terminated of pid (watched first with Watch), and an error
// otherwise.
func (p *Probe) ExpectTerminated(pid actor.PID, d time.Duration) (actor.Terminated, error) {
	got, _, err := p.Receive(d)
	if err != nil {
		return actor.Terminated{}, fmt.Errorf("%w, want Terminated of %v", err, pid)
	}
	term, ok := got.(actor.Terminated)
	if !ok || term.PID != pid {
		return actor.Terminated{}, fmt.Errorf("mailroomtest: probe %v: got %s, want Terminated of %v", p.pid, show(got), pid)
	}
	return term, nil
}

func equal(want, got any) bool {
	if w, ok := want.(proto.Message); ok {
		g, ok := got.(proto.Message)
		return ok && proto.Equal(w, g)
	}
	return reflect.DeepEqual(want, got)
}

func show(m any) string { return fmt.Sprintf("%T %v", m, m) }
