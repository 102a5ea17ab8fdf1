package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/mailroom-go/mailroom/bench/internal/harness"
	"github.com/mailroom-go/mailroom/bench/internal/report"
	"github.com/mailroom-go/mailroom/bench/internal/spec"
)

func main() {
	if isRole, err := runRole(); isRole {
		if err != nil {
			fmt.Fprintln(os.Stderr, "mailroom-bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mailroom-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	setName := flag.String("set", "quick", "which points: quick or full")
	name := flag.String("name", "", "result name (default: the set's): results/<name>.json, .md, -*.svg")
	outDir := flag.String("out", "results", "directory for the results")
	only := flag.String("only", "", "run only points whose description matches this regexp")
	rounds := flag.Int("rounds", 0, "rounds per unpaced group (default: the set's)")
	profile := flag.String("pprof", "", "write CPU profiles of both processes of every point's measured phase into this directory")
	skipRaw := flag.Bool("skip-raw", false, "skip the raw-TCP reference")
	writers := flag.Int("writers", 0, "override every selected point's writers (exploration; the sets' points are the reported ones)")
	perWriter := flag.Int("m", 0, "override every selected point's operations per writer")
	pace := flag.Duration("pace", 0, "override every selected paced point's pace")
	readme := flag.String("readme", "", "also replace the results section of this README")
	render := flag.String("render", "", "run nothing: re-render the report, plots (and README) from this results JSON")
	flag.Parse()

	if *render != "" {
		return rerender(*render, *outDir, *readme)
	}

	set, err := spec.ByName(*setName)
	if err != nil {
		return err
	}
	if *name == "" {
		*name = set.Name
	}
	o := harness.Options{Rounds: *rounds, ProfileDir: *profile, SkipRaw: *skipRaw, Command: commandLine(), Writers: *writers, PerWriter: *perWriter, Pace: *pace}
	if *only != "" {
		if o.Only, err = regexp.Compile(*only); err != nil {
			return err
		}
	}
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			return err
		}
	}
	res, err := harness.Run(set, o)
	if err != nil {
		return err
	}
	res.Name = *name
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	files, err := report.WriteAll(res, *outDir)
	if err != nil {
		return err
	}
	if *readme != "" {
		if err := report.SpliceReadme(*readme, res, *outDir); err != nil {
			return err
		}
		files = append(files, *readme)
	}
	fmt.Fprintf(os.Stderr, "wrote %s (%.0f s)\n", strings.Join(files, ", "), res.WallS)
	return nil
}

// rerender rebuilds a result's medians, targets, notes and files from its
// recorded rounds.
func rerender(path, outDir, readme string) error {
	res, err := report.ReadJSON(path)
	if err != nil {
		return err
	}
	report.Finish(res)
	files, err := report.WriteAll(res, outDir)
	if err != nil {
		return err
	}
	if readme != "" {
		if err := report.SpliceReadme(readme, res, outDir); err != nil {
			return err
		}
		files = append(files, readme)
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", strings.Join(files, ", "))
	return nil
}

// commandLine is how this run was asked for, for the record.
func commandLine() string {
	if c := os.Getenv("MAILROOM_BENCH_COMMAND"); c != "" {
		return c
	}
	return filepath.Base(os.Args[0]) + " " + strings.Join(os.Args[1:], " ")
}
