package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

var (
	// errGone: a watch's resource version is too old (410 Gone); relist.
	errGone = errors.New("resource version expired (410 Gone)")
	// errBlind: the watch shows nothing, not even this node's renewals;
	// relist.
	errBlind = errors.New("the watch shows no renewals")
)

// runRenewer renews self's lease at once, then every RenewEvery, and
// publishes Update requests. If its own clock shows it did not run for
// LeaseTTL since the last renewal it wrote (written, at first: the
// registration), the process was frozen, the lease has expired and others
// reported this incarnation down: it declares itself dead instead of
// renewing. That holds for a freeze before this goroutine first ran, too:
// counting from its own start, a node frozen right after registering
// would renew once thawed, its watch relisted blind to its own expiry,
// and it would never learn the cluster had buried it. Failed
// renewals do not kill it, however long they fail: the whole cluster may
// be cut off alike (an apiserver restart, after which the apiserver even
// answers Forbidden for a moment, its RBAC cache not yet filled), and the
// view stands meanwhile (see view.sight).
func (p *Provider) runRenewer(ctx context.Context, self discovery.Member, written time.Time) {
	defer close(p.renewerDone)
	t := time.NewTicker(p.cfg.RenewEvery)
	defer t.Stop()
	last := written
	lastOK := last
	fails := 0
	now := make(chan struct{}, 1)
	now <- struct{}{} // the first renewal: at once
	for {
		var req *updateReq
		select {
		case <-ctx.Done():
			return
		case <-now:
		case <-t.C:
		case r := <-p.updates:
			req = &r
			self = r.self
		}
		if p.beforeTick != nil {
			p.beforeTick(ctx)
		}
		if ctx.Err() != nil {
			if req != nil {
				req.reply <- discovery.ErrStopped
			}
			return
		}
		// Others report this incarnation down once its lease was not seen
		// renewed for a TTL; thawed just after that, the gap since this
		// renewer last ran is only a few milliseconds above TTL, less
		// than the clocks and ticks of two processes can tell apart. So
		// the renewer gives up a little earlier: half a renewal, or half
		// the slack between RenewEvery and the TTL when that is less (so
		// a renewer on time never does). A pause that long is no healthy
		// node's, and a node that gives up early only stops: it never
		// runs beside a successor.
		if gap, limit := time.Since(last), p.cfg.LeaseTTL-min(p.cfg.RenewEvery, p.cfg.LeaseTTL-p.cfg.RenewEvery)/2; gap > limit {
			p.declareDead(fmt.Sprintf("the renewer did not run for %v, close to or more than the lease TTL %v (frozen?)", gap.Round(time.Millisecond), p.cfg.LeaseTTL))
			if req != nil {
				req.reply <- discovery.ErrDeclaredDead
			}
			return
		}
		last = time.Now()
		cctx, cancel := context.WithTimeout(ctx, p.cfg.RenewEvery)
		err := p.publish(cctx, self, false)
		cancel()
		if err == nil {
			if req != nil {
				p.mu.Lock()
				p.self = self
				p.mu.Unlock()
			}
			if fails > 0 {
				p.log.Info("discovery: kubernetes: renewing the lease works again", "after_failures", fails, "unrenewed_for", time.Since(lastOK).Round(time.Millisecond))
			}
			fails = 0
			lastOK = time.Now()
		} else if ctx.Err() == nil {
			fails++
			if fails == 1 || fails%10 == 0 {
				p.log.Warn("discovery: kubernetes: renewing the lease failed", "err", err, "failures", fails)
			}
		}
		if req != nil {
			if err != nil && ctx.Err() != nil {
				err = discovery.ErrStopped // Stop began during the write
			}
			req.reply <- err
		}
	}
}

