package proxypool

import (
	"fmt"
	"time"

	"github.com/mailroom-go/mailroom/actor"
)

// Config configures a node's proxy pools. Zero fields take the defaults
// documented on each.
type Config struct {
	// BatchSize caps the messages a proxy ships in one batch: a cap, not a
	// target (a proxy ships whatever is waiting the moment it has
	// anything). Default 1000. Read each time a pool is built, so
	// SetBatchSize affects the next build.
	BatchSize int
	// ProxyQueue bounds each proxy's queue in messages (waiting or being
	// written). Default 65536.
	ProxyQueue int
	// ProxyQueueBytes bounds the encoded bytes waiting in each proxy, so
	// large payloads cannot grow memory past it. Default 32 MiB. The same
	// Policy applies when it is full.
	ProxyQueueBytes int
	// Policy applies when a proxy's queue is full: Block makes the
	// caller wait (the default), FailFast returns actor.ErrOverloaded.
	Policy actor.MailboxPolicy
	// ManualConnect, when true, leaves connecting to the caller
	// (StartConnection): no pool is built by itself.
	ManualConnect bool
	// Eager, when true, builds a pool toward every peer the node links to
	// or discovery reports, whether or not anything is sent there (ecall's
	// behaviour): about 2 × pool size × (members − 1) links per node.
	//
	// By default pools are lazy: a pool toward a peer is built when
	// traffic to it warrants it, on the first Send, Cast, Request or Call
	// to it that takes the native path (that message goes natively; the
	// pool takes what follows once it is built, behind a fence, so
	// per-sender order holds). A pool that carried nothing for IdleTimeout
	// is torn down the way StopConnection does it (order holds, nothing is
	// lost silently), and the next message to the peer builds one again.
	// Replies never build a pool, so a node holds pools toward the peers
	// it sends to, and its peers toward it. Pools started with
	// StartConnection are never torn down for idleness.
	Eager bool
	// IdleTimeout is how long a lazily built pool may carry nothing before
	// it is torn down (not with Eager). Default 30 s.
	IdleTimeout time.Duration
	// MaxPoolLinks caps the pool links this node dials, node-wide (a pool
	// has one per proxy, as many as the peer's receiver pool has workers).
	// A pool that would pass the cap is not built: traffic to that peer
	// takes the native path, Summary counts the refusal, and a warning is
	// logged (at most once per peer per minute). StartConnection returns
	// ErrPoolLinkCap then. The cap is checked when a connection starts;
	// a peer's restart rebuilds its pool within the links it had.
	// 0: no cap.
	MaxPoolLinks int
	// RetryMin and RetryMax bound the backoff between failed pool builds
	// while the peer incarnation is alive. Defaults 50ms and 2s.
	RetryMin, RetryMax time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{BatchSize: 1000, ProxyQueue: 65536, ProxyQueueBytes: 32 << 20, Policy: actor.Block, RetryMin: 50 * time.Millisecond, RetryMax: 2 * time.Second, IdleTimeout: 30 * time.Second}
}

func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	if c.BatchSize == 0 {
		c.BatchSize = d.BatchSize
	}
	if c.ProxyQueue == 0 {
		c.ProxyQueue = d.ProxyQueue
	}
	if c.ProxyQueueBytes == 0 {
		c.ProxyQueueBytes = d.ProxyQueueBytes
	}
	if c.RetryMin == 0 {
		c.RetryMin = d.RetryMin
	}
	if c.RetryMax == 0 {
		c.RetryMax = d.RetryMax
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	switch {
	case c.BatchSize < 1:
		return c, fmt.Errorf("proxypool: config: BatchSize is %d, want 1 or more", c.BatchSize)
	case c.ProxyQueue < 1:
		return c, fmt.Errorf("proxypool: config: ProxyQueue is %d, want 1 or more", c.ProxyQueue)
	case c.ProxyQueueBytes < 1:
		return c, fmt.Errorf("proxypool: config: ProxyQueueBytes is %d, want 1 or more", c.ProxyQueueBytes)
	case c.Policy != actor.Block && c.Policy != actor.FailFast:
		return c, fmt.Errorf("proxypool: config: Policy is %d, want Block or FailFast", int(c.Policy))
	case c.IdleTimeout < 0:
		return c, fmt.Errorf("proxypool: config: IdleTimeout is %v, want 0 (default 30s) or more", c.IdleTimeout)
	case c.MaxPoolLinks < 0:
		return c, fmt.Errorf("proxypool: config: MaxPoolLinks is %d, want 0 (no cap) or more", c.MaxPoolLinks)
	case c.RetryMin < 0 || c.RetryMax < c.RetryMin:
		return c, fmt.Errorf("proxypool: config: RetryMin %v / RetryMax %v: want 0 < RetryMin <= RetryMax", c.RetryMin, c.RetryMax)
	}
	return c, nil
}

// Status is the state of a connection, from this node's side.
type Status int

const (
	// NotConnected: no master exists for the node (none was started, or
	// StopConnection removed it).
	NotConnected Status = iota
	// Down: a master exists but no pool is published (the peer's pool has
	// not answered, went away, or is disabled).
	Down
	// Connected: a pool is published and in use.
	Connected
)

func (s Status) String() string {
	switch s {
	case NotConnected:
		return "not connected"
	case Down:
		return "down"
	case Connected:
		return "connected"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Info is ConnectionInfo's answer.
type Info struct {
	Node        string
	Status      Status
	Master      actor.PID
	Proxies     int    // when Connected
	Incarnation uint64 // the peer incarnation the master follows (0 if none)
	Builds      int    // pools built so far by this master
}
