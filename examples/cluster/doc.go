// Command cluster runs three nodes in separate processes on one Consul
// agent: alpha (this process), beta and gamma (child processes). It kills
// gamma with SIGKILL while alpha has calls running on it, shows alpha and
// beta noticing through Consul, the calls failing as "may have executed",
// and gamma coming back as a new incarnation that everyone discovers.
//
// It needs a Consul agent: `make demo-cluster` starts one
// (scripts/consul.sh run -- go run ./examples/cluster).
package main
