package cluster

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/internal/clusterpb"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/stretchr/testify/require"
)

// collector is a test subscriber: it records the N of every Echo it
// gets, after waiting on gate (when set) before its first one.
type collector struct {
	gate chan struct{}

	mu  sync.Mutex // protects following
	got []int64
}

func newCollector(gate chan struct{}) *collector { return &collector{gate: gate} }

func (c *collector) props() *actor.Props {
	return actor.PropsFromFunc(func(ctx *actor.Context) {
		if m, ok := ctx.Message().(*testpb.Echo); ok {
			if c.gate != nil {
				<-c.gate
			}
			c.mu.Lock()
			c.got = append(c.got, m.N)
			c.mu.Unlock()
		}
	})
}

func (c *collector) values() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.got...)
}

func (c *collector) count() int { return len(c.values()) }

// subscribeCollector spawns a collector on cl's node and subscribes it to topic.
func subscribeCollector(t *testing.T, cl *Cluster, topic string, props func(*collector) *actor.Props, gate chan struct{}) (*collector, actor.PID) {
	t.Helper()
	col := newCollector(gate)
	p := col.props()
	if props != nil {
		p = props(col)
	}
	pid, err := cl.sys.Spawn(p)
	require.NoError(t, err)
	require.NoError(t, cl.Subscribe(ctxT(t, 10*time.Second), topic, pid))
	return col, pid
}

func waitTopicNodes(t *testing.T, c *Cluster, topic string, want ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s publishes %s to %v", c.sys.Name(), topic, want), 20*time.Second, func() bool {
		got := c.TopicNodes(topic)
		return strings.Join(got, ",") == strings.Join(want, ",")
	})
}

func remoteSends(c *Cluster) uint64 {
	s := c.node.Stats()
	return s.SendsNative + s.SendsPooled
}

func inOrder(t *testing.T, what string, got []int64, n int) {
	t.Helper()
	require.Len(t, got, n, what)
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("%s: message %d is %d: out of order", what, i, v)
		}
	}
}

// TestStaticTopicPublish and TestConsulTopicPublish: subscribers on two
// nodes, a publisher on the third. Every subscriber gets every message in
// the publisher's order; each publication is one network message per
// subscribing node (counted by the remote layer, not only by the
// cluster's own counter), fanned out on arrival.
func TestStaticTopicPublish(t *testing.T) {
	topicPublish(t, staticNodes(t, 3, newStore(), 0))
}

// Needs a real agent: make test, or scripts/consul.sh run -- go test ./cluster.
func TestConsulTopicPublish(t *testing.T) {
	topicPublish(t, consulNodes(t, 3, newStore(), 0))
}

func topicPublish(t *testing.T, cs []*Cluster) {
	const n = 500
	pub, a, b := cs[0], cs[1], cs[2]
	a1, _ := subscribeCollector(t, a, "news", nil, nil)
	a2, _ := subscribeCollector(t, a, "news", nil, nil)
	b1, _ := subscribeCollector(t, b, "news", nil, nil)
	_, _ = subscribeCollector(t, b, "other", nil, nil)
	waitTopicNodes(t, pub, "news", a.sys.Name(), b.sys.Name())
	require.Equal(t, []string{a.sys.Name()}, a.TopicNodes("news")[:1], "a's own subscribers count as a node")

	sender := pub.sys.NewSender()
	sendsBefore, statsBefore := remoteSends(pub), pub.TopicStats()
	for i := range n {
		nodes, err := pub.Publish(ctxT(t, 5*time.Second), sender, "news", &testpb.Echo{N: int64(i)})
		require.NoError(t, err)
		require.Equal(t, 2, nodes)
	}
	for name, col := range map[string]*collector{"a1": a1, "a2": a2, "b1": b1} {
		eventually(t, name+" got every message", 20*time.Second, func() bool { return col.count() >= n })
		inOrder(t, name, col.values(), n)
	}
	sends := remoteSends(pub) - sendsBefore
	t.Logf("%d publications to 2 subscribing nodes (3 subscribers): %d network messages from the publisher", n, sends)
	require.EqualValues(t, 2*n, sends, "one network message per subscribing node per publication")
	require.EqualValues(t, 2*n, pub.TopicStats().Sends-statsBefore.Sends)
	require.EqualValues(t, n, a.TopicStats().Received, "one publication per node, fanned out there")
	require.EqualValues(t, 2*n, a.TopicStats().Delivered)
	require.EqualValues(t, n, b.TopicStats().Received)
	require.EqualValues(t, n, b.TopicStats().Delivered)
	require.Zero(t, a.TopicStats().Dropped+b.TopicStats().Dropped)
}

