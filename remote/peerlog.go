package remote

import (
	"context"
	"log/slog"
	"time"

	"github.com/mailroom-go/mailroom/internal/nodename"
)

// Log lines a peer can cause. A peer that links, sends one bad frame and
// comes back as a new incarnation, thousands of times a second, makes a
// "link down" and a "peer incarnation gone" line each time; unlimited,
// that filled 18 MB of log a second. So every such line goes through
// peerLine: at most peerLogBurst lines a second per level (warnings;
// debug lines, when enabled, apart), then one that says how many were
// suppressed, as the refused handshakes do. Each names its peer once
// (the attribute "peer"; the reasons beside it do not repeat it), a name
// checked at the handshake, or quoted and cut (logName) where it was not.

// peerLogBurst is how many lines a peer can cause per second and level.
const peerLogBurst = 20

// peerLine logs a line a peer can cause, rate-limited.
func (n *Node) peerLine(level slog.Level, msg string, args ...any) {
	ctx := context.Background()
	if !n.log.Enabled(ctx, level) {
		return
	}
	lim := &n.peerWarnLog
	if level < slog.LevelWarn {
		lim = &n.peerDebugLog
	}
	ok, suppressed := lim.allow(time.Now())
	if !ok {
		return
	}
	n.log.Log(ctx, level, msg, append(args, "suppressed", suppressed)...)
}

// logName is a node name for a log line: as it is when it follows the
// rule (checked at the handshake), quoted and cut when it does not (a
// hello being refused).
func logName(name string) string {
	if nodename.Valid(name) || name == "" {
		return name
	}
	return nodename.Quote(name)
}
