// Command mailroom-bench runs the side-by-side benchmark: mailroom's
// native and pooled remote paths, protoactor-go's remote, and
// protoactor-go's actors over mailroom's remote (the protoactor bridge),
// sender and receiver in two processes on loopback, beside the
// references that carry no runtime (lean: protobuf over one TCP
// connection; raw TCP: pre-encoded frames, and a ping-pong for the round
// trip), and writes results/<name>.json, results/<name>.md and SVG plots.
//
//	go run ./cmd/mailroom-bench -set quick   # make bench-quick
//	go run ./cmd/mailroom-bench -set full    # make bench
//
// The same binary is each node: the controller re-executes it with a
// role in its environment.
package main