// TestStaticTopicSubscriptionEnds: a subscription ends with Unsubscribe
// and with its actor's stop; a node with no subscriber left stops
// announcing the topic, and publishers stop sending to it.
func TestStaticTopicSubscriptionEnds(t *testing.T) {
	cs := staticNodes(t, 3, newStore(), 0)
	pub, a, b := cs[0], cs[1], cs[2]
	a1, a1pid := subscribeCollector(t, a, "news", nil, nil)
	_, bpid := subscribeCollector(t, b, "news", nil, nil)
	waitTopicNodes(t, pub, "news", a.sys.Name(), b.sys.Name())

	require.NoError(t, b.sys.StopActorWait(ctxT(t, 5*time.Second), bpid))
	eventually(t, "b has no subscriber left", 10*time.Second, func() bool { return b.TopicStats().Topics == 0 })
	waitTopicNodes(t, pub, "news", a.sys.Name())
	nodes, err := pub.Publish(ctxT(t, 5*time.Second), pub.sys, "news", &testpb.Echo{N: 0})
	require.NoError(t, err)
	require.Equal(t, 1, nodes)
	eventually(t, "a1 got it", 10*time.Second, func() bool { return a1.count() == 1 })

	require.NoError(t, a.Unsubscribe(ctxT(t, 5*time.Second), "news", a1pid))
	waitTopicNodes(t, pub, "news")
	sends := pub.TopicStats().Sends
	nodes, err = pub.Publish(ctxT(t, 5*time.Second), pub.sys, "news", &testpb.Echo{N: 1})
	require.NoError(t, err)
	require.Zero(t, nodes)
	require.Equal(t, sends, pub.TopicStats().Sends, "nothing sent")
	require.Equal(t, 1, a1.count())

	// Subscriptions are local: another node's actor is refused.
	require.ErrorIs(t, a.Subscribe(ctxT(t, 5*time.Second), "news", bpid), ErrNotLocal)
}

// TestTopicKillSubscriberNode: the subscriptions of a node end with its
// incarnation: once its process is SIGKILLed, publishers no longer send
// to it.
func TestTopicKillSubscriberNode(t *testing.T) {
	psys, pnode := testnode.Local(t, testnode.Options{Name: "tp-parent"})
	pc, err := Start(ctxT(t, 10*time.Second), pnode, Config{})
	require.NoError(t, err)
	seeds := []string{"tp-parent=" + pnode.Addr()}
	kid := testnode.Start(t, testnode.Options{Name: "tp-child", Seeds: seeds, Extra: map[string]string{"topic": "news"}})
	other := testnode.Start(t, testnode.Options{Name: "tp-other", Seeds: seeds, Extra: map[string]string{"topic": "news"}})
	waitTopicNodes(t, pc, "news", kid.Name, other.Name)
	killed := time.Now()
	kid.Kill()
	waitTopicNodes(t, pc, "news", other.Name)
	t.Logf("the killed node's subscriptions ended %v after SIGKILL", time.Since(killed))
	sends := pc.TopicStats().Sends
	nodes, err := pc.Publish(ctxT(t, 5*time.Second), psys, "news", &testpb.Echo{N: 1})
	require.NoError(t, err)
	require.Equal(t, 1, nodes)
	require.Equal(t, sends+1, pc.TopicStats().Sends)
}

