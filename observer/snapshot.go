package observer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/actor"

	"github.com/mailroom-go/mailroom/internal/actorhooks"
	"github.com/mailroom-go/mailroom/internal/actorstats"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/supervisor"
)

const (
	// maxPeers bounds the peer nodes listed (links and pools).
	maxPeers = 256
	// maxPending bounds the pending entries listed (the most loaded first).
	maxPending = 256
	// maxTreeNodes bounds the supervisors and children listed over every
	// tree; past it a tree is cut and says so.
	maxTreeNodes = 2000
)

// Snapshot is every panel at once (/api/snapshot).
type Snapshot struct {
	Node     NodeInfo `json:"node"`
	Members  Members  `json:"members"`
	Trees    Trees    `json:"trees"`
	Actors   Actors   `json:"actors"`
	Peers    Peers    `json:"peers"`
	Pending  Pending  `json:"pending"`
	Counters Counters `json:"counters"`
	Series   Series   `json:"series"`
	// Panels are the extra panels (Options.Panels), in order; PanelsLeft
	// those past the bound, not asked.
	Panels     []PanelView `json:"panels"`
	PanelsLeft int         `json:"panelsLeft,omitempty"`
	Took       string      `json:"took"` // how long the snapshot took
	At         time.Time   `json:"at"`
}

// NodeInfo is the node the observer is served by.
type NodeInfo struct {
	Name        string    `json:"name"`
	Incarnation string    `json:"incarnation"`
	Addr        string    `json:"addr"`
	Started     time.Time `json:"started"` // when the observer started
	Refresh     int64     `json:"refreshMs"`
}

// Trees is the /api/trees answer.
type Trees struct {
	Trees     []TreeNode `json:"trees"`
	Truncated bool       `json:"truncated,omitempty"` // cut at maxTreeNodes
}

// TreeNode is a supervisor or one of its children.
type TreeNode struct {
	ID             string     `json:"id,omitempty"` // the child ID under its supervisor
	PID            string     `json:"pid"`
	Name           string     `json:"name,omitempty"`
	Supervisor     bool       `json:"supervisor,omitempty"`
	Strategy       string     `json:"strategy,omitempty"`
	Intensity      int        `json:"intensity"`
	Period         string     `json:"period,omitempty"`
	RecentRestarts int        `json:"recentRestarts"`
	Restart        string     `json:"restart,omitempty"` // the child's restart type
	Restarts       int        `json:"restarts"`
	Running        bool       `json:"running"`
	Err            string     `json:"err,omitempty"`
	Children       []TreeNode `json:"children,omitempty"`
	ChildrenLeft   int        `json:"childrenLeft,omitempty"` // not listed (maxTreeNodes)
}

// Actors is the /api/actors answer: one mailbox sample.
type Actors struct {
	At       time.Time `json:"at"`
	Interval string    `json:"interval"` // since the previous sample
	Count    int       `json:"count"`    // live actors
	Queued   int       `json:"queued"`   // user messages waiting in all their mailboxes
	// Hist counts the actors by mailbox depth, in the buckets Buckets
	// names: "0", "1", "2-3", "4-7", ..., and the last one open ("16384+").
	Hist    []int          `json:"hist"`
	Buckets []string       `json:"buckets"`
	Deepest []MailboxActor `json:"deepest"` // the most messages waiting first
	Busiest []MailboxActor `json:"busiest"` // the most messages taken since the previous sample first
}

// MailboxActor is one actor of a mailbox sample.
type MailboxActor struct {
	ID     uint64 `json:"id"`               // its PID's ID on this node
	Parent uint64 `json:"parent,omitempty"` // its parent's ID; 0 for a top-level actor
	Name   string `json:"name,omitempty"`   // its registered name
	Type   string `json:"type"`             // the Go type of its Actor value
	// Depth is the user messages in its mailbox: waiting, plus the batch
	// it is handling.
	Depth int `json:"depth"`
	// Taken is the user messages it took between the previous sample and
	// this one; Rate is Taken per second.
	Taken uint64  `json:"taken"`
	Rate  float64 `json:"rate"`
}

func mailboxActors(in []actorstats.Actor) []MailboxActor {
	out := make([]MailboxActor, len(in))
	for i, a := range in {
		out[i] = MailboxActor{ID: a.ID, Parent: a.Parent, Name: a.Name, Type: a.Type, Depth: a.Depth, Taken: a.Taken, Rate: a.Rate}
	}
	return out
}

// Peers is the /api/peers answer.
type Peers struct {
	Peers []Peer `json:"peers"`
	Left  int    `json:"left,omitempty"` // peers not listed (maxPeers)
	Links int    `json:"links"`          // native links, all peers
}

