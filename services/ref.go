package services

import (
	"context"

	"google.golang.org/protobuf/proto"
)

// Ref is a handle on a service at a version constraint, for callers that
// call it often: Ref{...}.Call(ctx, "query", arg). Cheap to copy.
type Ref struct {
	s       *Services
	service string
	want    Constraint
	opts    []CallOption
}

// Ref returns a handle on service at want; opts apply to every call made
// through it, before the call's own options.
func (s *Services) Ref(service string, want Constraint, opts ...CallOption) Ref {
	return Ref{s: s, service: service, want: want, opts: append([]CallOption(nil), opts...)}
}

// Call is Services.Call through the handle.
func (r Ref) Call(ctx context.Context, fn string, arg proto.Message, opts ...CallOption) (proto.Message, error) {
	all := append(append([]CallOption(nil), r.opts...), opts...)
	return r.s.Call(ctx, r.service, r.want, fn, arg, all...)
}

// Providers lists the providers the handle's constraint accepts.
func (r Ref) Providers() []ProviderInfo {
	var out []ProviderInfo
	for _, p := range r.s.Providers(r.service) {
		if r.want.Allows(p.Version) {
			out = append(out, p)
		}
	}
	return out
}
