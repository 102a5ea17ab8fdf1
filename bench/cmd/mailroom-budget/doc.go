// Command mailroom-budget prints where the CPU of one or more profiles
// goes per message: a markdown table with one column per profile and one
// row per bucket (package budget), in microseconds of CPU per message.
//
//	mailroom-budget -msgs 8000000 DIR/000-...sender.pprof DIR/000-...receiver.pprof
//
// The profiles are those of `mailroom-bench -pprof DIR` (both processes
// of every point's measured phase); -msgs is the point's measured
// operations (its "ops" in the results JSON). It runs `go tool pprof
// -raw` on each file, so it needs the go command.
package main
