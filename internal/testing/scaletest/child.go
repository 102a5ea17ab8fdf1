package scaletest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/actor/pidpb"
	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"github.com/mailroom-go/mailroom/internal/testing/testpb"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
	"google.golang.org/protobuf/proto"
)

// Keys of testnode.Options.Extra that configure a node of the scale test.
const (
	// ExtraReport is the path of the node's snapshot file.
	ExtraReport = "scale.report"
	// ExtraTargets are the peers the node loads, comma-separated.
	ExtraTargets = "scale.targets"
	// ExtraLoad is the node's Load, as JSON.
	ExtraLoad = "scale.load"
	// ExtraLazy, "true", starts the node's proxy pools lazily.
	ExtraLazy = "scale.lazy"
)

// Names of what every node offers.
const (
	fnWhoami = "scale_whoami" // Echo{Text: the incarnation in hex, From: the node}
	fnIdent  = "scale_ident"  // the PID of the ident actor, a pidpb.PID
	fnHold   = "scale_hold"   // returns only when its ctx ends
	actIdent = "scale_ident"  // answers a request with Echo{Text: the incarnation in hex}
	actSink  = "scale_sink"   // counts Echo{N: seq, From: sender}, checking each sender's order
)

// Load is what a node does to each of its targets once it is told to
// load (SIGUSR1), until it is told to stop (SIGUSR2).
type Load struct {
	// CallsPerSec: calls of scale_whoami by node name; the answer names
	// the incarnation that ran it.
	CallsPerSec float64 `json:"calls_per_s"`
	// RequestsPerSec: requests to the PID of the target's ident actor,
	// which carries the incarnation it belongs to; the answer must come
	// from that incarnation.
	RequestsPerSec float64 `json:"requests_per_s"`
	// SendsPerSec: sends to the target's sink by name, from one sender
	// handle, numbered.
	SendsPerSec float64 `json:"sends_per_s"`
	// Holders: calls of scale_hold kept open on the target, each from its
	// own sender: they end only when the target's incarnation goes (or
	// the load stops), and are made again when it comes back.
	Holders int `json:"holders"`
}

// PerNode is the load one node offers per second, over its targets.
func (l Load) PerNode(targets int) float64 {
	return float64(targets) * (l.CallsPerSec + l.RequestsPerSec + l.SendsPerSec)
}

// PreHook is the scale test's testnode child pre-hook: what peers call
// exists before the node can be reached. Set it with
// testnode.SetChildPreHook before testnode.MaybeRunChild.
func PreHook(sys *actor.System, _ testnode.Options) error {
	if err := sys.RegisterTypes(&pidpb.PID{}); err != nil {
		return err
	}
	inc := strconv.FormatUint(sys.Incarnation(), 16)
	node := sys.Name()
	ident, err := sys.SpawnNamed(actor.PropsFromFunc(func(c *actor.Context) {
		if _, ok := c.Message().(*testpb.Echo); ok {
			c.Respond(&testpb.Echo{Text: inc, From: node})
		}
	}), actIdent)
	if err != nil {
		return err
	}
	the := &sink{last: map[string]int64{}}
	childSink = the
	if _, err := sys.SpawnNamed(actor.PropsFromFunc(the.receive), actSink); err != nil {
		return err
	}
	fns := map[string]actor.Handler{
		fnWhoami: func(context.Context, proto.Message) (proto.Message, error) {
			return &testpb.Echo{Text: inc, From: node}, nil
		},
		fnIdent: func(context.Context, proto.Message) (proto.Message, error) {
			return pidpb.From(ident), nil
		},
		fnHold: func(ctx context.Context, _ proto.Message) (proto.Message, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	for name, h := range fns {
		if err := sys.Register(name, h); err != nil {
			return err
		}
	}
	return nil
}

// childSink is the sink of this process's node (PreHook spawns it).
var childSink *sink

// Hook is the scale test's testnode child hook: it starts the proxy
// pool (eager, or lazy with ExtraLazy), follows
// membership through the remote layer's hooks, starts the reporter and
// waits for SIGUSR1 / SIGUSR2 to start and stop the load. Everything it
// starts ends when the system stops. Set it with testnode.SetChildHook.
func Hook(sys *actor.System, n *remote.Node, o testnode.Options) error {
	path := o.Extra[ExtraReport]
	if path == "" {
		return fmt.Errorf("scaletest: no %s in the node's options", ExtraReport)
	}
	var load Load
	if raw := o.Extra[ExtraLoad]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &load); err != nil {
			return fmt.Errorf("scaletest: %s: %w", ExtraLoad, err)
		}
	}
	var targets []string
	if t := o.Extra[ExtraTargets]; t != "" {
		targets = strings.Split(t, ",")
	}
	pools, err := proxypool.Start(n, proxypool.Config{Eager: o.Extra[ExtraLazy] != "true"})
	if err != nil {
		return err
	}
	if childSink == nil {
		return fmt.Errorf("scaletest: Hook without PreHook")
	}
	c := &child{
		sys: sys, n: n, pools: pools, path: path,
		inc:   strconv.FormatUint(sys.Incarnation(), 16),
		view:  newView(),
		ops:   newOpTable(),
		sink:  childSink,
		load:  load,
		stats: map[string]*targetStats{},
	}
	for _, t := range targets {
		c.stats[t] = newTargetStats()
	}
	c.view.follow(n)
	if err := c.write(); err != nil {
		return fmt.Errorf("scaletest: first snapshot: %w", err)
	}
	go c.report()
	go c.control()
	return nil
}

// child is one node of the scale test, in its own process.
type child struct {
	sys   *actor.System
	n     *remote.Node
	pools *proxypool.Manager
	path  string
	inc   string
	view  *view
	ops   *opTable
	sink  *sink
	load  Load
	stats map[string]*targetStats // by target; fixed at start

	mu     sync.Mutex // protects following
	phase  string     // "idle", "load", "stopping", "stopped"
	cancel context.CancelFunc
	unexp  []string // the first unexpected errors
}

// control starts and stops the load on signals until the system stops.
func (c *child) control() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sig)
	for {
		select {
		case <-c.sys.Done():
			c.stopLoad()
			return
		case s := <-sig:
			if s == syscall.SIGUSR1 {
				c.startLoad()
			} else {
				c.stopLoad()
			}
		}
	}
}

func (c *child) phaseNow() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phase == "" {
		return "idle"
	}
	return c.phase
}

// noteUnexpected keeps the first few errors of no expected class.
func (c *child) noteUnexpected(what string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.unexp) < 8 {
		c.unexp = append(c.unexp, what+": "+err.Error())
	}
}
