package services

import (
	"fmt"
	"regexp"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/idempotency"
)

// Service is what a node provides: a name, a version, functions, and the
// defaults callers inherit.
type Service struct {
	// Name: 1-64 letters, digits, '.', '_' or '-'.
	Name string
	// Version of this provider. A node provides at most one version per
	// name and major.
	Version Version
	// Functions: at least one, names unique within the service.
	Functions []Function
	// Defaults for every call to this service. Announced with the
	// service, so callers merge them under their own options.
	Defaults Defaults
}

// Defaults are a provider's defaults for calls to its service.
type Defaults struct {
	// Retry is merged field by field under each call's options.
	Retry RetryPolicy
	// Deadline is the longest one attempt of any function may run (a
	// Function's own Deadline overrides it). It is the provider's
	// contract and bounds a wedged handler: the handler's ctx ends then,
	// and the caller stops waiting then (may have executed). 0: none.
	Deadline time.Duration
}

// Function is one function of a service.
type Function struct {
	// Name: 1-64 letters, digits, '.', '_' or '-'.
	Name string
	// Handler runs the call; its ctx carries the caller's deadline and
	// the contract's. Its error reaches the caller as actor.Handler
	// documents: a rejection (executed, never retried) unless it states
	// another outcome (actor.NotExecutedError, an error from a call the
	// handler made returned as-is, its ended ctx's error); one that did
	// not execute is retried like any other.
	Handler actor.Handler
	// Idempotent declares that running the function twice with the same
	// argument is harmless. Only then are failures that may have
	// executed (the provider died or the deadline passed mid-call)
	// retried.
	Idempotent bool
	// Guard, when set, runs every call of the function that carries an
	// idempotency key (idempotency.WithKey on the caller's ctx) under it,
	// once per key (idempotency.Handler), and serves its Status on this
	// node (idempotency.Serve; one guard per node). The function is
	// announced keyed: a caller whose call carries a key and may have
	// executed asks the provider's Status instead of giving up, and
	// gets the recorded result, or retries once the key is fenced as
	// never ran (see Call). Calls without a key run as they are.
	Guard *idempotency.Guard
	// Deadline overrides Defaults.Deadline for this function (0: use it).
	Deadline time.Duration
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// validate returns an error naming the first bad field.
func (s *Service) validate() error {
	if !nameRE.MatchString(s.Name) {
		return fmt.Errorf("services: Service.Name %q: want 1-64 letters, digits, '.', '_' or '-'", s.Name)
	}
	if !s.Version.valid() {
		return fmt.Errorf("services: Service.Version %v of %s: parts must not be negative", s.Version, s.Name)
	}
	if len(s.Functions) == 0 {
		return fmt.Errorf("services: Service.Functions of %s is empty: a service needs at least one function", s.Name)
	}
	if err := s.Defaults.Retry.validate("Service.Defaults.Retry"); err != nil {
		return err
	}
	if s.Defaults.Deadline < 0 {
		return fmt.Errorf("services: Service.Defaults.Deadline of %s is %v, want a positive duration or 0 (none)", s.Name, s.Defaults.Deadline)
	}
	seen := map[string]bool{}
	for i, f := range s.Functions {
		switch {
		case !nameRE.MatchString(f.Name):
			return fmt.Errorf("services: Service.Functions[%d].Name %q of %s: want 1-64 letters, digits, '.', '_' or '-'", i, f.Name, s.Name)
		case seen[f.Name]:
			return fmt.Errorf("services: Service.Functions[%d].Name %q of %s: listed twice", i, f.Name, s.Name)
		case f.Handler == nil:
			return fmt.Errorf("services: Service.Functions[%d].Handler of %s.%s is nil", i, s.Name, f.Name)
		case f.Deadline < 0:
			return fmt.Errorf("services: Service.Functions[%d].Deadline of %s.%s is %v, want a positive duration or 0", i, s.Name, f.Name, f.Deadline)
		}
		seen[f.Name] = true
	}
	return nil
}

// record is the announced form of a service (no handlers).
func (s *Service) record() *record {
	r := &record{Name: s.Name, Version: s.Version, Defaults: s.Defaults}
	for _, f := range s.Functions {
		r.Fns = append(r.Fns, fnRecord{Name: f.Name, Idempotent: f.Idempotent, Keyed: f.Guard != nil, Deadline: f.Deadline})
	}
	return r
}

// regName is the name a function is registered under in the node's
// function registry: the major is part of it, so a call can never reach
// an incompatible version that took over the node name.
func regName(service string, major int, fn string) string {
	return fmt.Sprintf("svc:%s@%d:%s", service, major, fn)
}
