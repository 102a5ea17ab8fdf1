package discoveryhooks

import "log/slog"

// DefaultLogger gives provider p the logger l when its configuration set
// none. discovery sets it at init; it does nothing for providers that do
// not log.
var DefaultLogger = func(p any, l *slog.Logger) {}
