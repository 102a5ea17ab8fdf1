package kubernetes

import "context"

// Test hooks for the conformance suite, which runs in package
// kubernetes_test.

// SetBeforeTick sets the hook run before each renewal; set it before
// Start.
func SetBeforeTick(p *Provider, f func(ctx context.Context)) { p.beforeTick = f }

// SetCrash makes Stop keep the lease, as a killed process would.
func SetCrash(p *Provider) { p.crash.Store(true) }
