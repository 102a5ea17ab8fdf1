// Package budget splits a CPU profile into where the time goes per
// message: every sample is put in exactly one bucket by the first rule
// its stack matches (rules in order), so the buckets add up to the
// profile's total. It reads the text of `go tool pprof -raw`, so it
// needs no profile-parsing dependency.
//
// The rules go from the runtime's own costs (garbage collection,
// allocation, the codec, socket syscalls, lock contention, the
// scheduler) to the mailroom (or lean, or protoactor) function nearest
// the leaf, so what is left is named after the code that spent it.
package budget
