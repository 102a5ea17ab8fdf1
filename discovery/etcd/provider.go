package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/discovery/internal/evqueue"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Etcd is a discovery.Provider backed by etcd (the package doc says how).
type Etcd struct {
	cfg     Config
	log     *slog.Logger
	updates chan updateReq

	dead      atomic.Bool
	deadCause atomic.Value // string
	relists   atomic.Int64 // listings after the first: the watch could not resume

	// Test hooks, set before Start.
	beforeTick  func(ctx context.Context) // runs before each renewal
	beforeApply func(ctx context.Context) // runs before the watcher handles a watch response
	crash       bool                      // Stop skips the revocation (a killed process)

	mu           sync.Mutex // protects following
	started      bool
	stopped      bool
	client       *clientv3.Client
	self         discovery.Member
	key          string
	lease        clientv3.LeaseID
	ttl          time.Duration // as etcd granted it
	table        *table
	queue        *evqueue.Queue[discovery.Event]
	stopRen      context.CancelFunc
	stopWat      context.CancelFunc
	abortNtf     context.CancelFunc
	renewerDone  chan struct{}
	watcherDone  chan struct{}
	notifierDone chan struct{}

	stopOnce sync.Once
	stopErr  error
}

var _ discovery.Provider = (*Etcd)(nil)

// tombRetention is how long a down incarnation's tombstone outlives the
// last sight of its key.
const tombRetention = 10 * time.Minute

// New validates cfg and returns a provider that has not connected yet.
func New(cfg Config) (*Etcd, error) {
	cfg, err := cfg.withDefaults(os.Getenv)
	if err != nil {
		return nil, err
	}
	return &Etcd{cfg: cfg, log: cfg.Logger, updates: make(chan updateReq)}, nil
}

// Config returns the configuration in effect, defaults filled in.
func (p *Etcd) Config() Config { return p.cfg }

// Start connects to etcd (ctx bounds that and the registration), grants
// self's lease, puts self's key bound to it, and starts the renewer, the
// watcher and the notify goroutine, which run until Stop. If it fails,
// nothing runs, nothing stays registered, and Start may be called again.
func (p *Etcd) Start(ctx context.Context, self discovery.Member, notify func(discovery.Event)) error {
	value, err := encode(self)
	if err != nil {
		return err
	}
	if notify == nil {
		return errors.New("discovery: etcd: Start: notify is nil")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stopped:
		return discovery.ErrStopped
	case p.started:
		return errors.New("discovery: etcd: already started")
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:          p.cfg.Endpoints,
		DialTimeout:        p.cfg.DialTimeout,
		TLS:                p.cfg.TLS,
		Username:           p.cfg.Username,
		Password:           p.cfg.Password,
		Context:            context.Background(),
		Logger:             zap.NewNop(),
		MaxCallRecvMsgSize: maxListBytes,
	})
	if err != nil {
		return fmt.Errorf("discovery: etcd: connecting to %v: %w", p.cfg.Endpoints, err)
	}
	key := memberKey(p.cfg.Prefix, self)
	sent := time.Now()
	grant, err := client.Grant(ctx, int64(p.cfg.TTL/time.Second))
	if err != nil {
		client.Close()
		return fmt.Errorf("discovery: etcd: granting a lease of %v for %s: %w", p.cfg.TTL, self.ID(), err)
	}
	if _, err := client.Put(ctx, key, string(value), clientv3.WithLease(grant.ID)); err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), p.cfg.RefreshEvery)
		_, _ = client.Revoke(rctx, grant.ID)
		cancel()
		client.Close()
		return fmt.Errorf("discovery: etcd: registering %s: %w", key, err)
	}
	p.started = true
	p.client = client
	p.self = self
	p.key = key
	p.lease = grant.ID
	p.ttl = time.Duration(grant.TTL) * time.Second
	p.table = newTable(self, tombRetention)
	p.queue = evqueue.New[discovery.Event]()

	var renCtx, watCtx, ntfCtx context.Context
	renCtx, p.stopRen = context.WithCancel(context.Background())
	watCtx, p.stopWat = context.WithCancel(context.Background())
	ntfCtx, p.abortNtf = context.WithCancel(context.Background())
	p.renewerDone = make(chan struct{})
	p.watcherDone = make(chan struct{})
	p.notifierDone = make(chan struct{})
	go p.runRenewer(renCtx, client, grant.ID, p.ttl, sent)
	go p.runWatcher(watCtx, client)
	go func() {
		defer close(p.notifierDone)
		p.queue.Run(ntfCtx, notify)
	}()
	p.log.Info("discovery: etcd: registered", "key", key, "lease", fmt.Sprintf("%x", grant.ID), "ttl", p.ttl)
	return nil
}

