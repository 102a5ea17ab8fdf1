// Package testpb holds the messages of the bridge's tests and example
// (test.proto, generated into test.pb.go). Not API.
//
// Regenerate after editing test.proto:
//
//	cd protoactor/internal/testpb && protoc --go_out=. --go_opt=paths=source_relative test.proto
package testpb
