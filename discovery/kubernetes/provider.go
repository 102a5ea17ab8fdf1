package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/discovery/internal/evqueue"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Provider is a discovery.Provider backed by the Kubernetes API; see the
// package doc for the membership rules.
type Provider struct {
	cfg    Config
	log    *slog.Logger
	client kubernetes.Interface
	lease  string // self's lease name

	updates chan updateReq
	dead    atomic.Bool

	// Test hooks (export_test.go), set before Start: beforeTick runs
	// before each renewal (the conformance suite freezes the renewer
	// with it); crash makes Stop keep the lease, as a kill would.
	beforeTick func(ctx context.Context)
	crash      atomic.Bool

	mu       sync.Mutex // protects following
	started  bool
	stopped  bool
	self     discovery.Member
	podUID   string
	view     *view
	queue    *evqueue.Queue[discovery.Event]
	stopRen  context.CancelFunc
	stopWat  context.CancelFunc
	abortNtf context.CancelFunc
	deadWhy  string

	renewerDone  chan struct{}
	watcherDone  chan struct{}
	notifierDone chan struct{}
	stopOnce     sync.Once
	stopErr      error
}

var _ discovery.Provider = (*Provider)(nil)

type updateReq struct {
	self  discovery.Member
	reply chan error
}

// New validates cfg and builds the API client (kubeconfig, or in-cluster
// config); it contacts nothing yet.
func New(cfg Config) (*Provider, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rc := cfg.REST
	if rc == nil {
		if cfg.Kubeconfig != "" {
			rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
			if err != nil {
				return nil, fmt.Errorf("discovery: kubernetes: kubeconfig %s: %w", cfg.Kubeconfig, err)
			}
		} else if rc, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("discovery: kubernetes: no Kubeconfig (nor KUBECONFIG) and not in a cluster: %w", err)
		}
	}
	rc = rest.CopyConfig(rc)
	if rc.UserAgent == "" {
		rc.UserAgent = "mailroom-discovery"
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("discovery: kubernetes: client: %w", err)
	}
	return &Provider{cfg: cfg, log: cfg.Logger, client: client, updates: make(chan updateReq)}, nil
}

// Config returns the configuration in effect, defaults filled in.
func (p *Provider) Config() Config { return p.cfg }

// permission wraps an API error; a Forbidden one says which permission
// the provider's RBAC lacks.
func permission(err error, verb, resource string) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("discovery: kubernetes: missing RBAC permission %q on %s (see deploy/kubernetes/rbac.yaml): %w", verb, resource, err)
	}
	return fmt.Errorf("discovery: kubernetes: %s %s: %w", verb, resource, err)
}

