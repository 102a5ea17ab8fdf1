package actor

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/mailroom-go/mailroom/internal/nodename"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Config configures a System. Zero fields take the defaults documented on
// each; DefaultConfig returns them filled in.
type Config struct {
	// Name is the node name, unique in the cluster (e.g. "orders-1"):
	// letters, digits, '.', '_', '-', at most 128 bytes. Default "local".
	Name string
	// Logger receives the runtime's logs (crashes, restarts, dropped
	// links). Default: text to stderr at Info. There is no global logger.
	Logger *slog.Logger
	// Throughput is how many messages an actor processes in one turn
	// before yielding the processor, so one busy actor cannot starve the
	// others. Default 300.
	Throughput int
	// Types resolves protobuf message names for messages and function
	// arguments that cross the wire. Default: a registry private to this
	// system, filled by System.RegisterTypes. Set protoregistry.GlobalTypes
	// to accept every generated type linked into the binary.
	Types TypeRegistry
	// Clock is the time source of timers, receive timeouts and schedules.
	// Default WallClock; tests pass a fake clock to drive time.
	Clock Clock
	// ReceiveMiddleware wraps the Receive of every actor of this System,
	// outside the actor's own (Props.ReceiveMiddleware); SendMiddleware
	// wraps what every actor, Sender handle and the System's own methods
	// send, inside an actor's own (middleware.go). Default none.
	ReceiveMiddleware []ReceiveMiddleware
	SendMiddleware    []SendMiddleware
}

// TypeRegistry is what a System needs from a protobuf type registry.
type TypeRegistry interface {
	protoregistry.MessageTypeResolver
	RegisterMessage(mt protoreflect.MessageType) error
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Name:       "local",
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Throughput: 300,
		Types:      new(protoregistry.Types),
		Clock:      WallClock{},
	}
}

// DiscardLogger is a logger that drops everything, for tests and examples.
func DiscardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// withDefaults fills zero fields and validates.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	if c.Name == "" {
		c.Name = d.Name
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	if c.Throughput == 0 {
		c.Throughput = d.Throughput
	}
	if c.Types == nil {
		c.Types = d.Types
	}
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	return c, c.validate()
}

func (c Config) validate() error {
	if !nodename.Valid(c.Name) {
		return fmt.Errorf("mailroom: config: Name %q: want %s", c.Name, nodename.Rule)
	}
	if c.Throughput < 0 {
		return fmt.Errorf("mailroom: config: Throughput is %d, want a positive number (0 means the default 300)", c.Throughput)
	}
	return nil
}
