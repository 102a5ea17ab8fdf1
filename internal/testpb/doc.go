// Package testpb holds protobuf messages for mailroom's tests and examples.
// Regenerate with: protoc --go_out=. --go_opt=paths=source_relative testpb.proto
package testpb
