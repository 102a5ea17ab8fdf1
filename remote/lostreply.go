package remote

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// Replies lost on a link that ended unread. A pending call is failed by
// the death of the path it was sent on (failVia), but its reply need not
// come back that way: the callee replies through its own pool to us when
// it has one for our incarnation, otherwise on the call's link, or, that
// one closed, on any other link of ours (sendReply, replyNative,
// poolLink.reroute). So when a link of a live peer ends before we have
// read everything it wrote there (we closed it: silence, bad input, a
// write error; or its connection failed), replies to calls sent on its
// other links may have been lost with it, and those calls would wait for
// ever, or until their ctx ends: against "liveness instead of timeouts".
// The simulator found it in the model (remote/internal/peers; make sim,
// seed 517568), whose rule this is:
//
//   - when such a link ends, every call of the peer that may have left
//     this process fails "may have executed" (not one still queued in a
//     proxy or a link's buffer: its reply cannot have been written yet);
//   - a link the peer dialed to us, it goes on writing replies on until
//     it learns (its reader ends, or the link falls silent for it: our
//     close may be lost like the rest), so calls written after the close
//     may lose theirs too. The link is remembered (peer.lost) until the
//     peer's fence naming it arrives (it writes one on its other outbound
//     links once it abandons the link, supersede.go): then what has left
//     fails; or, since it may have no other link to us to fence on, until
//     the heartbeat window and one interval have passed since our close,
//     by which its liveness has closed the link for silence (it checks
//     every quarter interval) and its replies go elsewhere: then what has
//     left fails as well. The peer is assumed to run our heartbeat
//     settings.
//
// A call so failed may have been answered, its reply on its way on
// another link: the reply is then a late reply, dropped and counted.
// Nothing here is written on the wire.

// lostLink is a link the peer dialed to us (its id for it) that we saw
// end unread at at (unix ns).
type lostLink struct {
	id uint64
	at int64
}

// endedUnread reports whether l ended before we read everything the peer
// wrote on it. Not so at the end of its stream (io.EOF: the peer closed
// or finished it, an idle close ended), after a goodbye, or at our own
// quiet closes (errLinkClosed: a lingering close's end, this node
// stopping), nor when our pool master closed it (closedHere: a stale or
// failed pool build, a pool torn down): calls sent on such a pool fail
// by their path, and the peer writes replies to other calls on it only
// when it has no other link of ours. Failing every call that left on
// those closes failed healthy calls under churn (the
// chaos suite's grain-partition, kill-flood and partition scenarios).
func endedUnread(l *link, reason error) bool {
	var here closedHere
	return !l.st.Has(peers.BitGoodbye) && !errors.Is(reason, io.EOF) && !errors.Is(reason, errLinkClosed) && !errors.Is(reason, errGoodbye) && !errors.As(reason, &here)
}

// lostUnread applies the rule above to l, a link of p that ended
// unread (endedUnread), unless p is gone or leaving; it returns how many
// calls it failed. Called by linkDown with no runtime lock held.
func (p *peer) lostUnread(l *link, reason error) int {
	p.mu.Lock()
	if p.endingLocked() {
		p.mu.Unlock()
		return 0
	}
	// A link a fence timed out on was abandoned by the peer already: it
	// writes nothing more there.
	if !l.outbound && l.dialID != 0 && !errors.Is(reason, errFenceTimeout) {
		p.lost = append(p.lost, lostLink{id: l.dialID, at: p.node.live.now().UnixNano()}) // the liveness step's clock (expireLost)
		if len(p.lost) > maxAbandoned {
			p.lost = append(p.lost[:0], p.lost[len(p.lost)-maxAbandoned:]...)
		}
	}
	p.mu.Unlock()
	return p.failLeft(fmt.Errorf("its %s closed before we read it to the end (%v): a reply may have been lost on it", l.kind(), reason))
}

// fencedLost handles the peer's fence naming ids, read on one of its
// links: those of its links we had seen end unread carried what they
// carried, and no more. It returns how many calls it failed.
func (p *peer) fencedLost(ids []uint64) int {
	p.mu.Lock()
	k := len(p.lost)
	p.lost = slices.DeleteFunc(p.lost, func(ll lostLink) bool { return slices.Contains(ids, ll.id) })
	named := k - len(p.lost)
	p.mu.Unlock()
	if named == 0 {
		return 0
	}
	return p.failLeft(errors.New("it fenced a link of its we had closed before reading it to the end: a reply may have been lost on it"))
}

// expireLost forgets the lost links of p older than wait (the liveness
// loop calls it with its tick's time): by then the peer has learned.
// What left meanwhile fails.
func (p *peer) expireLost(now time.Time, wait time.Duration) int {
	p.mu.Lock()
	if len(p.lost) == 0 || p.goneLocked() {
		p.mu.Unlock()
		return 0
	}
	cut := now.Add(-wait).UnixNano()
	k := len(p.lost)
	p.lost = slices.DeleteFunc(p.lost, func(ll lostLink) bool { return ll.at <= cut })
	expired := k - len(p.lost)
	p.mu.Unlock()
	if expired == 0 {
		return 0
	}
	return p.failLeft(fmt.Errorf("a link of its we had closed before reading it to the end carried what it wrote there for up to %v after: a reply may have been lost on it", wait))
}

// lostWait is how long after we saw a link of a peer's end unread the
// peer may still write on it (the rule above).
func (c Config) lostWait() time.Duration {
	return c.window() + c.Liveness.HeartbeatInterval
}

// failLeft fails every pending call of p that may have left this process
// (path.left), as "may have executed" with reason; it returns how many.
func (p *peer) failLeft(reason error) int {
	p.mu.Lock()
	var failed []*pendingCall
	for id, pc := range p.pending {
		if pc.via.left(pc) {
			failed = append(failed, pc)
			delete(p.pending, id)
		}
	}
	p.mu.Unlock()
	for _, pc := range failed {
		pc.fail(&actor.Error{Op: pc.op, Node: p.name, Incarnation: p.inc, Target: pc.tg.String(),
			Err: fmt.Errorf("%w (%v)", actor.ErrNodeDown, reason), Outcome: actor.MayHaveExecuted})
	}
	if len(failed) > 0 {
		p.node.stats.failedByLiveness.Add(uint64(len(failed)))
		p.node.peerLine(slog.LevelWarn, "calls failed: their replies may have been lost", "peer", p.name, "incarnation", actor.FormatIncarnation(p.inc), "calls", len(failed), "reason", reason)
	}
	return len(failed)
}
