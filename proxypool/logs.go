package proxypool

import (
	"context"
	"log/slog"
)

// routineAtDebug is a slog.Handler that logs Info records at Debug: the
// proxy pool's supervisor starts and restarts a connection master per
// peer as routine, which an application's Info log should not show as if
// they were its own children. Warnings and errors pass unchanged.
type routineAtDebug struct{ slog.Handler }

func (h routineAtDebug) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		l = slog.LevelDebug
	}
	return h.Handler.Enabled(ctx, l)
}

func (h routineAtDebug) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h routineAtDebug) WithAttrs(as []slog.Attr) slog.Handler {
	return routineAtDebug{h.Handler.WithAttrs(as)}
}

func (h routineAtDebug) WithGroup(name string) slog.Handler {
	return routineAtDebug{h.Handler.WithGroup(name)}
}
