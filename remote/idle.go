package remote

import (
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/mailroom-go/mailroom/internal/wire"
	"github.com/mailroom-go/mailroom/remote/internal/peers"
)

// Idle native links. A node closes its native outbound link to a peer
// incarnation (peer.out) once the link has carried nothing but heartbeats,
// in either direction, for Config.Liveness.LinkIdleTimeout while nothing was pinned
// to it, so that links grow with active peers, not with every node ever
// called. The liveness loop checks (closeIdleLinks); the link closes only
// when all of these hold:
//
//   - the node dialed it for traffic: the node name is listed by discovery
//     (a name with no link that discovery does not list is forgotten after
//     ForgetNodesAfter, and later calls would find no address), and it is
//     not kept linked (a seed the node keeps linked, a node the user
//     Connected to: slot.kept, slot.pinned); no dial to it is running;
//   - no pool is published toward the node, nor being built (no other
//     live outbound link to the incarnation: pool links are dialed before
//     their pool is published);
//   - nothing is pinned to the incarnation: no call or request waits for
//     it (peer.pending, over any path), we watch none of its actors
//     (peer.watches; the watches ride on this link, and its loss would
//     fire them), it watches none of ours (peer.inWatches), and no call
//     taken from this link is unanswered (link.owed);
//   - the incarnation is neither gone nor leaving, and the link is open.
//
// Heartbeats keep going on an idle link until it closes. Time spent
// pinned counts as busy: the timeout runs from the later of the last data
// frame and the last check that found something pinned.
//
// The close keeps every guarantee of a link in use. Under the node's and
// the peer's lock (so no call, watch or dial can slip in between the check
// and the close), the link stops taking frames (a writer that finds it so
// takes a new link: retryFresh), leaves peer.out (the next message dials a
// new link) and is recorded as abandoned (supersede.go): every link dialed
// later to the incarnation, native or pool, starts with a fence naming it,
// so the peer delivers nothing from a new link before this one's reader
// has ended, and a sender's order holds. What its buffer holds is written,
// then the idle-close control frame, then the writer half-closes (FIN, or
// TLS close_notify), and the reader keeps reading until the peer closes
// its side: a lingering close, so nothing written is reset away. The
// peer, told by the frame, logs at Debug, writes nothing more on the link
// (its control traffic takes another link) and closes it once read to the
// end. Neither side's incarnation, calls or watches are affected.

// idleCloseFrame is the whole CtlIdleClose frame: it has no fields.
var idleCloseFrame = []byte{0, 0, 0, 2, byte(wire.KindControl), byte(wire.CtlIdleClose)}

// closeIdleLinks closes the native outbound links idle for
// LinkIdleTimeout (each liveness step calls it with its time: tick).
func (lv *liveness) closeIdleLinks(now time.Time) {
	n := lv.node
	timeout := n.cfg.Liveness.LinkIdleTimeout
	if timeout <= 0 {
		return
	}
	for _, p := range n.livePeers() {
		if l := p.outLink(); l != nil && l.idleFor(now, timeout) {
			lv.closeIdle(p, l, now)
		}
	}
}

// idleFor notes the data frames l carried since the last look and reports
// whether it has carried none for d. Pings and pongs do not count.
func (l *link) idleFor(now time.Time, d time.Duration) bool {
	l.mu.Lock()
	out := l.seq - l.ctlOut.Load() // ctlOut is added after seq: never above it
	l.mu.Unlock()
	data := out + l.dataIn.Load()
	if data != l.idleMark.Load() {
		l.idleMark.Store(data)
		l.idleSince.Store(now.UnixNano())
		return false
	}
	return now.Sub(time.Unix(0, l.idleSince.Load())) >= d
}

