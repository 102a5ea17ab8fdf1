// Package hooks holds the two slots through which mailroom's packages
// offer each other what a user never calls, without widening a public
// API (the pattern of grpc's internal package): Actor, the actor core's
// side for the transports, the supervisor and the read side, filled by
// package actor; PoolHost, a remote.Node as the pooled path sees it,
// filled by package remote. A slot's owner cannot import a package that
// names its types, so each slot is untyped; its one reader asserts it
// once, at initialisation (internal/actorhooks for Actor, proxypool for
// PoolHost), so a mismatch panics before anything runs, and offers it
// typed. Not API.
package hooks
