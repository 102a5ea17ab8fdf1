package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/clusterpb"
	"github.com/mailroom-go/mailroom/internal/nodename"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// MetaTopics is the metadata key under which a node announces the topics
// it has subscribers for: a comma-separated list (discovery Meta with
// Consul, the links' announcements with Static).
const MetaTopics = "cluster_topics"

// Limits of topics. A node announces at most MaxTopics topics of at most
// MaxTopicLen bytes each, in at most MaxTopicsBytes (Consul's limit on a
// metadata value); what a peer announces beyond them is ignored and
// counted (TopicStats.TopicsIgnored), so a peer cannot make this node
// keep more than MaxTopics topics for it.
const (
	MaxTopics      = 32
	MaxTopicLen    = 64
	MaxTopicsBytes = 512
)

// topicsMailbox bounds the topic actor's mailbox: publications from
// peers and from this node wait there; at the bound a sender waits (a
// peer's link stops being read), the publisher's own backpressure. The
// actor never waits on a subscriber, so it drains at its own pace.
const topicsMailbox = 10_000

// TopicLane bounds the messages waiting for one subscriber in its lane
// (the forwarder between the topic actor and the subscriber): past it the
// lane drops, counted in TopicStats.Dropped.
const TopicLane = 4096

// topicsActorName is the registered name of every node's topic actor.
const topicsActorName = "mailroom.cluster.topics"

// ErrTooManyTopics: this node already has subscribers for MaxTopics
// topics (or their names fill MaxTopicsBytes): Subscribe to one of them,
// or Unsubscribe from one first. Not executed.
var ErrTooManyTopics = errors.New("cluster: this node has subscribers for as many topics as it may announce")

// ErrNotLocal: Subscribe and Unsubscribe take an actor of this node (the
// node fans publications out to its own subscribers). Not executed.
var ErrNotLocal = errors.New("cluster: the subscriber is not an actor of this node")

// validTopic: 1 to MaxTopicLen letters, digits, '.', '_' or '-'.
func validTopic(topic string) error {
	if len(topic) > MaxTopicLen || !nodename.Valid(topic) {
		return fmt.Errorf("cluster: topic %q: want 1-%d letters, digits, '.', '_' or '-'", topic, MaxTopicLen)
	}
	return nil
}

// TopicStats are the topic counters of one node, since Start.
type TopicStats struct {
	Published       uint64 // Publish calls on this node
	Sends           uint64 // publications sent to other nodes: one per subscribing node per Publish
	Received        uint64 // publications received from other nodes
	Delivered       uint64 // messages handed to this node's subscribers
	Dropped         uint64 // messages a subscriber refused (its bounded mailbox was full, or it had died): dead letters too
	BadPublications uint64 // publications from peers that could not be decoded (unknown payload type): dropped
	NoSubscriber    uint64 // publications that found no subscriber here (the last one had just left): dropped
	TopicsIgnored   uint64 // topics peers announced beyond the limits, or invalid
	Topics          int    // topics this node has subscribers for now
}

type topicCounters struct {
	published, sends, received, delivered, dropped, bad, none, ignored atomic.Uint64
}

// topicPeer is what a peer incarnation announced: its topics.
type topicPeer struct {
	inc    uint64
	topics map[string]struct{}
}

