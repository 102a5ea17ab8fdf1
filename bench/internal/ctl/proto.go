package ctl

import "encoding/json"

// EnvRole names the role a re-executed child runs; EnvConfig carries its
// JSON configuration.
const (
	EnvRole   = "MAILROOM_BENCH_ROLE"
	EnvConfig = "MAILROOM_BENCH_CONFIG"
)

// request is one command line.
type request struct {
	Cmd string          `json:"cmd"`
	Arg json.RawMessage `json:"arg,omitempty"`
}

// response is one answer line. The first line a child writes is its ready
// line (Cmd "ready").
type response struct {
	Cmd string          `json:"cmd"`
	Res json.RawMessage `json:"res,omitempty"`
	Err string          `json:"err,omitempty"`
}
