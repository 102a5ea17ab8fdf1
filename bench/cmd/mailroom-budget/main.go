package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/mailroom-go/mailroom/bench/internal/budget"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mailroom-budget:", err)
		os.Exit(1)
	}
}

func run() error {
	msgs := flag.Int64("msgs", 0, "messages (operations) the profiles' phase measured")
	rows := flag.Int("rows", 14, "buckets shown per profile; the rest are summed in one row")
	flag.Parse()
	if *msgs <= 0 || flag.NArg() == 0 {
		return fmt.Errorf("usage: mailroom-budget -msgs N PROFILE [PROFILE ...]")
	}
	type col struct {
		name  string
		by    map[string]int64
		total int64
	}
	var cols []col
	var order []string
	seen := map[string]bool{}
	for _, path := range flag.Args() {
		out, err := exec.Command("go", "tool", "pprof", "-raw", path).Output()
		if err != nil {
			return fmt.Errorf("go tool pprof -raw %s: %w", path, err)
		}
		samples, err := budget.Parse(bytes.NewReader(out))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		lines, total := budget.Split(samples)
		c := col{name: filepath.Base(path), by: map[string]int64{}, total: total}
		for i, l := range lines {
			c.by[l.Bucket] = l.Nanos
			if i < *rows && !seen[l.Bucket] {
				seen[l.Bucket] = true
				order = append(order, l.Bucket)
			}
		}
		cols = append(cols, c)
	}
	us := func(ns int64) string { return fmt.Sprintf("%.3f", float64(ns)/1e3/float64(*msgs)) }
	fmt.Printf("| where (µs of CPU per message) |")
	for _, c := range cols {
		fmt.Printf(" %s |", c.name)
	}
	fmt.Printf("\n|---|%s\n", repeat("--:|", len(cols)))
	for _, b := range order {
		fmt.Printf("| %s |", b)
		for _, c := range cols {
			fmt.Printf(" %s |", us(c.by[b]))
		}
		fmt.Println()
	}
	fmt.Printf("| everything else |")
	for _, c := range cols {
		var shown int64
		for _, b := range order {
			shown += c.by[b]
		}
		fmt.Printf(" %s |", us(c.total-shown))
	}
	fmt.Printf("\n| **total sampled** |")
	for _, c := range cols {
		fmt.Printf(" **%s** |", us(c.total))
	}
	fmt.Println()
	return nil
}

func repeat(s string, n int) string {
	var b bytes.Buffer
	for range n {
		b.WriteString(s)
	}
	return b.String()
}
