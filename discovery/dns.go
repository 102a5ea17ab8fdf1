package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/discovery/internal/evqueue"
	"github.com/mailroom-go/mailroom/internal/nodename"
)

// DNS is a provider that finds the other nodes in DNS: the SRV records
// (or the A/AAAA records, at one port) of a name, such as a Kubernetes
// headless Service's, resolved again every Interval.
//
// Each target is a seed, as with Static: it is reported up with
// Incarnation 0 at the address the records give, and the remote layer
// learns its incarnation at the handshake and judges its liveness from
// its links' heartbeats. DNS says nothing about liveness, and nothing
// about self: a node does not register (the platform publishes the
// records), and nothing reports it down.
//
// The remote layer keeps a native link to every target while it is
// listed, as it does to Static seeds (remote.Config.Discovery), and the
// cluster package takes a target out of placement while it has no link.
//
// A target whose record goes away is withdrawn: a MemberDown with
// Incarnation 0. The remote layer then no longer lists the node
// (remote.Node.Members) and stops keeping it linked, but a link that is
// up stays up and its incarnation stays live: whether the node is dead
// is left to the links' heartbeats, since a record can go while its node
// still runs (a pod not ready, a DNS cache); such a node, its own
// provider still listing the others, keeps linking to them. A node whose
// record changes address is withdrawn at the old one and up at the new
// one; the remote layer dials the new address from then on.
//
// A resolution that fails (the server unreachable, a timeout, an SRV
// host that cannot be resolved) keeps the last view: nothing is
// withdrawn. Failures are counted (Stats), logged when the error changes
// and when resolving works again, and retried after Interval doubling
// per consecutive failure, up to 8 Intervals, jittered. A name that does
// not exist (NXDOMAIN) or has no records is an answer: nobody is there,
// and everyone is withdrawn.
type DNS struct {
	cfg DNSConfig
	res *net.Resolver

	// Counters, read by Stats.
	resolutions, errs, skipped, dropped atomic.Uint64
	targets                             atomic.Int64

	mu      sync.Mutex // protects following
	log     *slog.Logger
	started bool
	stopped bool
	cancel  context.CancelFunc // ends the resolver loop
	abort   context.CancelFunc // ends the notify loop without delivering the rest
	q       *evqueue.Queue[Event]
	done    chan struct{} // closed once both goroutines exited
}

// DNSStats counts what a DNS provider did.
type DNSStats struct {
	// Resolutions is the number of resolutions that answered (an empty
	// answer included).
	Resolutions uint64
	// Errors is the number that failed; each kept the last view.
	Errors uint64
	// Skipped counts targets left out: no node name or one that breaks
	// the rule, a second target for a name, an SRV host with no address.
	Skipped uint64
	// Dropped counts targets beyond MaxTargets.
	Dropped uint64
	// Targets is the number of nodes in the current view.
	Targets int
}

// NewDNS returns a DNS provider, not started.
func NewDNS(cfg DNSConfig) (*DNS, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &DNS{cfg: cfg, res: net.DefaultResolver, log: cfg.Logger}
	if cfg.Server != "" {
		server := cfg.Server
		d.res = &net.Resolver{
			PreferGo: true,
			Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var dialer net.Dialer
				return dialer.DialContext(ctx, network, server)
			},
		}
	}
	return d, nil
}

// Config returns the configuration in effect, defaults filled in.
func (d *DNS) Config() DNSConfig { return d.cfg }

// defaultLogger sets the logger when the configuration had none.
func (d *DNS) defaultLogger(l *slog.Logger) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.log == nil && l != nil {
		d.log = l
	}
}

// Stats returns the provider's counters.
func (d *DNS) Stats() DNSStats {
	return DNSStats{
		Resolutions: d.resolutions.Load(),
		Errors:      d.errs.Load(),
		Skipped:     d.skipped.Load(),
		Dropped:     d.dropped.Load(),
		Targets:     int(d.targets.Load()),
	}
}

// Start resolves the name once (within ctx and Timeout), reports every
// target found but self (by node name) as up, then resolves again every
// Interval until Stop. A first resolution that fails does not fail
// Start: it is retried as any other.
func (d *DNS) Start(ctx context.Context, self Member, notify func(Event)) error {
	if notify == nil {
		return errors.New("discovery: dns: Start: notify is nil")
	}
	if !nodename.Valid(self.Node) {
		return fmt.Errorf("discovery: dns: Member.Node %s: want %s", nodename.Quote(self.Node), nodename.Rule)
	}
	d.mu.Lock()
	switch {
	case d.stopped:
		d.mu.Unlock()
		return ErrStopped
	case d.started:
		d.mu.Unlock()
		return errors.New("discovery: dns: already started")
	}
	d.started = true
	if d.log == nil {
		d.log = slog.Default()
	}
	l := &dnsLoop{d: d, self: self.Node, log: d.log}
	loopCtx, cancel := context.WithCancel(context.Background())
	abortCtx, abort := context.WithCancel(context.Background())
	d.cancel, d.abort, d.q, d.done = cancel, abort, evqueue.New[Event](), make(chan struct{})
	d.mu.Unlock()
	// Outside the lock: Update and Stop need not wait for the server. A
	// Stop meanwhile cancels loopCtx, and the loop exits at once.
	l.round(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.q.Run(abortCtx, notify) }()
	go func() {
		defer wg.Done()
		l.run(loopCtx)
		d.q.Close() // the loop is the only pusher: nothing comes after
	}()
	go func() { wg.Wait(); abort(); close(d.done) }()
	return nil
}

// Update is a no-op: DNS records carry no metadata (the remote layer
// announces Draining and Meta over its links). ErrStopped after Stop.
func (d *DNS) Update(context.Context, Member) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return ErrStopped
	}
	return nil
}

// Stop ends the resolving, delivers the events already queued and waits
// for the notify goroutine to exit; if ctx ends first the rest is
// dropped and Stop returns ctx's error once the goroutines are gone.
// There is nothing to deregister. Idempotent.
func (d *DNS) Stop(ctx context.Context) error {
	d.mu.Lock()
	d.stopped = true
	started, cancel, abort, done := d.started, d.cancel, d.abort, d.done
	d.mu.Unlock()
	if !started {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		abort()
		<-done
		return fmt.Errorf("discovery: dns: stop: %w", ctx.Err())
	}
}
