// Package idempotencypb holds the messages of package idempotency's
// status function (generated from idempotency.proto with protoc-gen-go
// v1.36.12: protoc -I . --go_out=. --go_opt=paths=source_relative
// internal/idempotencypb/idempotency.proto). Not API: users call
// idempotency.Status.
package idempotencypb
