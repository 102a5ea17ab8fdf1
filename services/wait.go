package services

import (
	"context"
	"fmt"
	"strings"

	"github.com/mailroom-go/mailroom/actor"
)

// WaitProvider returns once this node knows a provider of service whose
// version want allows and that is not draining (this node's own, when it
// provides the service itself): its ProviderInfo, the first by node name
// when several are. It waits on the layer's own view of who provides
// what, which discovery and the peers' announcements update (no polling),
// and does not check that a call would reach the provider now: a call
// reports that with its outcome, and services.Call retries what did not
// execute. When ctx ends first, the error wraps ctx's error and says what
// was waited for and which providers were known instead; when the node
// stops, it wraps actor.ErrStopped.
func (s *Services) WaitProvider(ctx context.Context, service string, want Constraint) (ProviderInfo, error) {
	for {
		p, ok, seen, changed := s.provider(service, want)
		if ok {
			return p, nil
		}
		if s.life.Err() != nil {
			return ProviderInfo{}, fmt.Errorf("services: waiting for a provider of %s %s: %w", service, want, actor.ErrStopped)
		}
		select {
		case <-changed:
		case <-s.life.Done():
		case <-ctx.Done():
			known := "none known"
			if len(seen) > 0 {
				known = "known: " + strings.Join(seen, ", ")
			}
			return ProviderInfo{}, fmt.Errorf("services: waiting for a provider of %s %s, not draining: none came (%s): %w", service, want, known, ctx.Err())
		}
	}
}

// provider is the first provider of service that want allows and that is
// not draining, what else provides service, and the channel closed on the
// registry's next change.
func (s *Services) provider(service string, want Constraint) (ProviderInfo, bool, []string, <-chan struct{}) {
	s.reg.mu.Lock()
	changed := s.reg.changed
	s.reg.mu.Unlock()
	var seen []string
	for _, p := range s.Providers(service) {
		if want.Allows(p.Version) && !p.Draining {
			return p, true, nil, changed
		}
		seen = append(seen, p.String())
	}
	return ProviderInfo{}, false, seen, changed
}