// Start reads this node's pod (its UID), creates or takes over its lease,
// lists the pods and leases once (so a provider without its RBAC
// permissions fails here, naming the one it lacks), then starts the
// renewer, the watcher and the notify goroutine. ctx bounds Start only.
func (p *Provider) Start(ctx context.Context, self discovery.Member, notify func(discovery.Event)) error {
	if err := validateSelf(self); err != nil {
		return err
	}
	if notify == nil {
		return errors.New("discovery: kubernetes: Start: notify is nil")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stopped:
		return discovery.ErrStopped
	case p.started:
		return errors.New("discovery: kubernetes: already started")
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	ns := p.cfg.Namespace
	pod, err := p.client.CoreV1().Pods(ns).Get(ctx, p.cfg.PodName, metav1.GetOptions{})
	if err != nil {
		return permission(err, "get", "pods "+ns+"/"+p.cfg.PodName)
	}
	p.podUID = string(pod.UID)
	p.lease = leaseName(p.cfg.LeasePrefix, self.Node)
	// The lease's renewal time is no earlier than written: the renewer
	// counts its gap from there, not from when its goroutine first runs.
	written := time.Now()
	if err := p.publish(ctx, self, true); err != nil {
		return err
	}
	v := newView(self, 2*time.Minute, p.cfg.RenewEvery)
	if _, _, err := p.relist(ctx, v, false, true); err != nil { // p.mu is held
		_ = p.client.CoordinationV1().Leases(ns).Delete(context.WithoutCancel(ctx), p.lease, metav1.DeleteOptions{})
		return err
	}
	p.started, p.self, p.view, p.queue = true, self, v, evqueue.New[discovery.Event]()
	p.queue.Push(v.events(time.Now())...)
	var renCtx, watCtx, ntfCtx context.Context
	renCtx, p.stopRen = context.WithCancel(context.Background())
	watCtx, p.stopWat = context.WithCancel(context.Background())
	ntfCtx, p.abortNtf = context.WithCancel(context.Background())
	p.renewerDone, p.watcherDone, p.notifierDone = make(chan struct{}), make(chan struct{}), make(chan struct{})
	go p.runRenewer(renCtx, self, written)
	go p.runWatcher(watCtx)
	go func() {
		defer close(p.notifierDone)
		p.queue.Run(ntfCtx, notify)
	}()
	p.log.Info("discovery: kubernetes: registered", "lease", ns+"/"+p.lease, "pod", p.cfg.PodName, "ttl", p.cfg.LeaseTTL)
	return nil
}

// publish writes self's lease: create (or take over) when first, else a
// merge patch of its annotations and renewal time.
func (p *Provider) publish(ctx context.Context, self discovery.Member, first bool) error {
	leases := p.client.CoordinationV1().Leases(p.cfg.Namespace)
	now := time.Now()
	want := newLease(p.lease, self, p.cfg.PodName, p.podUID, p.cfg.LeaseTTL, now)
	if first {
		_, err := leases.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// A previous incarnation's lease: take it over.
			var cur *coordv1.Lease
			if cur, err = leases.Get(ctx, p.lease, metav1.GetOptions{}); err == nil {
				want.ResourceVersion = cur.ResourceVersion
				_, err = leases.Update(ctx, want, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return permission(err, "create/update", "leases.coordination.k8s.io "+p.cfg.Namespace+"/"+p.lease)
		}
		return nil
	}
	ann := map[string]*string{}
	for k, v := range want.Annotations {
		ann[k] = &v
	}
	p.mu.Lock()
	old := p.self
	p.mu.Unlock()
	for k := range old.Meta {
		if _, ok := self.Meta[k]; !ok {
			ann[annMetaPrefix+k] = nil // removed
		}
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": ann},
		"spec":     map[string]any{"renewTime": want.Spec.RenewTime, "holderIdentity": want.Spec.HolderIdentity, "leaseDurationSeconds": want.Spec.LeaseDurationSeconds},
	})
	if err != nil {
		return err
	}
	_, err = leases.Patch(ctx, p.lease, types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		// Deleted under us (by hand, or the namespace was reset): recreate
		// it, same incarnation.
		p.log.Warn("discovery: kubernetes: our lease was deleted; recreating it", "lease", p.lease)
		return p.publish(ctx, self, true)
	}
	if err != nil {
		return permission(err, "patch", "leases.coordination.k8s.io "+p.cfg.Namespace+"/"+p.lease)
	}
	return nil
}

// Update republishes self (Draining, PoolWorkers, Meta, Addr) through the
// renewer, which writes the lease; Node and Incarnation must not change.
func (p *Provider) Update(ctx context.Context, self discovery.Member) error {
	if err := validateSelf(self); err != nil {
		return err
	}
	p.mu.Lock()
	started, stopped, cur := p.started, p.stopped, p.self
	p.mu.Unlock()
	switch {
	case p.dead.Load():
		return discovery.ErrDeclaredDead
	case stopped:
		return discovery.ErrStopped
	case !started:
		return errors.New("discovery: kubernetes: Update before Start")
	case self.Node != cur.Node || self.Incarnation != cur.Incarnation:
		return fmt.Errorf("discovery: kubernetes: Update: self is %s, want %s", self.ID(), cur.ID())
	}
	req := updateReq{self: self, reply: make(chan error, 1)}
	select {
	case p.updates <- req:
	case <-p.renewerDone:
		if p.dead.Load() {
			return discovery.ErrDeclaredDead
		}
		return discovery.ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop stops renewing, deletes self's lease (others report it down at
// once), stops the watcher, lets the notify goroutine deliver what is
// queued (until ctx ends) and waits for every goroutine. Idempotent.
func (p *Provider) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(ctx) })
	return p.stopErr
}

func (p *Provider) stop(ctx context.Context) error {
	p.mu.Lock()
	p.stopped = true
	started := p.started
	p.mu.Unlock()
	if !started {
		return nil
	}
	p.stopRen()
	<-p.renewerDone
	var err error
	if !p.dead.Load() && !p.crash.Load() {
		err = p.client.CoordinationV1().Leases(p.cfg.Namespace).Delete(ctx, p.lease, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			err = fmt.Errorf("discovery: kubernetes: deleting lease %s (it expires in %v): %w", p.lease, p.cfg.LeaseTTL, err)
		} else {
			err = nil
		}
	}
	p.stopWat()
	<-p.watcherDone
	p.queue.Close()
	select {
	case <-p.notifierDone:
	case <-ctx.Done():
	}
	p.abortNtf()
	<-p.notifierDone
	return err
}

// declareDead stops renewing for good and reports self down.
func (p *Provider) declareDead(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || !p.dead.CompareAndSwap(false, true) {
		return
	}
	p.deadWhy = reason
	p.log.Error("discovery: kubernetes: this incarnation is declared dead; no longer renewing its lease", "node", p.self.Node, "reason", reason)
	p.queue.Push(discovery.Event{Type: discovery.MemberDown, Member: p.self})
	p.stopRen()
}

// Dead reports whether this incarnation was declared dead, and why.
func (p *Provider) Dead() (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead.Load(), p.deadWhy
}
