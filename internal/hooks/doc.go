// Package hooks holds the slots through which the actor core offers
// mailroom's own packages (the transports, the supervisor, the test
// harnesses) what a user never calls, without widening actor's public API
// (the pattern of grpc's internal package). Package actor fills every
// slot when it is initialised, with a function of the type the slot's
// comment gives; it cannot import a package that names its types, so the
// slots are untyped. Consumers do not read them: internal/actorhooks
// type-asserts each one once, at its own initialisation, and offers them
// typed. Not API.
package hooks
