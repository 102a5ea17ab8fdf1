// Package examplepb holds the protobuf messages of mailroom's examples:
// a public package, so code outside the module can import it while
// trying the examples, and a model of what a user writes for their own
// messages (docs/MESSAGES.md explains the .proto, the generation and the
// registration). Regenerate from the module's root with protoc (Debian's
// protobuf-compiler) and protoc-gen-go v1.36.12:
//
//	protoc -I . --go_out=. --go_opt=paths=source_relative examples/examplepb/example.proto
package examplepb
