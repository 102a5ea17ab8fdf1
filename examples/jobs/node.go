package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/remote"
)

// startNode starts sys's remote node on listen with the cookie from
// JOBS_COOKIE; seeds ("name=host:port") are the Static discovery's.
func startNode(sys *actor.System, listen string, seeds []string) *remote.Node {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := remote.Start(ctx, sys, remote.Config{Cookie: os.Getenv("JOBS_COOKIE"), Listen: listen, Seeds: seeds})
	check(err)
	return node
}

// waitStdin returns when stdin closes: the driver stops a node that way.
func waitStdin() { _, _ = io.Copy(io.Discard, os.Stdin) }

// logger: the runtime's warnings on stderr with JOBS_LOG=1, else none.
func logger() *slog.Logger {
	if v, _ := strconv.ParseBool(os.Getenv("JOBS_LOG")); v {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return actor.DiscardLogger()
}

func check(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobs %s: %v\n", os.Getenv("JOBS_NAME"), err)
		os.Exit(1)
	}
}
