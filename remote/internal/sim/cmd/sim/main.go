package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/remote/internal/peers"
	"github.com/mailroom-go/mailroom/remote/internal/sim"
)

func main() {
	seeds := flag.Uint64("seeds", 1_000_000, "seeds to run")
	from := flag.Uint64("from", 0, "first seed")
	flag.Parse()
	start := time.Now()
	s := sim.Many(*from, *seeds, peers.Mutations{}, 0)
	fmt.Printf("sim %s duration=%v\n", s, time.Since(start).Round(time.Millisecond))
	if s.Failures > 0 {
		r := sim.Run(sim.Options{Seed: s.FirstFailure, Trace: true})
		fmt.Printf("first failing seed %d: %v\nreplay: go test ./remote/internal/sim/ -run TestSeeds -sim.seed=%d\n%s\n",
			s.FirstFailure, r.Violation, s.FirstFailure, strings.Join(r.Trace, "\n"))
		os.Exit(1)
	}
}
