// Package consultest gives tests a real Consul agent.
//
// Tests that only need an agent call Addr, which returns the shared agent
// that scripts/consul.sh starts:
//
//	make test
//	scripts/consul.sh run -- go test -race ./...
//
// Tests that must kill or restart the agent start their own with
// StartAgent, from the binary the script exports as MAILROOM_CONSUL_BIN.
//
// Without the script's environment these helpers skip the test, except
// under CI=true, where they fail it: a CI run must not pass by skipping.
package consultest
