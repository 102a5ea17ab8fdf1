package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/mailroom-go/mailroom/discovery/internal/evqueue"
	"github.com/mailroom-go/mailroom/internal/discoveryhooks"
)

var (
	// ErrStopped: the provider is stopping or stopped.
	ErrStopped = errors.New("discovery: stopped")
	// ErrDeclaredDead: this incarnation has been reported down (its check
	// went critical, typically because the process was frozen past its
	// TTL). The provider no longer refreshes it; the node must stop and
	// come back as a new incarnation.
	ErrDeclaredDead = errors.New("discovery: this incarnation was declared dead")
)

// Consul is a Provider backed by a Consul agent. Each incarnation is a
// service instance with a TTL check; membership comes from blocking
// health queries on the service.
//
// Instances. The instance ID is "<service>-<node>-<incarnation as 16 hex
// digits>", so every incarnation is its own instance; its check is
// "<instance ID>:ttl". The service meta carries node, incarnation (16 hex
// digits), addr (also split into the service Address and Port),
// pool_size (Member.PoolWorkers), draining ("true" or "false") and one
// "m_<key>" entry per Member.Meta key. Consul limits service meta to 64
// pairs, keys to 128 characters of [A-Za-z0-9_-] and values to 512
// characters, so Member.Meta holds at most 59 entries, keys of at most
// 126 characters, values of at most 512; Start and Update return an
// error naming an offending key.
//
// Goroutines, all owned by the provider and waited for by Stop:
//   - the TTL updater refreshes self's check every RefreshEvery and
//     republishes self for Update;
//   - the watcher runs the blocking queries and turns their results into
//     events by the membership rules below;
//   - the notify goroutine calls notify, one event at a time, in order.
//
// Membership rules:
//   - a new incarnation that is alive (check passing or warning) is
//     MemberUp;
//   - a known incarnation whose Addr, PoolWorkers, Draining or Meta
//     changed is MemberUpdated;
//   - a known incarnation whose check is critical or in maintenance is
//     MemberDown;
//   - a known incarnation absent from a result that follows another
//     without a watch error or an index reset was deregistered:
//     MemberDown; absent after a watch error or an index reset (the agent
//     or the servers restarted and forgot), it gets grace (2×TTL) to
//     re-register, staying up without an event if it does, MemberDown if
//     it does not;
//   - down is final: the incarnation is never reported up again, even if
//     its check passes later (an incarnation first seen critical is
//     ignored); it is forgotten once absent from the results for
//     DeregisterCriticalAfter.
//
// Self declared dead. The cluster treats an incarnation whose check went
// critical as dead for good. When that happens to self (the process was
// frozen past its TTL, or the agent could not be reached and let the check
// expire) the provider delivers MemberDown for self and stops refreshing:
// it never flips the check back to passing, and Update returns
// ErrDeclaredDead. The runtime must then stop the node; a restart is a new
// incarnation. The updater decides this, before each refresh, from:
//   - its own clock: if it did not run for more than TTL, the process was
//     frozen and the check has expired;
//   - the agent: if it reports the check critical;
//   - a refresh that completed more than TTL after the previous one was
//     sent: the check may have expired in between;
//   - the watcher: if the cluster reports self critical or deregistered.
//
// Agent restart. A dev-mode agent, or one that lost its data, forgets
// self's registration. When the agent reports the check missing (not
// critical), the updater re-registers the same instance, same incarnation,
// with a passing check, and logs it: it is not a death. An exception is a
// check missing after no successful refresh for DeregisterCriticalAfter:
// Consul may have reaped it after it went critical, so that is a death.
//
// Agent restart and tombstones. Observers apply the same rule: an instance
// that vanishes right after the watch failed, or after the service index
// went backwards (Consul lost its state), is not reported down at once; it
// gets grace (2×TTL) to re-register and, if it does, it stays up without
// any event. Only a check seen critical, a deregistration seen in an
// uninterrupted watch, or the end of grace is a death. Caveat: with one
// agent per node, an agent restart makes its node critical for other
// observers (Consul's serfHealth), which tombstone the incarnation, while
// the node itself may see no gap and carry on. Persistent agents (not
// -dev) keep registrations and check state across restarts, which narrows
// this to an agent that is down longer than it takes Consul to mark its
// node failed; the remote layer's incarnation handshake catches the rest.
type Consul struct {
	cfg       ConsulConfig
	log       *slog.Logger
	client    *api.Client
	httpc     *http.Client
	updates   chan updateReq
	updErrs   streakLog       // owned by the updater goroutine
	badIDs    map[string]bool // owned by the watcher goroutine
	dead      atomic.Bool
	deadCause atomic.Value // string
	// leaseOps bounds the lease requests (Acquire, Release) in flight to
	// the agent: a cluster activating thousands of grains at once would
	// otherwise open a connection each, past the agent's per-client limit
	// (Consul answers 429), and starve the TTL refresh.
	leaseOps chan struct{}

	// Test hooks, set before Start.
	beforeTick  func(ctx context.Context) // runs before each updater attempt
	beforeApply func(ctx context.Context) // runs before the watcher handles a query's answer
	crash       bool                      // Stop skips deregistration (a killed process)

	sessMu sync.Mutex // serialises creating the lease session

	mu       sync.Mutex // protects following
	leases   *consulLeases
	started  bool
	stopped  bool
	self     Member
	id       string
	checkID  string
	table    *memberTable
	queue    *evqueue.Queue[Event]
	stopUpd  context.CancelFunc
	stopWat  context.CancelFunc
	abortNtf context.CancelFunc

	updaterDone  chan struct{}
	watcherDone  chan struct{}
	notifierDone chan struct{}
	stopOnce     sync.Once
	stopErr      error
}