// topics is one node's topic layer: the topic actor that fans out to
// this node's subscribers, what every peer announced, and the goroutine
// that announces this node's topics.
type topics struct {
	c     *Cluster
	pid   actor.PID // the topic actor
	stats topicCounters

	mu    sync.RWMutex // protects following
	peers map[string]topicPeer
	local map[string]struct{} // topics with subscribers here (copy on write: the actor's, mirrored)

	announce chan struct{}   // one slot: the local topics changed
	ctx      context.Context // ends with stop
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// startTopics starts the topic layer of c: its actor, its hooks and its
// announcer.
func (c *Cluster) startTopics() error {
	if err := c.sys.RegisterTypes(&clusterpb.Publication{}); err != nil {
		return err
	}
	t := &topics{c: c, peers: map[string]topicPeer{}, local: map[string]struct{}{}, announce: make(chan struct{}, 1)}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	a := &topicActor{t: t, subs: map[string][]actor.PID{}, of: map[actor.PID][]string{}, lanes: map[actor.PID]actor.PID{}}
	props := actor.PropsFromProducer(func() actor.Actor { return a }).WithMailbox(topicsMailbox, actor.Block)
	pid, err := c.sys.SpawnNamed(props, topicsActorName)
	if err != nil {
		return fmt.Errorf("cluster: starting the topic actor on node %s: %w", c.sys.Name(), err)
	}
	t.pid = pid
	c.topics = t
	c.node.AddHooks(remote.Hooks{
		OnMember: func(ev discovery.Event) {
			switch ev.Type {
			case discovery.MemberUp, discovery.MemberUpdated:
				t.setPeer(ev.Member.Node, ev.Member.Incarnation, ev.Member.Meta, true)
			case discovery.MemberDown:
				t.dropPeer(ev.Member.Node, ev.Member.Incarnation)
			}
		},
		// At link-up the peer may not have announced yet over it: what
		// discovery said stands until it does.
		OnPeer:     func(p remote.PeerInfo) { t.setPeer(p.Node, p.Incarnation, p.Meta, p.Meta != nil) },
		OnAnnounce: func(p remote.PeerInfo, _ bool, meta map[string]string) { t.setPeer(p.Node, p.Incarnation, meta, true) },
		OnPeerGone: func(p remote.PeerInfo) { t.dropPeer(p.Node, p.Incarnation) },
		OnForget: func(node string) {
			t.mu.Lock()
			delete(t.peers, node)
			t.mu.Unlock()
		},
	})
	for _, m := range c.node.Members() {
		t.setPeer(m.Node, m.Incarnation, m.Meta, true)
	}
	for _, p := range c.node.Peers() {
		t.setPeer(p.Node, p.Incarnation, p.Meta, p.Meta != nil)
	}
	t.wg.Add(1)
	go t.announcer()
	return nil
}

// stop ends the announcer; the topic actor stops with the System.
func (t *topics) stop() {
	t.cancel()
	t.wg.Wait()
}

// parseTopics reads the MetaTopics value of meta, within the limits.
func parseTopics(meta map[string]string) (topics map[string]struct{}, ignored int) {
	raw := meta[MetaTopics]
	if raw == "" {
		return nil, 0
	}
	if len(raw) > MaxTopicsBytes {
		ignored++ // the cut-off part counts once
		raw = raw[:MaxTopicsBytes]
		if i := strings.LastIndexByte(raw, ','); i >= 0 {
			raw = raw[:i]
		}
	}
	for _, tp := range strings.Split(raw, ",") {
		if validTopic(tp) != nil || len(topics) == MaxTopics {
			ignored++
			continue
		}
		if topics == nil {
			topics = map[string]struct{}{}
		}
		topics[tp] = struct{}{}
	}
	return topics, ignored
}

// setPeer records what node's incarnation inc announced (known false:
// the announcement says nothing yet; keep what is known of inc).
func (t *topics) setPeer(node string, inc uint64, meta map[string]string, known bool) {
	if node == t.c.sys.Name() || inc == 0 {
		return
	}
	var tps map[string]struct{}
	if known {
		var ignored int
		tps, ignored = parseTopics(meta)
		t.stats.ignored.Add(uint64(ignored))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.peers[node]; ok && cur.inc == inc && !known {
		return
	}
	if tps == nil {
		delete(t.peers, node)
		return
	}
	t.peers[node] = topicPeer{inc: inc, topics: tps}
}

func (t *topics) dropPeer(node string, inc uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.peers[node]; ok && cur.inc == inc {
		delete(t.peers, node)
	}
}

// nodesFor lists the other live nodes with subscribers for topic, sorted:
// an incarnation the view no longer holds as live gets nothing.
func (t *topics) nodesFor(topic string) []string {
	t.mu.RLock()
	var out []string
	for node, p := range t.peers {
		if _, ok := p.topics[topic]; ok && t.c.view.live(node, p.inc) {
			out = append(out, node)
		}
	}
	t.mu.RUnlock()
	sort.Strings(out)
	return out
}

func (t *topics) hasLocal(topic string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, ok := t.local[topic]
	return ok
}

// setLocal mirrors the actor's topics and wakes the announcer.
func (t *topics) setLocal(local map[string]struct{}) {
	t.mu.Lock()
	t.local = local
	t.mu.Unlock()
	t.wake()
}

func (t *topics) wake() {
	select {
	case t.announce <- struct{}{}:
	default:
	}
}

func (t *topics) localList() string {
	t.mu.RLock()
	list := make([]string, 0, len(t.local))
	for tp := range t.local {
		list = append(list, tp)
	}
	t.mu.RUnlock()
	sort.Strings(list)
	return strings.Join(list, ",")
}

// announcer announces this node's topics (MetaTopics) whenever they
// change, one announcement at a time, the latest set each time.
func (t *topics) announcer() {
	defer t.wg.Done()
	last := ""
	for {
		select {
		case <-t.announce:
		case <-t.ctx.Done():
			return
		}
		v := t.localList()
		if v == last {
			continue
		}
		ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
		err := t.c.node.AnnounceKeys(ctx, map[string]string{MetaTopics: v})
		cancel()
		if err == nil {
			last = v
			continue
		}
		if t.ctx.Err() != nil {
			return
		}
		t.c.log.Warn("cluster: announcing topics failed; retrying in 1s", "topics", v, "err", err)
		retry := time.NewTimer(time.Second)
		select {
		case <-retry.C:
			t.wake()
		case <-t.ctx.Done():
			retry.Stop()
			return
		}
	}
}

// live: node's incarnation inc is live in the view.
func (v *view) live(node string, inc uint64) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	m := v.nodes[node]
	return m != nil && m.inc == inc
}

// The topic actor's messages from this node.
type (
	subscribe struct {
		topic string
		pid   actor.PID
		on    bool // false: unsubscribe
	}
	localPublication struct {
		topic string
		msg   proto.Message
	}
)

// topicActor holds this node's subscriptions and fans publications out
// to them. It never waits on a subscriber: each subscriber has a lane, a
// forwarder actor (its child) with a fail-fast mailbox of TopicLane
// messages, that hands the subscriber its messages in order. A
// subscriber whose mailbox policy is Block makes only its own lane wait;
// a full lane, or a subscriber whose fail-fast mailbox is full, drops the
// message (counted). So a slow subscriber is bounded by its mailbox
// policy and its lane, and holds up no one else.
type topicActor struct {
	t     *topics
	subs  map[string][]actor.PID  // topic -> subscribers, in subscription order
	of    map[actor.PID][]string  // subscriber -> its topics
	lanes map[actor.PID]actor.PID // subscriber -> its forwarder
}

// forwarder is a subscriber's lane.
func (t *topics) forwarder(to actor.PID) *actor.Props {
	return actor.PropsFromFunc(func(c *actor.Context) {
		msg, ok := c.Message().(proto.Message)
		if !ok {
			return // its own lifecycle
		}
		// Waits while a Block subscriber is full: this lane only.
		if err := c.System().TrySend(to, msg); err != nil {
			t.stats.dropped.Add(1)
		} else {
			t.stats.delivered.Add(1)
		}
	}).WithMailbox(TopicLane, actor.FailFast)
}

func (a *topicActor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case subscribe:
		if m.on {
			c.Respond(a.subscribe(c, m.topic, m.pid))
		} else {
			a.unsubscribe(c, m.topic, m.pid)
			c.Respond(nil)
		}
	case actor.Terminated:
		for _, tp := range append([]string(nil), a.of[m.PID]...) {
			a.unsubscribe(c, tp, m.PID)
		}
	case localPublication:
		a.fanOut(c, m.topic, m.msg)
	case *clusterpb.Publication:
		a.t.stats.received.Add(1)
		msg, err := a.decode(c, m)
		if err != nil {
			a.t.stats.bad.Add(1)
			a.t.c.log.Warn("cluster: publication dropped", "topic", m.Topic, "err", err)
			return
		}
		a.fanOut(c, m.Topic, msg)
	}
}

