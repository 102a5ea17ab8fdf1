package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/examples/examplepb"
	"github.com/mailroom-go/mailroom/health"
	"github.com/mailroom-go/mailroom/remote"
	"github.com/mailroom-go/mailroom/services"
	"github.com/mailroom-go/mailroom/supervisor"
	"google.golang.org/protobuf/proto"
)

// startNode starts a System and its remote node for role, from the
// environment (env.go), with the message types this node decodes
// registered (docs/MESSAGES.md). peers are the nodes it dials first with
// static discovery; with kubernetes discovery it finds them itself.
func startNode(role string, peers []string, types ...proto.Message) (*actor.System, *remote.Node, nodeEnv) {
	env, err := readNodeEnv(role)
	check(err)
	sys, err := actor.Start(actor.Config{Name: env.name, Logger: logger()})
	check(err)
	check(sys.RegisterTypes(types...))
	cfg := remote.Config{Cookie: env.cookie, Listen: env.listen, Advertise: env.advertise}
	if env.disc != nil {
		cfg.Discovery = env.disc
	} else {
		cfg.Seeds = env.seeds(peers...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	node, err := remote.Start(ctx, sys, cfg)
	check(err)
	return sys, node, env
}

// waitPeer waits for a peer the role needs before it tells the driver
// it is ready. On Kubernetes a node never waits for its peers (pods
// start in any order, and readiness must not wait on other nodes): its
// calls fail as not executed until discovery finds the peer.
func waitPeer(ctx context.Context, env nodeEnv, node *remote.Node, peer string) {
	if env.disc != nil {
		return
	}
	_, err := node.WaitPeer(ctx, peer)
	check(err)
}

// stock: a supervised inventory actor and the "reserve" function in
// front of it.
func runStock() {
	sys, node, env := startNode("stock", nil, &examplepb.Reserve{}, &examplepb.Reserved{})
	_, err := supervisor.Start(sys, supervisor.Spec{Children: []supervisor.ChildSpec{
		{ID: "inventory", Name: "inventory", Props: actor.PropsFromFunc(inventory())},
	}})
	check(err)
	check(sys.Register("reserve", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		// The inventory's answer, or its error as it is: a rejection
		// stays a rejection (409 at the api).
		return actor.RequestNamedAs[*examplepb.Reserved](ctx, sys, "", "inventory", arg)
	}))
	serve(env, sys, node, nil)
}

// inventory holds the stock of every item: plenty of lamps, few rare
// ones, so some orders are refused.
func inventory() actor.ReceiveFunc {
	left := map[string]int32{"lamp": 1_000_000, "rare": 40}
	return func(c *actor.Context) {
		r, ok := c.Message().(*examplepb.Reserve)
		if !ok {
			return
		}
		if left[r.Item] < r.Qty {
			c.RespondError(actor.Reject("out_of_stock", fmt.Sprintf("%d %s left, %d asked", left[r.Item], r.Item, r.Qty)))
			return
		}
		left[r.Item] -= r.Qty
		c.Respond(&examplepb.Reserved{Item: r.Item, Left: left[r.Item]})
	}
}

// orders: the versioned "orders" service; place reserves each line on
// stock and returns stock's error as it got it, so its outcome reaches
// the api unchanged (stock never ran it: not executed).
func runOrders() {
	sys, node, env := startNode("orders", []string{"stock"}, &examplepb.PlaceOrder{}, &examplepb.OrderPlaced{}, &examplepb.Reserved{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc, err := services.Start(ctx, node, services.Config{})
	check(err)
	waitPeer(ctx, env, node, "stock")
	place := func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		o := arg.(*examplepb.PlaceOrder)
		var n int32
		for _, l := range o.Lines {
			_, err := actor.CallAs[*examplepb.Reserved](ctx, sys, "stock", "reserve", &examplepb.Reserve{OrderId: o.OrderId, Item: l.Item, Qty: l.Qty})
			if err != nil {
				return nil, err // its outcome, one hop further
			}
			n += l.Qty
		}
		return &examplepb.OrderPlaced{OrderId: o.OrderId, Reserved: n}, nil
	}
	check(svc.Provide(ctx, services.Service{
		Name:      "orders",
		Version:   services.MustVersion("1.0.0"),
		Functions: []services.Function{{Name: "place", Handler: place}},
	}))
	serve(env, sys, node, nil)
}

// maxHold bounds an order's hold parameter.
const maxHold = 5 * time.Second

// api: the HTTP front. POST /order?id=..&item=..[&hold=1s] places an
// order (hold: the api waits that long first, a slow request to watch a
// drain with); /healthz says whether an orders provider is known;
// /inflight counts the orders being placed (what a drain waits for);
// /livez and /readyz are package health's probes (deploy/kubernetes
// points the kubelet at them).
func runAPI() {
	sys, node, env := startNode("api", []string{"orders"}, &examplepb.OrderPlaced{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc, err := services.Start(ctx, node, services.Config{})
	check(err)
	fr := &front{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /order", func(w http.ResponseWriter, r *http.Request) {
		if !fr.begin() {
			http.Error(w, "draining: the order was not taken (not executed), retry elsewhere", http.StatusServiceUnavailable)
			return
		}
		defer fr.end()
		if h := r.URL.Query().Get("hold"); h != "" {
			d, err := time.ParseDuration(h)
			if err != nil || d < 0 || d > maxHold {
				http.Error(w, fmt.Sprintf("hold %q: want a duration up to %v", h, maxHold), http.StatusBadRequest)
				return
			}
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		order := &examplepb.PlaceOrder{OrderId: r.URL.Query().Get("id"), Lines: []*examplepb.PlaceOrder_Line{{Item: r.URL.Query().Get("item"), Qty: 1}}}
		res, err := svc.Call(ctx, "orders", services.Major(1), "place", order, services.WithBudget(time.Second))
		if err != nil {
			http.Error(w, err.Error(), statusOf(err))
			return
		}
		placed := res.(*examplepb.OrderPlaced)
		fmt.Fprintf(w, "order %s: %d reserved\n", placed.OrderId, placed.Reserved)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 100*time.Millisecond)
		defer cancel()
		if _, err := svc.WaitProvider(ctx, "orders", services.Major(1)); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /inflight", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, fr.inflight())
	})
	probe, err := health.New(node, health.Config{})
	check(err)
	mux.Handle("GET /livez", probe.LiveHandler())
	mux.Handle("GET /readyz", probe.ReadyHandler())
	ln, err := net.Listen("tcp", os.Getenv("SHOP_HTTP"))
	check(err)
	fr.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := fr.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			check(err)
		}
	}()
	defer fr.srv.Close()
	if env.disc == nil {
		// The driver sends orders as soon as the api says ready.
		waitPeer(ctx, env, node, "orders")
		_, err = svc.WaitProvider(ctx, "orders", services.Major(1))
		check(err)
	}
	serve(env, sys, node, fr)
}

// statusOf is the HTTP status of a failed order, by its outcome: the
// work never ran → 503 (retry), it may have run → 502 (check first), it
// ran and was refused → 409.
func statusOf(err error) int {
	switch actor.Outcome(err) {
	case actor.NotExecuted:
		return http.StatusServiceUnavailable
	case actor.MayHaveExecuted:
		return http.StatusBadGateway
	}
	return http.StatusConflict
}

// logger: the runtime's warnings on stderr with SHOP_LOG=1, else none.
func logger() *slog.Logger {
	if v, _ := strconv.ParseBool(os.Getenv("SHOP_LOG")); v {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return actor.DiscardLogger()
}

func check(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "shop %s: %v\n", os.Getenv("SHOP_ROLE"), err)
		os.Exit(1)
	}
}
