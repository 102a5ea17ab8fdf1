package bridge

import (
	"fmt"
	"log/slog"

	"google.golang.org/protobuf/reflect/protoregistry"
)

// Config configures a Bridge. Zero fields take the defaults documented on
// each; DefaultConfig returns them filled in (Types excepted).
type Config struct {
	// Types resolves the protobuf message types of payloads that arrive
	// from other nodes (requests and replies alike). Default: the mailroom
	// System's own registry, so System.RegisterTypes serves mailroom and
	// protoactor messages alike. Set protoregistry.GlobalTypes to accept
	// every generated type linked into the binary, as protoactor-go's own
	// remote does. A payload of a type it does not know is refused with a
	// clear error on both sides.
	Types protoregistry.MessageTypeResolver
	// Lanes is how many mailroom sender handles carry outgoing messages.
	// Every message to one target takes the same lane, so per-target order
	// holds; different targets spread over the lanes and so over a proxy
	// pool's proxies. Default 64.
	Lanes int
	// MaxQueued bounds the messages waiting for one node while the
	// bridge opens its session with it (the first contact, or after the
	// node restarted). Beyond it a message fails at once (a request with
	// mailroom's ErrOverloaded; a send is a dead letter). Default 65536.
	MaxQueued int
	// MaxWatchesPerPeer bounds the watches one peer incarnation may hold
	// on this node's actors; beyond it a watch is refused (logged and
	// counted). Default 65536.
	MaxWatchesPerPeer int
	// EndpointMailbox bounds each endpoint actor's mailbox; a full one
	// makes the sending link wait (mailroom's Block policy), so a flood
	// from a peer is backpressure, not memory. Default 16384.
	EndpointMailbox int
	// Logger receives the bridge's logs (refused messages, sessions).
	// Default: the mailroom System's logger.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Lanes:             64,
		MaxQueued:         65536,
		MaxWatchesPerPeer: 65536,
		EndpointMailbox:   16384,
	}
}

// withDefaults fills zero fields and validates.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	if c.Lanes == 0 {
		c.Lanes = d.Lanes
	}
	if c.MaxQueued == 0 {
		c.MaxQueued = d.MaxQueued
	}
	if c.MaxWatchesPerPeer == 0 {
		c.MaxWatchesPerPeer = d.MaxWatchesPerPeer
	}
	if c.EndpointMailbox == 0 {
		c.EndpointMailbox = d.EndpointMailbox
	}
	return c, c.validate()
}

func (c Config) validate() error {
	switch {
	case c.Lanes < 1 || c.Lanes > 4096:
		return fmt.Errorf("bridge: config: Lanes is %d, want 1 to 4096 (0 means the default 64)", c.Lanes)
	case c.MaxQueued < 1:
		return fmt.Errorf("bridge: config: MaxQueued is %d, want a positive number (0 means the default 65536)", c.MaxQueued)
	case c.MaxWatchesPerPeer < 1:
		return fmt.Errorf("bridge: config: MaxWatchesPerPeer is %d, want a positive number (0 means the default 65536)", c.MaxWatchesPerPeer)
	case c.EndpointMailbox < 1:
		return fmt.Errorf("bridge: config: EndpointMailbox is %d, want a positive number (0 means the default 16384)", c.EndpointMailbox)
	}
	return nil
}