// runWatcher lists, then watches pods and leases from the listed
// resource versions; it relists on 410 Gone and after errors, backing
// off. While the API is unreachable the last view stands: nothing
// expires, nothing is reported (view.sight); after a relist, or once its
// own renewals show again, every lease gets one TTL from then to be seen
// renewed.
func (p *Provider) runWatcher(ctx context.Context) {
	defer close(p.watcherDone)
	v := p.view
	podsRV, leasesRV := "", ""
	fails := 0
	for ctx.Err() == nil {
		if podsRV == "" {
			var err error
			podsRV, leasesRV, err = p.relist(ctx, v, fails > 0, false)
			if err != nil {
				fails++
				p.logWatchErr("listing", err, fails)
				p.sleep(ctx, fails)
				continue
			}
			fails = 0
			p.apply(v)
		}
		err := p.watch(ctx, v, &podsRV, &leasesRV)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errGone):
			p.log.Info("discovery: kubernetes: watch expired; relisting")
			podsRV = ""
			fails = 0
		default:
			fails++
			p.logWatchErr("watching", err, fails)
			p.sleep(ctx, fails)
			podsRV = "" // relist, fresh (fails > 0)
		}
	}
}

func (p *Provider) logWatchErr(what string, err error, fails int) {
	if fails == 1 || fails%10 == 0 {
		p.log.Warn("discovery: kubernetes: "+what+" failed; keeping the last view", "err", err, "failures", fails)
	}
}

func (p *Provider) sleep(ctx context.Context, fails int) {
	d := p.cfg.BackoffMin << min(fails-1, 20)
	d = min(d, p.cfg.BackoffMax)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// apply pushes the view's events and checks whether self was reported down.
func (p *Provider) apply(v *view) {
	p.mu.Lock()
	v.stopping = p.stopped
	inc := p.self.Incarnation
	evs := v.events(time.Now())
	p.mu.Unlock()
	if p.dead.Load() {
		return
	}
	for _, ev := range evs {
		p.log.Debug("discovery: kubernetes: member event", "type", ev.Type.String(), "member", ev.Member.Node, "incarnation", actor.FormatIncarnation(ev.Member.Incarnation), "draining", ev.Member.Draining)
	}
	p.queue.Push(evs...)
	if v.selfDown(inc) {
		p.declareDead("the cluster's view reports this incarnation down (lease expired, pod not ready, deleted or replaced)")
	}
}

func (p *Provider) relist(ctx context.Context, v *view, fresh, locked bool) (podsRV, leasesRV string, err error) {
	ns := p.cfg.Namespace
	pods, err := p.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: p.cfg.LabelSelector})
	if err != nil {
		return "", "", permission(err, "list", "pods in namespace "+ns)
	}
	leases, err := p.client.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{LabelSelector: leaseLabel + "=true"})
	if err != nil {
		return "", "", permission(err, "list", "leases.coordination.k8s.io in namespace "+ns)
	}
	ps := make(map[string]podState, len(pods.Items))
	for i := range pods.Items {
		ps[pods.Items[i].Name] = podStateOf(&pods.Items[i])
	}
	var ls []leaseState
	for i := range leases.Items {
		if l, err := p.leaseOf(&leases.Items[i]); err == nil {
			ls = append(ls, l)
		}
	}
	if locked {
		v.relisted(ps, ls, time.Now(), fresh)
	} else {
		p.mu.Lock()
		v.relisted(ps, ls, time.Now(), fresh)
		p.mu.Unlock()
	}
	return pods.ResourceVersion, leases.ResourceVersion, nil
}

// leaseOf parses a lease and logs (once per resource version) one that
// is ignored.
func (p *Provider) leaseOf(l *coordv1.Lease) (leaseState, error) {
	s, err := parseLease(l)
	if err != nil {
		p.log.Debug("discovery: kubernetes: ignoring a lease", "err", err)
	}
	return s, err
}

func podStateOf(pod *corev1.Pod) podState {
	s := podState{uid: string(pod.UID), running: pod.Status.Phase == corev1.PodRunning, terminating: pod.DeletionTimestamp != nil}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			s.ready = c.Status == corev1.ConditionTrue
		}
	}
	return s
}

