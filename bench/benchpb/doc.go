// Package benchpb holds the benchmark's protobuf payloads (bench.proto,
// generated into bench.pb.go) and the four payload profiles built from
// them. Every path sends the same message values, so the same payload
// bytes.
//
// Regenerate after editing bench.proto (protoc from Debian's
// protobuf-compiler, protoc-gen-go v1.36.12):
//
//	cd bench/benchpb && protoc --go_out=. --go_opt=paths=source_relative bench.proto
package benchpb
