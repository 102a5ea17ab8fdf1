package discovery

import "context"

// Test hooks for the conformance suite, which runs in package
// discovery_test (discoverytest imports discovery).

// SetBeforeTick sets the hook run before each TTL updater attempt; set it
// before Start.
func SetBeforeTick(p *Consul, f func(ctx context.Context)) { p.beforeTick = f }

// SetCrash makes Stop skip the deregistration, as a killed process would.
func SetCrash(p *Consul) { p.crash = true }

// InstanceID and CheckID name an incarnation's instance and check.
func InstanceID(service string, m Member) string { return instanceID(service, m) }
func CheckID(serviceID string) string            { return checkID(serviceID) }