// subscribe answers nil, or the not-executed error it refused with.
func (a *topicActor) subscribe(c *actor.Context, topic string, pid actor.PID) error {
	subs, ok := a.subs[topic]
	if !ok {
		n := len(topic)
		for tp := range a.subs {
			n += 1 + len(tp)
		}
		if len(a.subs) >= MaxTopics || n > MaxTopicsBytes {
			return actor.NotExecutedError(fmt.Errorf("%w (%d topics, at most %d in %d bytes): subscribing %s to %q",
				ErrTooManyTopics, len(a.subs), MaxTopics, MaxTopicsBytes, pid, topic))
		}
	}
	for _, p := range subs {
		if p == pid {
			return nil
		}
	}
	if len(a.of[pid]) == 0 {
		lane, err := c.Spawn(a.t.forwarder(pid))
		if err != nil {
			return actor.NotExecutedError(fmt.Errorf("cluster: subscribing %s to %q: %w", pid, topic, err))
		}
		a.lanes[pid] = lane
		c.Watch(pid)
	}
	a.subs[topic] = append(subs, pid)
	a.of[pid] = append(a.of[pid], topic)
	if !ok {
		a.mirror()
	}
	return nil
}

func (a *topicActor) unsubscribe(c *actor.Context, topic string, pid actor.PID) {
	subs := a.subs[topic]
	i := 0
	for i < len(subs) && subs[i] != pid {
		i++
	}
	if i == len(subs) {
		return
	}
	subs = append(subs[:i:i], subs[i+1:]...)
	if len(subs) == 0 {
		delete(a.subs, topic)
		defer a.mirror()
	} else {
		a.subs[topic] = subs
	}
	tps := a.of[pid]
	for j, tp := range tps {
		if tp == topic {
			tps = append(tps[:j:j], tps[j+1:]...)
			break
		}
	}
	if len(tps) == 0 {
		delete(a.of, pid)
		c.Unwatch(pid)
		c.Stop(a.lanes[pid])
		delete(a.lanes, pid)
	} else {
		a.of[pid] = tps
	}
}