// Update republishes self (Draining, PoolWorkers, Meta, Addr); Node and
// Incarnation must not change. It waits for the renewer to put the new
// value. It returns discovery.ErrDeclaredDead once self was declared
// dead and discovery.ErrStopped once Stop began.
func (p *Etcd) Update(ctx context.Context, self discovery.Member) error {
	value, err := encode(self)
	if err != nil {
		return err
	}
	p.mu.Lock()
	started, stopped, cur := p.started, p.stopped, p.self
	p.mu.Unlock()
	switch {
	case stopped:
		return discovery.ErrStopped
	case !started:
		return errors.New("discovery: etcd: Update before Start")
	case self.Node != cur.Node || self.Incarnation != cur.Incarnation:
		return fmt.Errorf("discovery: etcd: Update: self is %s, want %s", self.ID(), cur.ID())
	}
	req := updateReq{value: value, reply: make(chan error, 1)}
	select {
	case p.updates <- req:
	case <-p.renewerDone:
		return p.renewerExitErr()
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.reply:
		if err == nil {
			p.mu.Lock()
			p.self = self
			p.mu.Unlock()
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Etcd) renewerExitErr() error {
	if p.dead.Load() {
		return discovery.ErrDeclaredDead
	}
	return discovery.ErrStopped
}

// Stop shuts down in this order: it stops the renewer and waits for it
// (from then on nothing puts self's key again), revokes self's lease
// (etcd deletes the key, and every watcher reports self down at once),
// stops the watcher and waits for it, lets the notify goroutine deliver
// what is queued and waits for it, then closes the client. Events about
// self are no longer delivered once Stop began. If ctx ends first,
// undelivered events are dropped; Stop still returns only when every
// goroutine has exited. It returns the revocation error, if any.
// Idempotent: later calls wait for the first and return its result.
func (p *Etcd) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(ctx) })
	return p.stopErr
}

func (p *Etcd) stop(ctx context.Context) error {
	p.mu.Lock()
	p.stopped = true
	started := p.started
	if started {
		p.table.stopping = true
	}
	p.mu.Unlock()
	if !started {
		return nil
	}
	defer p.client.Close()

	p.stopRen()
	<-p.renewerDone

	var err error
	if !p.crash {
		if _, rerr := p.client.Revoke(ctx, p.lease); rerr != nil && !errors.Is(rerr, rpctypes.ErrLeaseNotFound) {
			err = fmt.Errorf("discovery: etcd: revoking the lease of %s (its key goes when the lease expires, within %v): %w", p.key, p.ttl, rerr)
		} else {
			p.log.Info("discovery: etcd: deregistered", "key", p.key)
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

// declareDead stops renewing self for good, reports self down, and
// revokes self's lease (etcd may have kept it: a leader change extends
// every lease) so that every watcher agrees. It does nothing once Stop
// began: a stopping node revokes anyway.
func (p *Etcd) declareDead(client *clientv3.Client, lease clientv3.LeaseID, reason string) {
	p.mu.Lock()
	if p.stopped || p.dead.Load() {
		p.mu.Unlock()
		return
	}
	p.dead.Store(true)
	p.deadCause.Store(reason)
	p.log.Error("discovery: etcd: this incarnation is declared dead; no longer renewing its lease", "key", p.key, "reason", reason)
	p.queue.Push(p.table.selfDead(time.Now(), p.self)...)
	p.stopRen()
	p.mu.Unlock()

	// Bounded by the TTL: past it, etcd has let the lease go anyway.
	rctx, cancel := context.WithTimeout(context.Background(), p.cfg.TTL)
	defer cancel()
	if _, err := client.Revoke(rctx, lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		p.log.Warn("discovery: etcd: revoking the lease of an incarnation declared dead", "key", p.key, "err", err)
	}
}

// Dead reports whether this incarnation was declared dead, and why.
func (p *Etcd) Dead() (bool, string) {
	if !p.dead.Load() {
		return false, ""
	}
	cause, _ := p.deadCause.Load().(string)
	return true, cause
}
