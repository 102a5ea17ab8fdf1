package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// startNode starts a System and its remote node, with the message types
// this node decodes registered (docs/MESSAGES.md).
func startNode(name, listen string, seeds []string, types ...proto.Message) (*actor.System, *remote.Node) {
	sys, err := actor.Start(actor.Config{Name: name, Logger: logger()})
	check(err)
	check(sys.RegisterTypes(types...))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	node, err := remote.Start(ctx, sys, remote.Config{Cookie: cookie, Listen: listen, Seeds: seeds})
	check(err)
	return sys, node
}

// serve tells the driver this node is ready, then runs until the driver
// closes stdin (a graceful stop) or kills the process.
func serve(sys *actor.System) {
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = sys.Stop(ctx)
}

// stock: a supervised inventory actor and the "reserve" function in
// front of it.
func runStock() {
	sys, _ := startNode("stock", os.Getenv("SHOP_STOCK"), nil, &examplepb.Reserve{}, &examplepb.Reserved{})
	_, err := supervisor.Start(sys, supervisor.Spec{Children: []supervisor.ChildSpec{
		{ID: "inventory", Name: "inventory", Props: actor.PropsFromFunc(inventory())},
	}})
	check(err)
	check(sys.Register("reserve", func(ctx context.Context, arg proto.Message) (proto.Message, error) {
		// The inventory's answer, or its error as it is: a rejection
		// stays a rejection (409 at the api).
		return actor.RequestNamedAs[*examplepb.Reserved](ctx, sys, "", "inventory", arg)
	}))
	serve(sys)
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
	sys, node := startNode("orders", os.Getenv("SHOP_ORDERS"), []string{"stock=" + os.Getenv("SHOP_STOCK")},
		&examplepb.PlaceOrder{}, &examplepb.OrderPlaced{}, &examplepb.Reserved{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc, err := services.Start(ctx, node, services.Config{})
	check(err)
	_, err = node.WaitPeer(ctx, "stock")
	check(err)
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
	serve(sys)
}

// api: the HTTP front on loopback. POST /order?id=..&item=.. places an
// order; /healthz says whether an orders provider is known; /livez and
// /readyz are package health's probes (deploy/kubernetes points the
// kubelet at them).
func runAPI() {
	sys, node := startNode("api", os.Getenv("SHOP_API_NODE"), []string{"orders=" + os.Getenv("SHOP_ORDERS")},
		&examplepb.OrderPlaced{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc, err := services.Start(ctx, node, services.Config{})
	check(err)
	_, err = node.WaitPeer(ctx, "orders")
	check(err)
	_, err = svc.WaitProvider(ctx, "orders", services.Major(1))
	check(err)

	mux := http.NewServeMux()
	mux.HandleFunc("POST /order", func(w http.ResponseWriter, r *http.Request) {
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
	probe, err := health.New(node, health.Config{})
	check(err)
	mux.Handle("GET /livez", probe.LiveHandler())
	mux.Handle("GET /readyz", probe.ReadyHandler())
	ln, err := net.Listen("tcp", os.Getenv("SHOP_HTTP"))
	check(err)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			check(err)
		}
	}()
	defer srv.Close()
	serve(sys)
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
