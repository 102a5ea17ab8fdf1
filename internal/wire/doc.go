// Package wire is the byte format of a link between two mailroom nodes,
// implemented exactly as SPEC.md (beside this file) describes it: frames
// and their kinds, the element codec (sends, calls, replies, control,
// batches), payload encoding and the per-node decode cache (Codecs), the
// error status of replies, the frame reader with its read budget, the
// handshake (hello, proofs, verdicts) and its refusal codes.
//
// It is not API: package remote (links, the native path, the handshake's
// policy: what to admit, TLS, identity) and package proxypool (batches)
// use it, and users never see it; remote re-exports ErrHandshake.
//
// Decoders never panic and never allocate past what their input holds:
// a frame's size is checked against the limit before anything is
// allocated, and the frame reader grows its buffer as bytes arrive,
// within a Budget. The fuzzers (FuzzFrameDecoder, FuzzEnvelope,
// FuzzHandshake, with their corpus in testdata/fuzz) check it:
//
//	go test -run '^$' -fuzz FuzzFrameDecoder -fuzztime 1m ./internal/wire
package wire
