// Package examplepb holds the protobuf messages of mailroom's examples
// that carry a PID (actor/pidpb); kept apart from internal/testpb, which
// package actor's own tests import. Regenerate from the module's root with
// protoc (Debian's protobuf-compiler) and protoc-gen-go v1.36.12:
//
//	protoc -I . --go_out=. --go_opt=paths=source_relative internal/examplepb/example.proto
package examplepb