// closeIdle closes p's idle out link l if nothing keeps it (the rule
// above); otherwise its idle time starts again from now.
func (lv *liveness) closeIdle(p *peer, l *link, now time.Time) bool {
	n := lv.node
	n.mu.Lock()
	p.mu.Lock()
	why := lv.idleKeepsLocked(p, l)
	if why == "" && !l.startIdleClose() {
		why = "it closed"
	}
	if why == "" {
		p.out = nil
		if l.dialID != 0 && l.st.MarkFenced() {
			p.abandonedLocked(l.dialID)
		}
	}
	p.mu.Unlock()
	n.mu.Unlock()
	if why != "" {
		l.idleSince.Store(now.UnixNano())
		return false
	}
	n.stats.linksIdleClosed.Add(1)
	n.peerLine(slog.LevelDebug, "closing an idle link", "peer", l.ends.PeerNode, "link", l.kind(), "idle", n.cfg.Liveness.LinkIdleTimeout)
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return true
}

// idleKeepsLocked says what keeps p's out link l open ("" if nothing).
// Under n.mu and p.mu.
func (lv *liveness) idleKeepsLocked(p *peer, l *link) string {
	n := lv.node
	s := n.slots[p.name]
	switch {
	case n.closing:
		return "the node is stopping"
	case s == nil || s.cur != p:
		return "not the current incarnation"
	case !s.marks.Listed():
		return "discovery does not list it"
	case s.marks.Kept() || s.marks.Pinned():
		return "kept linked (a seed, Connect)"
	case s.dialing != nil:
		return "a dial is running"
	case (*host)(n).route(p.name) != nil:
		return "a pool is published"
	case p.endingLocked() || p.out != l:
		return "not its out link"
	case len(p.pending) > 0:
		return "calls are pending"
	case len(p.watches) > 0 || len(p.inWatches) > 0:
		return "watches"
	case l.owed.Load() != 0:
		return "calls taken from it are unanswered"
	}
	for m := range p.links {
		if m != l && m.outbound && !m.isClosed() {
			return "another outbound link (a pool being built or in use)"
		}
	}
	return ""
}

// startIdleClose makes l take no more frames but the idle-close frame,
// written after what it holds, and has the writer half-close the link
// then. False if it was already closing. Under p.mu.
func (l *link) startIdleClose() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st.Refuses() {
		return false
	}
	l.buf = append(l.buf, idleCloseFrame...)
	l.seq++
	l.st.MarkIdleClosing()
	return true
}

// abandonedLocked records our link id as abandoned while p lives: links
// dialed later start with a fence naming it. Under p.mu.
func (p *peer) abandonedLocked(id uint64) {
	p.abandoned = append(p.abandoned, id)
	if len(p.abandoned) > maxAbandoned {
		p.abandoned = append(p.abandoned[:0], p.abandoned[len(p.abandoned)-maxAbandoned:]...)
	}
}

// retryFresh reports whether a write refused by l (err) is to be tried
// again on another link: l was closed for idleness (it took nothing, and
// the peer's out link is no longer l).
func retryFresh(l *link, err error) bool {
	return errors.Is(err, errLinkClosed) && l.st.Has(peers.BitIdleClosed)
}

// sendCtl writes a control element to p on a control link (anyLink), on
// another one if the first was closed for idleness meanwhile. False when
// none took it.
func (p *peer) sendCtl(el *wire.Element) bool {
	for {
		l := p.anyLink()
		if l == nil {
			return false
		}
		_, err := l.enqueueEl(el, false, nil)
		if err == nil {
			return true
		}
		if !retryFresh(l, err) {
			return false
		}
	}
}

// onIdleClose handles the peer's CtlIdleClose on l: it closes l, which it
// dialed, for idleness. We write nothing more on it; it closes when the
// reader reaches its end.
func (l *link) onIdleClose() {
	if l.outbound {
		return // only a link's dialer closes it for idleness
	}
	l.st.MarkPeerIdle()
	l.node.peerLine(slog.LevelDebug, "the peer closes an idle link", "peer", l.ends.PeerNode, "link", l.kind())
}

// endOfIdle reports whether reason is the expected end of a link its
// peer closed for idleness: the end of its stream, after the frame.
func endOfIdle(l *link, reason error) bool {
	return l.st.Has(peers.BitPeerIdle) && errors.Is(reason, io.EOF)
}