func (a *topicActor) mirror() {
	local := make(map[string]struct{}, len(a.subs))
	for tp := range a.subs {
		local[tp] = struct{}{}
	}
	a.t.setLocal(local)
}

func (a *topicActor) decode(c *actor.Context, p *clusterpb.Publication) (proto.Message, error) {
	if err := validTopic(p.Topic); err != nil {
		return nil, err
	}
	mt, err := c.System().Config().Types.FindMessageByName(protoreflect.FullName(p.Type))
	if err != nil {
		return nil, fmt.Errorf("payload type %q: %w (register it on every subscribing node: actor.System.RegisterTypes)", p.Type, err)
	}
	msg := mt.New().Interface()
	if err := proto.Unmarshal(p.Payload, msg); err != nil {
		return nil, fmt.Errorf("payload of type %q: %w", p.Type, err)
	}
	return msg, nil
}

// fanOut hands msg to the lane of every subscriber of topic without
// waiting on any.
func (a *topicActor) fanOut(c *actor.Context, topic string, msg proto.Message) {
	subs := a.subs[topic]
	if len(subs) == 0 {
		a.t.stats.none.Add(1)
		return
	}
	for _, pid := range subs {
		if err := c.System().TrySend(a.lanes[pid], msg); err != nil {
			a.t.stats.dropped.Add(1)
		}
	}
}

// Subscribe makes the actor pid (of this node: an actor, or a grain's
// activation subscribing itself) receive every message published on
// topic from then on, from any node, as a plain message (the same
// value for every subscriber of a node: do not modify it). The
// subscription ends with Unsubscribe, or when the actor stops (it is
// watched); on other nodes it ends with this node's incarnation. Other
// nodes learn of it from this node's metadata (MetaTopics), so messages
// published elsewhere reach it once the announcement has (with Static
// over the links at once; with Consul also through the agent). A node
// has subscribers for at most MaxTopics topics (ErrTooManyTopics).
func (c *Cluster) Subscribe(ctx context.Context, topic string, pid actor.PID) error {
	return c.setSubscription(ctx, topic, pid, true)
}

