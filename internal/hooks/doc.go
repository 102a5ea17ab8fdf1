// Package hooks carries what the actor core offers mailroom's own
// transports and nobody else, without widening the public API (the
// pattern of grpc's internal package): package actor sets each hook when
// it is initialised, typed as the comment on the hook says; the remote
// package type-asserts it once. Not API.
package hooks
