// Package clustertest holds the runtime's multi-process tests against a
// real Consul agent: a killed node gone within TTL, a frozen node whose
// calls fail through Consul alone and which stops itself when thawed, a
// restarted node as a new incarnation with a fresh pool, graceful
// deregistration, and re-registration after an agent restart. Run them
// with `make test` (which starts an agent); outside it they skip, and
// under CI=true a missing agent fails them.
package clustertest