var _ Provider = (*Consul)(nil)

// NewConsul validates cfg and returns a provider that has not registered
// anything yet.
func NewConsul(cfg ConsulConfig) (*Consul, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ac := api.DefaultConfig()
	ac.Address = cfg.Address
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	ac.Transport = tr
	client, err := api.NewClient(ac)
	if err != nil {
		return nil, fmt.Errorf("discovery: consul config: Address %q: %w", cfg.Address, err)
	}
	return &Consul{
		cfg:      cfg,
		log:      cfg.Logger,
		client:   client,
		httpc:    ac.HttpClient,
		updates:  make(chan updateReq),
		updErrs:  streakLog{log: cfg.Logger, what: "refreshing our TTL check"},
		badIDs:   map[string]bool{},
		leaseOps: make(chan struct{}, maxLeaseOps),
	}, nil
}

func init() {
	discoveryhooks.DefaultLogger = func(p any, l *slog.Logger) {
		switch p := p.(type) {
		case *Consul:
			p.defaultLogger(l)
		case *DNS:
			p.defaultLogger(l)
		}
	}
}

// defaultLogger sets the logger when the configuration had none; a
// provider that is already running keeps the one it has.
func (p *Consul) defaultLogger(l *slog.Logger) {
	if p.log == nil && l != nil {
		p.log, p.updErrs.log = l, l
	}
}

// Config returns the configuration in effect, defaults filled in.
func (p *Consul) Config() ConsulConfig { return p.cfg }

// Start registers self (Incarnation must be set) with a passing TTL check
// and starts the updater, the watcher and the notify goroutine. ctx bounds
// the registration only; the goroutines run until Stop. If registration
// fails, nothing runs and Start may be called again.
func (p *Consul) Start(ctx context.Context, self Member, notify func(Event)) error {
	if p.log == nil {
		p.defaultLogger(slog.Default())
	}
	if err := validateSelf(self); err != nil {
		return err
	}
	if notify == nil {
		return errors.New("discovery: consul: Start: notify is nil")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stopped:
		return ErrStopped
	case p.started:
		return errors.New("discovery: consul: already started")
	}
	p.id = instanceID(p.cfg.Service, self)
	p.checkID = checkID(p.id)
	sent := time.Now()
	reg := registration(p.cfg, self, api.HealthPassing)
	if err := p.client.Agent().ServiceRegisterOpts(reg, api.ServiceRegisterOpts{}.WithContext(ctx)); err != nil {
		p.httpc.CloseIdleConnections()
		return fmt.Errorf("discovery: consul: registering %s: %w", p.id, err)
	}
	p.started = true
	p.self = self
	p.leases = newConsulLeases(sent, p.cfg.TTL)
	p.table = newMemberTable(self, p.grace(), p.cfg.DeregisterCriticalAfter)
	p.queue = evqueue.New[Event]()
	core := newTTLCore(p.cfg.TTL, p.cfg.DeregisterCriticalAfter, sent, time.Now())

	var updCtx, watCtx, ntfCtx context.Context
	updCtx, p.stopUpd = context.WithCancel(context.Background())
	watCtx, p.stopWat = context.WithCancel(context.Background())
	ntfCtx, p.abortNtf = context.WithCancel(context.Background())
	p.updaterDone = make(chan struct{})
	p.watcherDone = make(chan struct{})
	p.notifierDone = make(chan struct{})
	go p.runUpdater(updCtx, core, self)
	go p.runWatcher(watCtx)
	go func() {
		defer close(p.notifierDone)
		p.queue.Run(ntfCtx, notify)
	}()
	p.log.Info("discovery: consul: registered", "id", p.id, "service", p.cfg.Service, "ttl", p.cfg.TTL)
	return nil
}

