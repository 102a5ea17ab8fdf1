package discovery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

var _ Leaser = (*Consul)(nil)

// maxLeaseOps is how many lease requests one provider has in flight to
// its agent at once; more wait their turn (or their ctx).
const maxLeaseOps = 16

// leaseOp takes a slot for one lease request; the returned func gives it
// back.
func (p *Consul) leaseOp(ctx context.Context) (func(), error) {
	select {
	case p.leaseOps <- struct{}{}:
		return func() { <-p.leaseOps }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Leases on Consul. All of an incarnation's leases share one session,
// created at the first Acquire and bound to two checks: serfHealth (the
// agent's node) and the incarnation's own TTL check. A lease is the KV
// key "mailroom/<service>/leases/<key>" acquired with that session (an
// atomic check-and-set: Consul grants it only if no session holds the
// key and no lock delay runs); its value is the holder's Member.ID().
//
// Consul ends the session, and so frees every key, when either check
// goes critical or is deregistered; its behaviour "delete" removes the
// keys, and the lock delay (ConsulConfig.LeaseLockDelay) keeps them from
// being taken for a moment longer.
//
// The holder does not wait to hear that. Each refresh of the TTL check
// that Consul acknowledged extends the leases' validity to TTL after the
// refresh was sent, by the monotonic clock; Consul runs the same TTL from
// when it received that refresh, later. So once the holder cannot
// refresh (cut off from its agent, starved, frozen) its leases become
// invalid, Valid turns false and Lost closes, before Consul can expire
// the check and grant the keys to another incarnation, with the lock
// delay as margin. The holder never regains leases after that (Acquire
// returns ErrLeaseLost): its check may have expired, so it is, or will
// be, declared dead.
type consulLeases struct {
	epoch time.Time // base of until, with a monotonic reading

	mu      sync.Mutex // protects following
	until   time.Duration
	sid     string // "" until the first Acquire
	lost    bool   // for good: no lease is granted again
	held    map[string]*consulLease
	expirer *time.Timer // fires at until; nil until the first lease
}

func newConsulLeases(registeredAt time.Time, ttl time.Duration) *consulLeases {
	return &consulLeases{epoch: registeredAt, until: ttl, held: map[string]*consulLease{}}
}

// extend records a refresh acknowledged by the agent, sent at sent.
func (l *consulLeases) extend(sent time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := sent.Sub(l.epoch) + ttl; u > l.until {
		l.until = u
	}
}

// validLocked reports whether leases still hold now.
func (l *consulLeases) validLocked(now time.Time) bool {
	return !l.lost && now.Sub(l.epoch) < l.until
}

// expire runs on the expirer's goroutine: it loses every lease once
// their validity ran out, or re-arms for the extended one.
func (l *consulLeases) expire(p *Consul) {
	l.mu.Lock()
	if l.lost {
		l.mu.Unlock()
		return
	}
	if left := l.until - time.Since(l.epoch); left > 0 {
		l.expirer.Reset(left)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	p.loseLeases(fmt.Sprintf("no refresh of our TTL check was acknowledged for %v: Consul may expire it and free our leases", p.cfg.TTL))
}

// loseAll marks the leases lost for good and returns those that were
// held, for the caller to close outside the lock.
func (l *consulLeases) loseAll() []*consulLease {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return nil
	}
	l.lost = true
	if l.expirer != nil {
		l.expirer.Stop()
	}
	out := make([]*consulLease, 0, len(l.held))
	for _, ls := range l.held {
		out = append(out, ls)
	}
	clear(l.held)
	return out
}

// loseLeases ends every lease of this incarnation, for good, and logs
// why when one was held.
func (p *Consul) loseLeases(reason string) {
	lost := p.leases.loseAll()
	for _, ls := range lost {
		ls.close()
	}
	if len(lost) > 0 {
		p.log.Error("discovery: consul: our leases are lost; whatever runs under them must stop", "id", p.id, "leases", len(lost), "reason", reason)
	}
}

func (p *Consul) leaseKV(key string) string {
	return "mailroom/" + p.cfg.Service + "/leases/" + key
}

// Acquire implements Leaser.
func (p *Consul) Acquire(ctx context.Context, key string) (Lease, error) {
	if err := validLeaseKey(key); err != nil {
		return nil, err
	}
	p.mu.Lock()
	started, stopped, self, l := p.started, p.stopped, p.self, p.leases
	p.mu.Unlock()
	switch {
	case stopped:
		return nil, ErrStopped
	case !started:
		return nil, errors.New("discovery: consul: Acquire before Start")
	}
	done, err := p.leaseOp(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	sid, err := p.leaseSession(ctx, l)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	_, mine := l.held[key]
	l.mu.Unlock()
	if mine {
		return nil, &LeaseHeldError{Key: key, Holder: self.ID()}
	}
	kv := &api.KVPair{Key: p.leaseKV(key), Value: []byte(self.ID()), Session: sid}
	ok, _, err := p.client.KV().Acquire(kv, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		// An ended session is refused too; ask Consul rather than
		// reading the error's text.
		if info, _, ierr := p.client.Session().Info(sid, (&api.QueryOptions{}).WithContext(ctx)); ierr == nil && info == nil {
			p.loseLeases("Consul ended our session")
			return nil, fmt.Errorf("%w: Consul ended our session", ErrLeaseLost)
		}
		return nil, fmt.Errorf("discovery: consul: acquiring lease %q: %w", key, err)
	}
	if !ok {
		holder, herr := p.Holder(ctx, key)
		if herr != nil {
			return nil, herr
		}
		return nil, &LeaseHeldError{Key: key, Holder: holder}
	}
	ls := &consulLease{p: p, key: key, lost: make(chan struct{})}
	l.mu.Lock()
	if !l.validLocked(time.Now()) {
		l.mu.Unlock()
		// Lost while we asked: the key goes with the session.
		return nil, ErrLeaseLost
	}
	l.held[key] = ls
	if l.expirer == nil {
		l.expirer = time.AfterFunc(l.until-time.Since(l.epoch), func() { l.expire(p) })
	}
	l.mu.Unlock()
	return ls, nil
}

// leaseSession returns this incarnation's session, creating it first.
func (p *Consul) leaseSession(ctx context.Context, l *consulLeases) (string, error) {
	p.sessMu.Lock()
	defer p.sessMu.Unlock()
	l.mu.Lock()
	sid, valid := l.sid, l.validLocked(time.Now())
	l.mu.Unlock()
	switch {
	case !valid:
		return "", ErrLeaseLost
	case sid != "":
		return sid, nil
	}
	entry := &api.SessionEntry{
		Name:      p.id,
		Checks:    []string{"serfHealth", p.checkID},
		Behavior:  api.SessionBehaviorDelete,
		LockDelay: p.cfg.LeaseLockDelay,
	}
	sid, _, err := p.client.Session().Create(entry, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("discovery: consul: creating the lease session of %s: %w", p.id, err)
	}
	l.mu.Lock()
	l.sid = sid
	l.mu.Unlock()
	return sid, nil
}

// Holder implements Leaser.
func (p *Consul) Holder(ctx context.Context, key string) (string, error) {
	if err := validLeaseKey(key); err != nil {
		return "", err
	}
	kv, _, err := p.client.KV().Get(p.leaseKV(key), (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("discovery: consul: reading lease %q: %w", key, err)
	}
	if kv == nil || kv.Session == "" {
		return "", nil
	}
	return string(kv.Value), nil
}

// consulLease is one key held under the incarnation's session.
type consulLease struct {
	p    *Consul
	key  string
	lost chan struct{}
	once sync.Once
}

func (ls *consulLease) Key() string           { return ls.key }
func (ls *consulLease) Lost() <-chan struct{} { return ls.lost }
func (ls *consulLease) close()                { ls.once.Do(func() { close(ls.lost) }) }

func (ls *consulLease) Valid() bool {
	select {
	case <-ls.lost:
		return false
	default:
	}
	l := ls.p.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validLocked(time.Now())
}

// Release deletes the key if our session still holds it (one
// transaction: check the session, then delete), so a key another
// incarnation took meanwhile is never touched.
func (ls *consulLease) Release(ctx context.Context) error {
	l := ls.p.leases
	l.mu.Lock()
	cur, held := l.held[ls.key]
	held = held && cur == ls
	if held {
		delete(l.held, ls.key)
	}
	sid := l.sid
	l.mu.Unlock()
	ls.close()
	if !held {
		return nil
	}
	done, err := ls.p.leaseOp(ctx)
	if err != nil {
		return fmt.Errorf("discovery: consul: releasing lease %q (it ends with our session anyway): %w", ls.key, err)
	}
	defer done()
	kvKey := ls.p.leaseKV(ls.key)
	ops := api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: kvKey, Session: sid}},
		{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: kvKey}},
	}
	// A transaction rolled back (not ok) means our session no longer
	// held the key: nothing of ours to delete.
	_, _, _, err = ls.p.client.Txn().Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("discovery: consul: releasing lease %q (it ends with our session anyway): %w", ls.key, err)
	}
	return nil
}
