// Package benchpb holds the benchmark's protobuf payloads (bench.proto,
// generated into bench.pb.go; vtpb/benchvt.proto, generated with
// vtprotobuf too) and the payload profiles built from them. Every path
// sends the same message values, so the same payload bytes.
//
// Regenerate after editing a .proto file (protoc 3.21.12 from Debian's
// protobuf-compiler, protoc-gen-go v1.36.12, protoc-gen-go-vtproto
// v0.6.0; the generated code is committed, so building needs none of
// them):
//
//	apt-get install -y protobuf-compiler
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@v0.6.0
//	cd bench/benchpb && protoc --go_out=. --go_opt=paths=source_relative bench.proto
//	cd bench/benchpb/vtpb && protoc --go_out=. --go_opt=paths=source_relative \
//	    --go-vtproto_out=. --go-vtproto_opt=paths=source_relative,features=marshal+unmarshal+size benchvt.proto
package benchpb
