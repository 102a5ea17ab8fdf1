package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// peer is one incarnation of another node: its links, the calls pinned to
// it, the remote watches on it, and the calls it is running here.
type peer struct {
	node     *Node
	name     string
	inc      uint64
	poolSize int

	// pathMu orders native sends against a pool taking over (barrier.go):
	// native sends and requests hold it shared, Publish exclusively.
	pathMu sync.RWMutex

	adm *admission // its calls and casts running here (admission.go)
	// nativeNoted is when its native traffic was last reported to
	// OnNativeTraffic (unix ns; hooks.go).
	nativeNoted atomic.Int64
	// running are its calls executing here (running.go).
	running runningCalls
	ctx     context.Context    // done when the incarnation is gone: its casts run under it
	cancel  context.CancelFunc // ends ctx

	mu      sync.Mutex // protects following
	out     *link      // our native outbound link
	links   map[*link]struct{}
	pending map[uint64]*pendingCall
	watches map[actor.PID]map[actor.PID]struct{} // remote target -> local watchers
	phase   peers.PeerState                      // up, leaving, gone: changed only by its Leave and End (state.go)
	drain   bool                                 // it announced it is draining
	meta    map[string]string                    // what it announced
	// dialed indexes the links it dialed to us by its id for them, until
	// their readers end; abandoned lists our links to it that we closed
	// while it lived (supersede.go).
	dialed    map[uint64]*link
	abandoned []uint64
	// lost are its links to us we saw end unread while it lived, at most
	// maxAbandoned, until its fence naming one arrives or it has learned
	// (lostreply.go).
	lost []lostLink
	// inWatches are the watches it holds on our actors (prune.go).
	inWatches map[watchKey]struct{}
}

func (p *peer) isGone() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.goneLocked()
}

// stillConnected reports whether p may still be alive: it is not gone,
// has not said goodbye, and has a link that has not closed.
func (p *peer) stillConnected() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.endingLocked() {
		return false
	}
	for l := range p.links {
		if !l.isClosed() {
			return true
		}
	}
	return false
}

func (p *peer) setAnnounce(draining bool, meta map[string]string) {
	p.mu.Lock()
	p.drain, p.meta = draining, meta
	p.mu.Unlock()
}

func newPeer(n *Node, name string, inc uint64, poolSize int) *peer {
	p := &peer{
		node: n, name: name, inc: inc, poolSize: poolSize,
		adm:     newAdmission(n.cfg.Limits.MaxInflightPerPeer, n.cfg.Limits.MaxInflightBytesPerPeer),
		links:   make(map[*link]struct{}),
		pending: make(map[uint64]*pendingCall),
		dialed:  make(map[uint64]*link),
		phase:   peers.PeerUp,
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// PeerInfo describes a peer incarnation.
type PeerInfo struct {
	Node        string
	Incarnation uint64
	// PoolWorkers is the number of workers in the peer's receiver pool,
	// as its handshake advertised them; discovery.NoReceiverPool when it
	// runs none (its Config.PoolSize is PoolDisabled).
	PoolWorkers int
	// Addr is the address this node last reached that incarnation at by
	// its own dial, or else the one it would dial first (WaitPeer's doc
	// says which). Only Node.Peer sets it.
	Addr     string
	Draining bool              // it announced it is draining
	Meta     map[string]string // what it announced over its links
}

func (p *peer) info() PeerInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PeerInfo{Node: p.name, Incarnation: p.inc, PoolWorkers: p.poolSize, Draining: p.drain, Meta: p.meta}
}

func (p *peer) addLink(l *link) {
	p.mu.Lock()
	p.links[l] = struct{}{}
	if l.outbound {
		p.fenceNewLocked(l)
	} else if l.dialID != 0 {
		p.dialed[l.dialID] = l
	}
	if l.outbound && l.role == wire.RoleNative && (p.out == nil || p.out.isClosed()) {
		p.out = l
	}
	p.mu.Unlock()
}

// inboundLinks counts the live links it dialed to us.
func (p *peer) inboundLinks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := 0
	for l := range p.links {
		if !l.outbound {
			c++
		}
	}
	return c
}