// Update republishes self (Draining, PoolWorkers, Meta, Addr); Node and
// Incarnation must not change. It waits for the TTL updater to register
// the new state, which also refreshes the check. It returns
// ErrDeclaredDead once self was declared dead and ErrStopped once Stop
// began.
func (p *Consul) Update(ctx context.Context, self Member) error {
	if err := validateSelf(self); err != nil {
		return err
	}
	p.mu.Lock()
	started, stopped, cur := p.started, p.stopped, p.self
	p.mu.Unlock()
	switch {
	case stopped:
		return ErrStopped
	case !started:
		return errors.New("discovery: consul: Update before Start")
	case self.Node != cur.Node || self.Incarnation != cur.Incarnation:
		return fmt.Errorf("discovery: consul: Update: self is %s, want node %q incarnation %016x", self.ID(), cur.Node, cur.Incarnation)
	}
	req := updateReq{self: self, reply: make(chan error, 1)}
	select {
	case p.updates <- req:
	case <-p.updaterDone:
		return p.updaterExitErr()
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.reply:
		if err == nil {
			p.mu.Lock()
			p.self = self
			p.table.self = self
			p.mu.Unlock()
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Consul) updaterExitErr() error {
	if p.dead.Load() {
		return ErrDeclaredDead
	}
	return ErrStopped
}

// Stop shuts down in this order: it stops the TTL updater and waits for
// it (from then on nothing registers self again), deregisters self,
// stops the watcher and waits for it, then lets the notify goroutine
// deliver what is queued and waits for it. Events about self are no
// longer delivered once Stop began. If ctx ends first, undelivered events
// are dropped; Stop still returns only when every goroutine has exited.
// It returns the deregistration error, if any. Idempotent: later calls
// wait for the first and return its result.
func (p *Consul) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(ctx) })
	return p.stopErr
}

func (p *Consul) stop(ctx context.Context) error {
	p.mu.Lock()
	p.stopped = true
	started := p.started
	if started {
		p.table.stopping = true
	}
	p.mu.Unlock()
	defer p.httpc.CloseIdleConnections()
	if !started {
		return nil
	}

	p.stopUpd()
	<-p.updaterDone
	p.loseLeases("the provider is stopping")

	var err error
	if !p.crash {
		err = p.client.Agent().ServiceDeregisterOpts(p.id, (&api.QueryOptions{}).WithContext(ctx))
		if err != nil {
			err = fmt.Errorf("discovery: consul: deregistering %s (its check will expire and Consul will reap it): %w", p.id, err)
		} else {
			p.log.Info("discovery: consul: deregistered", "id", p.id)
		}
	}

	p.stopWat()
	<-p.watcherDone

	p.queue.Close()
	select {
	case <-p.notifierDone:
	case <-ctx.Done():
		p.abortNtf()
		<-p.notifierDone
	}
	p.abortNtf()
	return err
}

// declareDead stops refreshing self for good and reports self down. It
// does nothing once Stop began: a stopping node deregisters anyway.
func (p *Consul) declareDead(reason string) {
	if p.markDead(reason) {
		p.loseLeases("this incarnation was declared dead: " + reason)
	}
}

// markDead is declareDead under the lock; it reports whether self was
// newly declared dead.
func (p *Consul) markDead(reason string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.dead.Load() {
		return false
	}
	p.dead.Store(true)
	p.deadCause.Store(reason)
	p.log.Error("discovery: consul: this incarnation is declared dead; no longer refreshing it", "id", p.id, "reason", reason)
	p.queue.Push(p.table.selfDead(time.Now())...)
	p.stopUpd()
	return true
}

// Dead reports whether this incarnation was declared dead, and why.
func (p *Consul) Dead() (bool, string) {
	if !p.dead.Load() {
		return false, ""
	}
	cause, _ := p.deadCause.Load().(string)
	return true, cause
}

// grace is how long an instance that vanished after a watch error or an
// index reset may take to re-register before it is reported down.
func (p *Consul) grace() time.Duration { return 2 * p.cfg.TTL }
