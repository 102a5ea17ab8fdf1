// Package spec says what a benchmark point is (operation, path, payload,
// writers and what they are, actors or plain goroutines, which receivers
// they send to, pace, operations per writer, warm-up) and which points
// the quick and full runs hold, in the order they run: points that
// differ only in path run back to back, round after round, so paths are
// compared under the same machine conditions.
package spec
