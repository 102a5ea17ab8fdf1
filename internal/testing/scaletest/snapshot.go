package scaletest

import (
	"encoding/json"
	"os"
	"runtime"
	"time"

	"github.com/mailroom-go/mailroom/proxypool"
)

// Snapshot is what a node reports about itself, every reportEvery, in
// its report file (written whole and renamed into place, so a reader
// never sees half of one, and the last survives a SIGKILL).
type Snapshot struct {
	Node  string `json:"node"`
	Inc   string `json:"inc"`
	At    int64  `json:"at"` // unix ms
	Phase string `json:"phase"`

	// From remote.Node.Stats.
	Links          int    `json:"links"` // every live link: native and pool, both directions
	Peers          int    `json:"peers"`
	Pending        int    `json:"pending"`
	HandshakesShed uint64 `json:"handshakes_shed"`
	LinksRefused   uint64 `json:"links_refused"`
	FailedLiveness uint64 `json:"failed_by_liveness"`
	Goroutines     int    `json:"goroutines"`

	// From proxypool.Manager.ConnectionInfo, for every member: the pools
	// this node has published and their links (one per proxy, dialed by
	// this node).
	PoolsUp     int            `json:"pools_up"`
	PoolLinks   int            `json:"pool_links"`
	PoolLinksTo map[string]int `json:"pool_links_to,omitempty"`

	// What it has seen of the others.
	Members map[string]string `json:"members"` // node → incarnation discovery reports up
	Seen    []Seen            `json:"seen"`

	// Its load, by target, and what its sink received.
	Targets    map[string]TargetStats `json:"targets"`
	Sink       SinkStats              `json:"sink"`
	Inflight   int                    `json:"inflight"`
	Stuck      []Stuck                `json:"stuck,omitempty"`
	StuckMore  int                    `json:"stuck_more,omitempty"`
	Unexpected []string               `json:"unexpected,omitempty"`
}

// reportEvery is how often a node writes its snapshot.
const reportEvery = 200 * time.Millisecond

// report writes a snapshot every reportEvery until the system stops.
func (c *child) report() {
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for {
		select {
		case <-c.sys.Done():
			return
		case <-t.C:
			if err := c.write(); err != nil {
				c.sys.Logger().Error("scaletest: writing the snapshot", "err", err)
			}
		}
	}
}

// snapshot gathers the node's figures now.
func (c *child) snapshot() Snapshot {
	now := time.Now().UnixMilli()
	st := c.n.Stats()
	s := Snapshot{
		Node: c.sys.Name(), Inc: c.inc, At: now, Phase: c.phaseNow(),
		Links: st.Links, Peers: st.Peers, Pending: st.Pending,
		HandshakesShed: st.HandshakesShed, LinksRefused: st.LinksRefused, FailedLiveness: st.FailedByLiveness,
		Goroutines: runtime.NumGoroutine(),
		Targets:    make(map[string]TargetStats, len(c.stats)),
		Sink:       SinkStats{Received: c.sink.received.Load(), OutOfOrder: c.sink.outOfOrder.Load()},
	}
	s.Members, s.Seen = c.view.snapshot()
	for node := range s.Members {
		if node == s.Node {
			continue
		}
		if info := c.pools.ConnectionInfo(node); info.Status == proxypool.Connected {
			s.PoolsUp++
			s.PoolLinks += info.Proxies
			if s.PoolLinksTo == nil {
				s.PoolLinksTo = map[string]int{}
			}
			s.PoolLinksTo[node] = info.Proxies
		}
	}
	for t, ts := range c.stats {
		s.Targets[t] = ts.snapshot()
	}
	s.Inflight, s.Stuck, s.StuckMore = c.ops.snapshot(now)
	c.mu.Lock()
	s.Unexpected = append([]string(nil), c.unexp...)
	c.mu.Unlock()
	return s
}

// write replaces the report file with a fresh snapshot.
func (c *child) write() error {
	b, err := json.Marshal(c.snapshot())
	if err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}

// ReadSnapshot reads a node's report file.
func ReadSnapshot(path string) (Snapshot, error) {
	var s Snapshot
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}