// TestStaticTopicSlowSubscriber: a subscriber blocked in its handler,
// with a bounded mailbox whose policy is Block, holds up neither the
// other subscribers of its node nor those elsewhere: only its own lane
// waits, and what the lane cannot hold (TopicLane) is dropped and
// counted; what it kept arrives in order once it is unblocked.
func TestStaticTopicSlowSubscriber(t *testing.T) {
	const n, bound = TopicLane + 1000, 5
	cs := staticNodes(t, 3, newStore(), 0)
	pub, a, b := cs[0], cs[1], cs[2]
	gate := make(chan struct{})
	slow, _ := subscribeCollector(t, a, "news", func(c *collector) *actor.Props {
		return c.props().WithMailbox(bound, actor.Block)
	}, gate)
	fastA, _ := subscribeCollector(t, a, "news", nil, nil)
	fastB, _ := subscribeCollector(t, b, "news", nil, nil)
	waitTopicNodes(t, pub, "news", a.sys.Name(), b.sys.Name())

	// In batches the fast lanes always have room for: only the slow
	// one's lane fills.
	sender := pub.sys.NewSender()
	for i := range n {
		_, err := pub.Publish(ctxT(t, 5*time.Second), sender, "news", &testpb.Echo{N: int64(i)})
		require.NoError(t, err)
		if (i+1)%1000 == 0 || i == n-1 {
			eventually(t, "the fast subscribers got every message so far while the slow one is blocked", 20*time.Second, func() bool {
				return fastA.count() == i+1 && fastB.count() == i+1
			})
		}
	}
	inOrder(t, "fast subscriber on the slow one's node", fastA.values(), n)
	inOrder(t, "fast subscriber elsewhere", fastB.values(), n)
	dropped := a.TopicStats().Dropped
	t.Logf("the blocked subscriber's lane dropped %d of %d (lane %d, mailbox bound %d)", dropped, n, TopicLane, bound)
	require.GreaterOrEqual(t, dropped, uint64(n-TopicLane-bound-1))
	require.Zero(t, b.TopicStats().Dropped)
	close(gate)
	eventually(t, "the slow subscriber drains what its lane kept", 10*time.Second, func() bool {
		return uint64(slow.count()) == n-dropped
	})
	got := slow.values()
	require.EqualValues(t, 0, got[0])
	for i := 1; i < len(got); i++ {
		require.Less(t, got[i-1], got[i], "what it kept is in order")
	}
}

// TestTopicLimits: what a peer announces is read within the limits
// (MaxTopics names, MaxTopicsBytes, valid names) and the rest counted;
// a node refuses a subscription to one topic more than it may announce;
// a publication a node cannot decode is dropped and counted, and the
// node keeps fanning out the others.
func TestTopicLimits(t *testing.T) {
	var many []string
	for i := range 1000 {
		many = append(many, fmt.Sprintf("t%d", i))
	}
	tps, ignored := parseTopics(map[string]string{MetaTopics: strings.Join(many, ",")})
	require.LessOrEqual(t, len(tps), MaxTopics)
	require.NotZero(t, ignored)
	tps, ignored = parseTopics(map[string]string{MetaTopics: "ok,bad topic,," + strings.Repeat("x", MaxTopicLen+1)})
	require.Equal(t, map[string]struct{}{"ok": {}}, tps)
	require.Equal(t, 3, ignored)

	cs := staticNodes(t, 2, newStore(), 0)
	a, b := cs[0], cs[1]
	a.topics.setPeer("hostile", 7, map[string]string{MetaTopics: strings.Join(many, ",")}, true)
	a.topics.mu.RLock()
	require.LessOrEqual(t, len(a.topics.peers["hostile"].topics), MaxTopics)
	a.topics.mu.RUnlock()
	require.NotZero(t, a.TopicStats().TopicsIgnored)
	require.Empty(t, a.TopicNodes("t1"), "an incarnation the view does not hold live gets nothing")

	pid, err := b.sys.Spawn(newCollector(nil).props())
	require.NoError(t, err)
	for i := range MaxTopics {
		require.NoError(t, b.Subscribe(ctxT(t, 5*time.Second), fmt.Sprintf("topic-%d", i), pid))
	}
	err = b.Subscribe(ctxT(t, 5*time.Second), "one-more", pid)
	require.ErrorIs(t, err, ErrTooManyTopics)
	require.Equal(t, actor.NotExecuted, actor.Outcome(err))
	require.NoError(t, b.Subscribe(ctxT(t, 5*time.Second), "topic-0", pid), "an existing topic is fine")
	_, err = a.Publish(ctxT(t, 5*time.Second), a.sys, "bad topic", &testpb.Echo{})
	require.ErrorIs(t, err, actor.ErrBadMessage)

	col, _ := subscribeCollector(t, b, "topic-1", nil, nil)
	waitTopicNodes(t, a, "topic-1", b.sys.Name())
	a.sys.SendNamed(b.sys.Name(), topicsActorName, &clusterpb.Publication{Topic: "topic-1", Type: "no.such.Type", Payload: []byte{1}})
	_, err = a.Publish(ctxT(t, 5*time.Second), a.sys, "topic-1", &testpb.Echo{N: 0})
	require.NoError(t, err)
	eventually(t, "the good publication arrives after the bad one", 10*time.Second, func() bool { return col.count() == 1 })
	require.EqualValues(t, 1, b.TopicStats().BadPublications)
	a.sys.SendNamed(b.sys.Name(), topicsActorName, &clusterpb.Publication{Topic: "nobody-here", Type: "mailroom.testpb.Echo"})
	eventually(t, "a publication for a topic without subscribers is counted", 10*time.Second, func() bool {
		return b.TopicStats().NoSubscriber == 1
	})
}