// outLink is the live native outbound link, or nil.
func (p *peer) outLink() *link {
	p.mu.Lock()
	l := p.out
	gone := p.endingLocked()
	p.mu.Unlock()
	if gone || l == nil || l.isClosed() {
		return nil
	}
	return l
}

// anyLink is a live link to this incarnation for control traffic: ours
// if we have one, else one the peer dialed.
func (p *peer) anyLink() *link {
	if l := p.outLink(); l != nil {
		return l
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		if l.role == wire.RoleNative && !l.isClosed() && !l.st.Has(peers.BitPeerIdle) { // (not one it closes for idleness: idle.go)
			return l
		}
	}
	return nil
}

// replyLink is any live link to this incarnation for a reply: ours, one
// the peer dialed, or a pool link (the peer reads replies on all of them).
func (p *peer) replyLink() *link {
	if l := p.anyLink(); l != nil {
		return l
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.goneLocked() {
		return nil
	}
	for l := range p.links {
		if !l.isClosed() && !l.writeClosed() && !l.st.Has(peers.BitPeerIdle) { // not a pool link ending (PoolLink.Finish), nor one closed idle
			return l
		}
	}
	return nil
}

// addPending registers a call; false when the incarnation is already
// gone. alone reports that no other call waits on p.
func (p *peer) addPending(id uint64, pc *pendingCall) (ok, alone bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.goneLocked() {
		return false, false
	}
	p.pending[id] = pc
	return true, len(p.pending) == 1
}

func (p *peer) takePending(id uint64) *pendingCall {
	p.mu.Lock()
	pc := p.pending[id]
	delete(p.pending, id)
	p.mu.Unlock()
	return pc
}

// failVia fails every pending call sent on path via.
func (p *peer) failVia(via path, reason error) int {
	p.mu.Lock()
	var failed []*pendingCall
	for id, pc := range p.pending {
		if pc.via == via {
			failed = append(failed, pc)
			delete(p.pending, id)
		}
	}
	p.mu.Unlock()
	for _, pc := range failed {
		pc.fail(pc.failure(p, reason))
	}
	return len(failed)
}

// failOnLink fails every pending call written to l (natively or by a
// proxy): after a clean goodbye on l they were not executed, otherwise
// they may have been.
func (p *peer) failOnLink(l *link, clean bool, reason error) int {
	p.mu.Lock()
	var failed []*pendingCall
	for id, pc := range p.pending {
		if pc.via == l || pc.sentOn.Load() == l {
			failed = append(failed, pc)
			delete(p.pending, id)
		}
	}
	p.mu.Unlock()
	for _, pc := range failed {
		if clean {
			pc.fail(&actor.Error{Op: pc.op, Node: p.name, Incarnation: p.inc, Target: pc.tg.String(),
				Err: fmt.Errorf("%w: %v before it took the call", actor.ErrDraining, reason), Outcome: actor.NotExecuted})
		} else {
			pc.fail(pc.failure(p, reason))
		}
	}
	return len(failed)
}

// linkDown handles the end of l.
func (l *link) linkDown(reason error) {
	n := l.node
	p := l.peer
	if p == nil {
		return
	}
	p.mu.Lock()
	delete(p.links, l)
	wasOut := p.out == l
	if wasOut {
		p.out = nil
	}
	gone := p.goneLocked()
	lastOfLeaver := p.phase == peers.PeerLeaving && len(p.links) == 0
	p.mu.Unlock()
	if lastOfLeaver {
		defer n.incarnationGone(p, errors.New("left (graceful stop)"))
	}
	// A pool link its dialer finished (a half-close, PoolLink.Finish)
	// ends with a clean EOF: no news.
	finished := l.role == wire.RolePool && !l.outbound && errors.Is(reason, io.EOF)
	quiet := errors.Is(reason, errLinkClosed) || errors.Is(reason, errGoodbye) || gone || finished || endOfIdle(l, reason)
	level := slog.LevelWarn
	if quiet {
		level = slog.LevelDebug
	}
	n.peerLine(level, "link down", "peer", p.name, "incarnation", actor.FormatIncarnation(p.inc), "link", l.kind(), "reason", reason)
	var failed int
	if said, clean := l.st.Goodbye(); said && clean {
		// A clean goodbye promised that whatever it had not answered it
		// never took: so too for calls that crossed the goodbye.
		failed = p.failOnLink(l, true, fmt.Errorf("%s left", p.name))
	} else if !l.st.Has(peers.BitIdleClosed) {
		failed = p.failVia(l, fmt.Errorf("link to %s closed: %v", p.name, reason))
	} // else nothing was pending on it when it closed idle, and a call refused by it since goes on another link (idle.go)
	if failed > 0 {
		n.stats.failedByLiveness.Add(uint64(failed))
	}
	if !gone && endedUnread(l, reason) {
		p.lostUnread(l, reason) // replies to calls sent on other links may have been lost on it (lostreply.go)
	}
	if wasOut && !gone {
		// Remote watches were registered over this link: the peer can no
		// longer tell us, so they end now with a node-down reason.
		p.fireWatches(fmt.Errorf("link to %s lost: %v", p.name, reason))
	}
	if l.role == wire.RoleNative {
		n.each(func(h *Hooks) {
			if h.OnLinkDown != nil {
				h.OnLinkDown(p.info(), l.outbound)
			}
		})
	}
}

// incarnationGone fails everything pinned to p and closes its links.
func (n *Node) incarnationGone(p *peer, reason error) {
	p.mu.Lock()
	if !p.markGoneLocked() {
		p.mu.Unlock()
		return
	}
	n.stats.peersGone.Add(1)
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	pending := p.pending
	p.pending = make(map[uint64]*pendingCall)
	p.meta = nil // what it announced goes with it
	inWatches := p.inWatches
	p.inWatches = nil
	p.mu.Unlock()
	// (fix) Every gone incarnation is buried: a hello from it later is
	// refused as declared dead, never attached to the ended peer.
	n.mu.Lock()
	if s := n.slots[p.name]; s != nil {
		s.bury(p.inc, n.live.now())
	}
	n.mu.Unlock()
	p.cancel() // its casts
	n.peerLine(slog.LevelWarn, "peer incarnation gone", "peer", p.name, "incarnation", actor.FormatIncarnation(p.inc), "reason", reason, "pending", len(pending))
	for _, pc := range pending {
		pc.fail(pc.failure(p, reason))
	}
	n.stats.failedByLiveness.Add(uint64(len(pending)))
	p.running.cancelAll(true)
	dropInWatches(n, inWatches) // prune.go
	p.fireWatches(reason)
	if pool := (*host)(n).route(p.name); pool != nil && pool.peer == p {
		(*host)(n).unpublishPool(pool, reason)
	}
	for _, l := range links {
		l.close(fmt.Errorf("incarnation gone: %w", reason))
	}
	n.each(func(h *Hooks) {
		if h.OnPeerGone != nil {
			h.OnPeerGone(p.info())
		}
	})
}

// addWatch records that local watcher watches target on p.
func (p *peer) addWatch(watcher, target actor.PID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.goneLocked() {
		return false
	}
	if p.watches == nil {
		p.watches = make(map[actor.PID]map[actor.PID]struct{})
	}
	w := p.watches[target]
	if w == nil {
		w = make(map[actor.PID]struct{})
		p.watches[target] = w
	}
	w[watcher] = struct{}{}
	return true
}

func (p *peer) removeWatch(watcher, target actor.PID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := p.watches[target]; w != nil {
		delete(w, watcher)
		if len(w) == 0 {
			delete(p.watches, target)
		}
	}
}

// fireWatches ends every remote watch on p with a node-down reason.
func (p *peer) fireWatches(reason error) {
	p.mu.Lock()
	watches := p.watches
	p.watches = nil
	p.mu.Unlock()
	for target, ws := range watches {
		err := &actor.Error{Op: "watch", Node: p.name, Incarnation: p.inc, Target: target.String(),
			Err: fmt.Errorf("%w (%v)", actor.ErrNodeDown, reason), Outcome: actor.MayHaveExecuted}
		for w := range ws {
			actorhooks.NotifyTerminated(p.node.sys, w, target, err)
		}
	}
}

func (p *peer) cancelAllRunning() {
	p.running.cancelAll(false)
	p.cancel() // and its casts
}