// Peer is one peer node: its current incarnation, if linked, its links,
// and its pool.
type Peer struct {
	Node        string `json:"node"`
	Linked      bool   `json:"linked"`
	Incarnation string `json:"incarnation,omitempty"`
	Addr        string `json:"addr,omitempty"`
	PoolWorkers int    `json:"poolWorkers"`
	Draining    bool   `json:"draining,omitempty"`
	// Links are the live links to its current incarnation.
	Links LinkCounts `json:"links"`
	// Pending is the calls and requests this node waits on from it.
	Pending int   `json:"pending"`
	Pool    *Pool `json:"pool,omitempty"` // when Options.Pools is set
}

// LinkCounts are the live links to one peer incarnation, by kind.
type LinkCounts struct {
	Native int `json:"native"` // native links, fenced ones included
	Fenced int `json:"fenced"` // native links fenced for a handover, not yet closed
	Pool   int `json:"pool"`   // a proxy pool's links, one per worker
}

// Pool is the proxy pool toward one peer node.
type Pool struct {
	Status          string     `json:"status"`
	Proxies         int        `json:"proxies"`
	Incarnation     string     `json:"incarnation,omitempty"`
	Builds          int        `json:"builds"`
	Batches         uint64     `json:"batches"`
	Messages        uint64     `json:"messages"`
	Bytes           uint64     `json:"bytes"`
	MeanBatch       float64    `json:"meanBatch"`
	Hist            [12]uint64 `json:"hist"` // batch sizes: bucket i holds (2^(i-1), 2^i]
	QueueDepth      int        `json:"queueDepth"`
	QueueBytes      int64      `json:"queueBytes"`
	Replies         uint64     `json:"replies"`
	DeadLetters     uint64     `json:"deadLetters"`
	GuardViolations uint64     `json:"guardViolations"`
}

// Pending is the /api/pending answer.
type Pending struct {
	Pending []PendingEntry `json:"pending"` // most calls first
	Left    int            `json:"left,omitempty"`
	Total   int            `json:"total"`
}

// PendingEntry is the calls and requests waiting on one peer incarnation.
type PendingEntry struct {
	Node        string  `json:"node"`
	Incarnation string  `json:"incarnation"`
	Count       int     `json:"count"`
	OldestMs    float64 `json:"oldestMs"`
}

// collect takes every panel.
func (o *observer) collect(ctx context.Context) Snapshot {
	start := time.Now()
	s := Snapshot{
		Node:     o.nodeInfo(),
		Members:  o.members(),
		Trees:    o.trees(ctx),
		Actors:   o.actors(),
		Peers:    o.peers(),
		Pending:  o.pending(),
		Counters: o.counters(),
		Series:   o.samp.series(),
		At:       start,
	}
	s.Panels, s.PanelsLeft = o.panels(ctx)
	s.Took = time.Since(start).Round(time.Microsecond).String()
	return s
}

func (o *observer) nodeInfo() NodeInfo {
	sys := o.node.System()
	return NodeInfo{
		Name: sys.Name(), Incarnation: actor.FormatIncarnation(sys.Incarnation()), Addr: o.node.Addr(),
		Started: o.started, Refresh: o.opts.Refresh.Milliseconds(),
	}
}

func (o *observer) members() Members {
	for _, p := range o.node.Peers() {
		if cur, ok := o.node.Peer(p.Node); ok && cur.Incarnation == p.Incarnation {
			p.Addr = cur.Addr
		}
		o.hist.seen(p)
	}
	return o.hist.snapshot()
}

func (o *observer) trees(ctx context.Context) Trees {
	ctx, cancel := context.WithTimeout(ctx, o.opts.TreeTimeout)
	defer cancel()
	budget := maxTreeNodes
	out := Trees{Trees: []TreeNode{}} // [] in JSON, not null: the page maps over it
	for _, t := range supervisor.Trees(ctx, o.node.System()) {
		if budget <= 0 {
			out.Truncated = true
			break
		}
		budget--
		n := treeNode(t, &budget)
		out.Trees = append(out.Trees, n)
	}
	for i := range out.Trees {
		if hasLeft(out.Trees[i]) {
			out.Truncated = true
		}
	}
	return out
}

func hasLeft(n TreeNode) bool {
	if n.ChildrenLeft > 0 {
		return true
	}
	return slices.ContainsFunc(n.Children, hasLeft)
}

// treeNode converts t, spending one of budget per child listed.
func treeNode(t supervisor.Tree, budget *int) TreeNode {
	n := TreeNode{PID: t.PID.String(), Name: t.Name, Supervisor: true, Running: true}
	if t.Err != nil {
		n.Err = t.Err.Error()
		return n
	}
	n.Strategy, n.Intensity, n.Period, n.RecentRestarts = t.Strategy.String(), t.Intensity, t.Period.String(), t.RecentRestarts
	for i, c := range t.Children {
		if *budget <= 0 {
			n.ChildrenLeft = len(t.Children) - i
			break
		}
		*budget--
		var cn TreeNode
		if c.Tree != nil {
			cn = treeNode(*c.Tree, budget)
		} else {
			cn = TreeNode{Name: c.Name, Running: !c.PID.IsZero()}
			if cn.Running {
				cn.PID = c.PID.String()
			}
		}
		cn.ID, cn.Restart, cn.Restarts = c.ID, c.Restart.String(), c.Restarts
		n.Children = append(n.Children, cn)
	}
	return n
}

