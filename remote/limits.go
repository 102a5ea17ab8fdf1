package remote

import (
	"fmt"
	"time"
)

// The defaults and checks of Config's limits on what an authenticated
// peer can make this node hold (docs/SECURITY.md). The mechanisms live
// in admission.go (calls and casts in flight), readbudget.go (frame
// buffers), prune.go (announcements, watches, node names) and
// supersede.go (fences).

// limitDefaults fills the zero limits; d is DefaultConfig. After the
// other defaults (PoolSize, MaxFrameSize).
func (c *Config) limitDefaults(d Config) {
	if c.MaxInflightPerPeer == 0 {
		c.MaxInflightPerPeer = d.MaxInflightPerPeer
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = min(d.MaxMessageSize, c.MaxFrameSize)
	}
	if c.MaxInflightBytesPerPeer == 0 {
		c.MaxInflightBytesPerPeer = max(d.MaxInflightBytesPerPeer, c.MaxMessageSize)
	}
	if c.ReadBudgetBytes == 0 {
		c.ReadBudgetBytes = 4 * c.MaxFrameSize
	}
	if c.MaxLinksPerPeer == 0 {
		c.MaxLinksPerPeer = 2*(c.poolWorkers()+1) + 16
	}
	if c.MaxAnnounceBytes == 0 {
		c.MaxAnnounceBytes = d.MaxAnnounceBytes
	}
	if c.MaxWatchesPerPeer == 0 {
		c.MaxWatchesPerPeer = d.MaxWatchesPerPeer
	}
	if c.ForgetNodesAfter == 0 {
		c.ForgetNodesAfter = d.ForgetNodesAfter
	}
	if c.MaxNodes == 0 {
		c.MaxNodes = d.MaxNodes
	}
}

func (c Config) validateLimits() error {
	switch {
	case c.MaxInflightPerPeer < 1:
		return fmt.Errorf("remote: config: MaxInflightPerPeer is %d, want 1 or more", c.MaxInflightPerPeer)
	case c.MaxMessageSize < 1<<10 || c.MaxMessageSize > c.MaxFrameSize:
		return fmt.Errorf("remote: config: MaxMessageSize is %d, want 1 KiB up to MaxFrameSize (%d)", c.MaxMessageSize, c.MaxFrameSize)
	case c.MaxInflightBytesPerPeer < c.MaxMessageSize:
		return fmt.Errorf("remote: config: MaxInflightBytesPerPeer is %d, want at least MaxMessageSize (%d)", c.MaxInflightBytesPerPeer, c.MaxMessageSize)
	case c.ReadBudgetBytes < c.MaxFrameSize:
		return fmt.Errorf("remote: config: ReadBudgetBytes is %d, want at least MaxFrameSize (%d)", c.ReadBudgetBytes, c.MaxFrameSize)
	case c.MaxLinksPerPeer < 2:
		return fmt.Errorf("remote: config: MaxLinksPerPeer is %d, want 2 or more", c.MaxLinksPerPeer)
	case c.MaxAnnounceBytes < 1<<10:
		return fmt.Errorf("remote: config: MaxAnnounceBytes is %d, want 1 KiB or more", c.MaxAnnounceBytes)
	case c.MaxWatchesPerPeer < 1:
		return fmt.Errorf("remote: config: MaxWatchesPerPeer is %d, want 1 or more", c.MaxWatchesPerPeer)
	case c.ForgetNodesAfter < 0:
		return fmt.Errorf("remote: config: ForgetNodesAfter is %v, want a positive duration", c.ForgetNodesAfter)
	case c.MaxNodes < 1:
		return fmt.Errorf("remote: config: MaxNodes is %d, want 1 or more", c.MaxNodes)
	}
	return nil
}

// window is how long this node waits on its own resources for a link
// (a fence, read budget) before it closes links instead: the heartbeat
// window, after which a silent link is dead too.
func (c Config) window() time.Duration {
	return c.HeartbeatInterval * time.Duration(c.HeartbeatMisses)
}