// Unsubscribe ends pid's subscription to topic (none: nothing happens).
func (c *Cluster) Unsubscribe(ctx context.Context, topic string, pid actor.PID) error {
	return c.setSubscription(ctx, topic, pid, false)
}

func (c *Cluster) setSubscription(ctx context.Context, topic string, pid actor.PID, on bool) error {
	if err := validTopic(topic); err != nil {
		return actor.NotExecutedError(fmt.Errorf("%w: %w", actor.ErrBadMessage, err))
	}
	if pid.Node != c.sys.Name() || pid.Incarnation != c.sys.Incarnation() {
		return actor.NotExecutedError(fmt.Errorf("%w: %s on node %s", ErrNotLocal, pid, c.sys.Name()))
	}
	v, err := c.sys.Request(ctx, c.topics.pid, subscribe{topic: topic, pid: pid, on: on})
	if err != nil {
		return err
	}
	if err, ok := v.(error); ok {
		return err
	}
	return nil
}

// Publish sends msg to every subscriber of topic, on every node: one
// network message per other node with subscribers (their topic actor
// fans it out there), and the subscribers of this node directly. It
// returns how many nodes it sent to (this one included). Messages one
// caller publishes reach each subscriber in the order published (the
// order of one sender to one target). A subscriber whose bounded mailbox
// is full loses the message (a dead letter, counted in
// TopicStats.Dropped) whatever its mailbox policy: the fan-out never
// waits on one subscriber. A node that does not know msg's type drops it
// (TopicStats.BadPublications there). Publish waits for nothing: ctx is
// checked first, then sending is fire and forget.
func (c *Cluster) Publish(ctx context.Context, caller actor.Caller, topic string, msg proto.Message) (int, error) {
	if err := validTopic(topic); err != nil {
		return 0, actor.NotExecutedError(fmt.Errorf("%w: %w", actor.ErrBadMessage, err))
	}
	if msg == nil {
		return 0, actor.NotExecutedError(fmt.Errorf("%w: cluster: publish on %q: nil message", actor.ErrBadMessage, topic))
	}
	if err := ctx.Err(); err != nil {
		return 0, actor.NotExecutedError(err)
	}
	t := c.topics
	t.stats.published.Add(1)
	sent := 0
	if t.hasLocal(topic) {
		caller.SendNamed("", topicsActorName, localPublication{topic: topic, msg: msg})
		sent++
	}
	nodes := t.nodesFor(topic)
	if len(nodes) == 0 {
		return sent, nil
	}
	payload, err := proto.Marshal(msg)
	if err != nil {
		return sent, actor.NotExecutedError(fmt.Errorf("%w: cluster: publish on %q: %w", actor.ErrBadMessage, topic, err))
	}
	pub := &clusterpb.Publication{Topic: topic, Type: string(msg.ProtoReflect().Descriptor().FullName()), Payload: payload}
	for _, node := range nodes {
		caller.SendNamed(node, topicsActorName, pub)
	}
	t.stats.sends.Add(uint64(len(nodes)))
	return sent + len(nodes), nil
}

// TopicNodes lists the nodes a Publish on topic from this node sends to
// now (this one included when it has subscribers), sorted.
func (c *Cluster) TopicNodes(topic string) []string {
	nodes := c.topics.nodesFor(topic)
	if c.topics.hasLocal(topic) {
		nodes = append(nodes, c.sys.Name())
		sort.Strings(nodes)
	}
	return nodes
}

// TopicStats returns the topic counters.
func (c *Cluster) TopicStats() TopicStats {
	t := c.topics
	s := &t.stats
	t.mu.RLock()
	n := len(t.local)
	t.mu.RUnlock()
	return TopicStats{
		Published: s.published.Load(), Sends: s.sends.Load(), Received: s.received.Load(),
		Delivered: s.delivered.Load(), Dropped: s.dropped.Load(), BadPublications: s.bad.Load(), NoSubscriber: s.none.Load(),
		TopicsIgnored: s.ignored.Load(), Topics: n,
	}
}
