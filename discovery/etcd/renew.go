package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// updateReq asks the renewer to put a new value for self.
type updateReq struct {
	value []byte
	reply chan error
}

// runRenewer renews self's lease every RefreshEvery and puts the values
// Update hands it, until ctx ends or self is declared dead.
//
// The lease holds, as etcd sees it, until at least ttl after the last
// renewal etcd answered, which it received after we sent it: so sent +
// ttl, by our own monotonic clock, is a time before which the lease
// surely holds. Past it, the lease may have expired and others may have
// reported this incarnation down; the renewer then declares self dead
// rather than renew a lease that may be gone, whether the process was
// frozen (SIGSTOP, a stuck machine) or etcd could not be reached. etcd
// answering that the lease is not found is a death too.
func (p *Etcd) runRenewer(ctx context.Context, client *clientv3.Client, lease clientv3.LeaseID, ttl time.Duration, lastOK time.Time) {
	defer close(p.renewerDone)
	tick := time.NewTicker(p.cfg.RefreshEvery)
	defer tick.Stop()
	errs := streakLog{log: p.log, what: "renewing our lease"}
	for {
		var req *updateReq
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case r := <-p.updates:
			req = &r
		}
		if req == nil && p.beforeTick != nil {
			if p.beforeTick(ctx); ctx.Err() != nil {
				return
			}
		}
		now := time.Now()
		if since := now.Sub(lastOK); since >= ttl {
			reason := fmt.Sprintf("the lease was last renewed %v ago and its TTL is %v: it may have expired (the process was frozen, or etcd was unreachable)", since.Round(time.Millisecond), ttl)
			p.declareDead(client, lease, reason)
			if req != nil {
				req.reply <- p.renewerExitErr()
			}
			return
		}
		// No attempt outlives the lease as far as we can tell.
		actx, cancel := context.WithDeadline(ctx, lastOK.Add(ttl))
		var err error
		if req != nil {
			_, err = client.Put(actx, p.key, string(req.value), clientv3.WithLease(lease))
		} else {
			_, err = client.KeepAliveOnce(actx, lease)
		}
		cancel()
		if ctx.Err() != nil {
			if req != nil {
				req.reply <- p.renewerExitErr()
			}
			return
		}
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			p.declareDead(client, lease, "etcd reports this incarnation's lease gone: it expired or was revoked")
			if req != nil {
				req.reply <- p.renewerExitErr()
			}
			return
		}
		if req != nil {
			if err != nil {
				err = fmt.Errorf("discovery: etcd: putting %s: %w", p.key, err)
			}
			req.reply <- err
			continue
		}
		if err != nil {
			errs.fail(err)
			continue
		}
		errs.ok()
		lastOK = now
	}
}
