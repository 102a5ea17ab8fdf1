// Package wirepb holds the bridge's wire messages (wire.proto, generated
// into wire.pb.go): the Envelope one bridge sends another through mailroom
// and the Hello that opens a session. Not API.
//
// Regenerate after editing wire.proto (protoc from Debian's
// protobuf-compiler, protoc-gen-go v1.36.12):
//
//	cd protoactor/internal/wirepb && protoc --go_out=. --go_opt=paths=source_relative wire.proto
package wirepb
