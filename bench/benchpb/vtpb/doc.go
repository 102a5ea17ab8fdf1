// Package vtpb is the "data-vt" payload: the data payload's messages
// (same fields, numbers and values) generated with protoc-gen-go and
// with vtprotobuf v0.6.0 (features marshal, unmarshal, size), so they
// have SizeVT, MarshalToSizedBufferVT and UnmarshalVT besides the
// protobuf API. The generated files are committed; benchpb's package
// comment has the commands that regenerate them.
package vtpb