func (o *observer) actors() Actors {
	smp := actorhooks.SampleMailboxes(o.node.System(), o.opts.Top, o.opts.MinInterval)
	a := Actors{
		At: smp.At, Interval: smp.Interval.Round(time.Millisecond).String(), Count: smp.Actors, Queued: smp.Queued,
		Hist: smp.Hist[:], Buckets: make([]string, len(smp.Hist)),
		Deepest: mailboxActors(smp.Deepest), Busiest: mailboxActors(smp.Busiest),
	}
	for i := range a.Buckets {
		switch {
		case i <= 1:
			a.Buckets[i] = fmt.Sprint(i)
		case i == len(a.Buckets)-1:
			a.Buckets[i] = fmt.Sprintf("%d+", 1<<(i-1))
		default:
			a.Buckets[i] = fmt.Sprintf("%d-%d", 1<<(i-1), 1<<i-1)
		}
	}
	return a
}

func (o *observer) peers() Peers {
	self := o.node.System().Name()
	links := map[incKey]remote.LinkInfo{}
	for _, l := range o.node.Links() {
		links[incKey{l.Node, l.Incarnation}] = l
	}
	pending := map[incKey]int{}
	for _, p := range o.node.Pending() {
		pending[incKey{p.Node, p.Incarnation}] = p.Count
	}
	byNode := map[string]*Peer{}
	for _, p := range o.node.Peers() {
		if cur, ok := o.node.Peer(p.Node); ok && cur.Incarnation == p.Incarnation {
			p.Addr = cur.Addr
		}
		k := incKey{p.Node, p.Incarnation}
		l := links[k]
		byNode[p.Node] = &Peer{
			Node: p.Node, Linked: true, Incarnation: actor.FormatIncarnation(p.Incarnation), Addr: p.Addr,
			PoolWorkers: p.PoolWorkers, Draining: p.Draining,
			Links: LinkCounts{Native: l.Native, Fenced: l.Fenced, Pool: l.Pool}, Pending: pending[k],
		}
	}
	// Nodes discovery reports up but not linked yet.
	for _, in := range o.hist.snapshot().Incarnations {
		if in.Node != self && in.State == "up" && byNode[in.Node] == nil {
			byNode[in.Node] = &Peer{Node: in.Node, Addr: in.Addr}
		}
	}
	names := make([]string, 0, len(byNode))
	for n := range byNode {
		names = append(names, n)
	}
	slices.SortFunc(names, strings.Compare)
	var out Peers
	if len(names) > maxPeers {
		out.Left = len(names) - maxPeers
		names = names[:maxPeers]
	}
	out.Peers = make([]Peer, 0, len(names))
	for _, n := range names {
		p := byNode[n]
		if o.opts.Pools != nil {
			p.Pool = poolOf(o.opts.Pools, n)
		}
		out.Peers = append(out.Peers, *p)
	}
	out.Links = o.node.Stats().Links
	return out
}

func poolOf(m *proxypool.Manager, node string) *Pool {
	info := m.ConnectionInfo(node)
	st := m.Stats(node)
	p := &Pool{
		Status: info.Status.String(), Proxies: info.Proxies, Builds: info.Builds,
		Batches: st.Batches, Messages: st.Messages, Bytes: st.Bytes, MeanBatch: st.MeanBatch, Hist: st.Hist,
		QueueDepth: st.QueueDepth, QueueBytes: st.QueueBytes, Replies: st.Replies, DeadLetters: st.DeadLetters,
		GuardViolations: st.GuardViolations,
	}
	if info.Incarnation != 0 {
		p.Incarnation = actor.FormatIncarnation(info.Incarnation)
	}
	return p
}

func (o *observer) pending() Pending {
	all := o.node.Pending()
	slices.SortFunc(all, func(a, b remote.PendingInfo) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Node, b.Node)
	})
	out := Pending{Pending: []PendingEntry{}}
	for i, p := range all {
		out.Total += p.Count
		if i >= maxPending {
			out.Left++
			continue
		}
		out.Pending = append(out.Pending, PendingEntry{
			Node: p.Node, Incarnation: actor.FormatIncarnation(p.Incarnation), Count: p.Count,
			OldestMs: float64(p.Oldest.Microseconds()) / 1000,
		})
	}
	return out
}
