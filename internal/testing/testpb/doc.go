// Package testpb holds protobuf messages for mailroom's tests and examples.
// The messages of testvt.proto also have vtprotobuf's fast methods (the
// remote layer's fast codec). Regenerate with protoc (Debian's
// protobuf-compiler), protoc-gen-go v1.36.12 and protoc-gen-go-vtproto
// v0.6.0 (go install github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@v0.6.0):
//
//	protoc --go_out=. --go_opt=paths=source_relative testpb.proto
//	protoc --go_out=. --go_opt=paths=source_relative \
//		--go-vtproto_out=. --go-vtproto_opt=paths=source_relative,features=marshal+unmarshal+size testvt.proto
package testpb