// watch follows pods and leases until an error; a watch the server ends
// (its timeout) is reopened from the last resource version seen.
func (p *Provider) watch(ctx context.Context, v *view, podsRV, leasesRV *string) error {
	ns := p.cfg.Namespace
	open := func(pods bool) (watch.Interface, error) {
		if pods {
			w, err := p.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: p.cfg.LabelSelector, ResourceVersion: *podsRV, AllowWatchBookmarks: true})
			return w, wrapWatchErr(err, "watch", "pods in namespace "+ns)
		}
		w, err := p.client.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{LabelSelector: leaseLabel + "=true", ResourceVersion: *leasesRV, AllowWatchBookmarks: true})
		return w, wrapWatchErr(err, "watch", "leases.coordination.k8s.io in namespace "+ns)
	}
	pw, err := open(true)
	if err != nil {
		return err
	}
	defer func() { pw.Stop() }()
	lw, err := open(false)
	if err != nil {
		return err
	}
	defer func() { lw.Stop() }()
	tick := time.NewTicker(min(p.cfg.RenewEvery/2, 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			// An open watch that shows not even this node's own renewals
			// for a TTL may be stuck (the apiserver shutting down keeps
			// its watches open while it refuses requests): relist.
			p.mu.Lock()
			seen := v.selfSeen()
			p.mu.Unlock()
			if since := time.Since(seen); !seen.IsZero() && !p.dead.Load() && since > p.cfg.LeaseTTL {
				return fmt.Errorf("%w: this node's own lease not seen renewed for %v", errBlind, since.Round(time.Millisecond))
			}
		case ev, ok := <-pw.ResultChan():
			if !ok {
				pw.Stop()
				if pw, err = open(true); err != nil {
					return err
				}
				continue
			}
			if err := p.podEvent(v, ev, podsRV); err != nil {
				return err
			}
		case ev, ok := <-lw.ResultChan():
			if !ok {
				lw.Stop()
				if lw, err = open(false); err != nil {
					return err
				}
				continue
			}
			if err := p.leaseEvent(v, ev, leasesRV); err != nil {
				return err
			}
		}
		p.apply(v)
	}
}

func wrapWatchErr(err error, verb, what string) error {
	if err == nil {
		return nil
	}
	if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
		return errGone
	}
	return permission(err, verb, what)
}

func eventErr(ev watch.Event) error {
	if st, ok := ev.Object.(*metav1.Status); ok {
		if st.Code == http.StatusGone {
			return errGone
		}
		return fmt.Errorf("watch error: %s", st.Message)
	}
	return fmt.Errorf("watch error: %v", ev.Object)
}

func (p *Provider) podEvent(v *view, ev watch.Event, rv *string) error {
	if ev.Type == watch.Error {
		return eventErr(ev)
	}
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	*rv = pod.ResourceVersion
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Type {
	case watch.Added, watch.Modified:
		v.setPod(pod.Name, podStateOf(pod))
	case watch.Deleted:
		v.delPod(pod.Name)
	}
	return nil
}

func (p *Provider) leaseEvent(v *view, ev watch.Event, rv *string) error {
	if ev.Type == watch.Error {
		return eventErr(ev)
	}
	l, ok := ev.Object.(*coordv1.Lease)
	if !ok {
		return nil
	}
	*rv = l.ResourceVersion
	if ev.Type == watch.Bookmark {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	node := l.Annotations[annNode]
	if ev.Type == watch.Deleted {
		if cur, ok := v.leases[node]; ok && actorInc(l) == cur.member.Incarnation {
			v.delLease(node)
		}
		return nil
	}
	if s, err := p.leaseOf(l); err == nil {
		v.setLease(s, time.Now())
	}
	return nil
}

// actorInc is the incarnation a lease names, 0 if none.
func actorInc(l *coordv1.Lease) uint64 {
	inc, _ := actor.ParseIncarnation(l.Annotations[annIncarnation])
	return inc
}
