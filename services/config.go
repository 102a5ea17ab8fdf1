package services

import (
	"fmt"
	"log/slog"
	"time"
)

// Config configures a node's services layer. Zero fields take the
// defaults documented on each (DefaultConfig).
type Config struct {
	// Retry is this node's default retry policy, level 3 of the merge
	// (see RetryPolicy): under each call's options and the provider's
	// defaults, over DefaultRetryPolicy. Zero fields inherit.
	Retry RetryPolicy
	// Clock runs the retry loop (attempt times, pauses, the budget).
	// Default: the real clock.
	Clock Clock
	// DrainAckWait bounds how long a stopping provider waits for the
	// other services nodes to confirm they stopped sending to it (see
	// the package documentation, "Graceful drain"); the ctx given to
	// System.Stop bounds it too. Default 5s.
	DrainAckWait time.Duration
	// Logger; default the System's.
	Logger *slog.Logger
}

// DefaultDrainAckWait is Config.DrainAckWait's default.
const DefaultDrainAckWait = 5 * time.Second

// DefaultConfig returns the defaults (Logger stays nil: the System's).
func DefaultConfig() Config {
	return Config{Retry: DefaultRetryPolicy(), Clock: realClock{}, DrainAckWait: DefaultDrainAckWait}
}

func (c Config) withDefaults(sysLog *slog.Logger) (Config, error) {
	d := DefaultConfig()
	if err := c.Retry.validate("Config.Retry"); err != nil {
		return c, err
	}
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	if c.DrainAckWait == 0 {
		c.DrainAckWait = d.DrainAckWait
	}
	if c.DrainAckWait < 0 {
		return c, fmt.Errorf("services: Config.DrainAckWait is %v, want a positive duration (0: %v)", c.DrainAckWait, DefaultDrainAckWait)
	}
	if c.Logger == nil {
		c.Logger = sysLog
	}
	return c, nil
}
