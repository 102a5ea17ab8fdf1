package testnode

import (
	"log/slog"
	"testing"
)

// tlogWriter sends log lines to the test log (shown on failure or -v).
type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

func testLogger(t testing.TB, level string) *slog.Logger {
	l := slog.LevelWarn
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "error":
		l = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: l}))
}
