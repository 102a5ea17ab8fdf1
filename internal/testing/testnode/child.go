package testnode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/remote"
	"go.opentelemetry.io/otel/trace"
)

const envChild = "MAILROOM_TESTNODE"

// Options configure a child node.
type Options struct {
	Name      string
	Cookie    string
	Seeds     []string      // name=addr of nodes it should know
	PoolSize  int           // remote.Config.PoolSize (0 default, -1 disabled)
	Heartbeat time.Duration // remote.Config.Liveness.HeartbeatInterval (0 default)
	Misses    int
	Listen    string // default 127.0.0.1:0
	Advertise string // remote.Config.Advertise (e.g. a fault proxy in front of it)
	LogLevel  string // "debug", "info", "warn" (default)
	Extra     map[string]string
	// Consul, when set, is the agent address: the node uses Consul
	// discovery (service "mailroom-test" unless ConsulService is set)
	// instead of static seeds, with TTL (default 2s) refreshed every
	// Refresh (default TTL/4).
	Consul        string
	ConsulService string
	TTL           time.Duration
	Refresh       time.Duration
	// LockDelay is ConsulConfig.LeaseLockDelay (0: its default).
	LockDelay time.Duration
	// TracerProvider is remote.Config.TracerProvider: for nodes in this
	// process only (Local); a child has none.
	TracerProvider trace.TracerProvider `json:"-"`
}

// MaybeRunChild runs this process as a child node when it was started by
// Start, and exits when the node stops; otherwise it returns at once.
func MaybeRunChild() {
	raw := os.Getenv(envChild)
	if raw == "" {
		return
	}
	var o Options
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		fmt.Fprintln(os.Stderr, "testnode: bad options:", err)
		os.Exit(2)
	}
	os.Exit(runChild(o))
}

func runChild(o Options) int {
	if path := os.Getenv("MAILROOM_CHILD_CPUPROFILE"); path != "" {
		f, err := os.Create(path + "." + o.Name)
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	level := slog.LevelWarn
	switch o.LogLevel {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	sys, err := actor.Start(actor.Config{Name: o.Name, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testnode:", err)
		return 2
	}
	if err := Install(sys); err != nil {
		fmt.Fprintln(os.Stderr, "testnode:", err)
		return 2
	}
	// What peers may call must exist before the node can be reached.
	if hook := childPreHook; hook != nil {
		if err := hook(sys, o); err != nil {
			fmt.Fprintln(os.Stderr, "testnode: pre-hook:", err)
			return 2
		}
	}
	rc, err := RemoteConfigWith(o, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testnode:", err)
		return 2
	}
	startCtx, cancelStart := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelStart()
	n, err := remote.Start(startCtx, sys, rc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testnode:", err)
		return 2
	}
	if hook := childHook; hook != nil {
		if err := hook(sys, n, o); err != nil {
			fmt.Fprintln(os.Stderr, "testnode: hook:", err)
			return 2
		}
	}
	fmt.Printf("READY %s %s\n", n.Addr(), strconv.FormatUint(sys.Incarnation(), 16))
	// Stop when the parent closes stdin (or dies), or on SIGTERM.
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		close(stop)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
	case <-sig:
	case <-sys.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sys.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "testnode: stop:", err)
		return 1
	}
	return 0
}

// childHook lets a package add to the child (e.g. a proxy pool) before it
// reports READY. Set it in TestMain before MaybeRunChild.
var childHook func(*actor.System, *remote.Node, Options) error

// SetChildHook installs f; call before MaybeRunChild.
func SetChildHook(f func(*actor.System, *remote.Node, Options) error) { childHook = f }

// childPreHook runs before the child's remote node starts: functions and
// named actors installed there exist before any peer can call them.
var childPreHook func(*actor.System, Options) error

// SetChildPreHook installs f; call before MaybeRunChild.
func SetChildPreHook(f func(*actor.System, Options) error) { childPreHook = f }

// RemoteConfig turns options into a remote configuration (static seeds).
func RemoteConfig(o Options) remote.Config {
	return remote.Config{
		Listen:         o.Listen,
		Advertise:      o.Advertise,
		Cookie:         o.Cookie,
		Seeds:          o.Seeds,
		PoolSize:       o.PoolSize,
		Liveness:       remote.Liveness{HeartbeatInterval: o.Heartbeat, HeartbeatMisses: o.Misses},
		TracerProvider: o.TracerProvider,
	}
}

// RemoteConfigWith is RemoteConfig plus Consul discovery when o.Consul
// is set.
func RemoteConfigWith(o Options, log *slog.Logger) (remote.Config, error) {
	rc := RemoteConfig(o)
	if o.Consul == "" {
		return rc, nil
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = 2 * time.Second
	}
	svc := o.ConsulService
	if svc == "" {
		svc = "mailroom-test"
	}
	refresh := o.Refresh
	if refresh == 0 {
		refresh = ttl / 4
	}
	p, err := discovery.NewConsul(discovery.ConsulConfig{Address: o.Consul, Service: svc, TTL: ttl, RefreshEvery: refresh, LeaseLockDelay: o.LockDelay, Logger: log})
	if err != nil {
		return rc, err
	}
	rc.Discovery = p
	return rc, nil
}
