package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/remote"
)

// front is the api's HTTP side of a drain: it counts the orders being
// placed, and once draining refuses new ones (503, not executed) while
// those taken before finish.
type front struct {
	srv *http.Server

	mu       sync.Mutex // protects following
	draining bool
	n        int
	idle     chan struct{} // closed when draining and n is 0
}

func (f *front) begin() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.draining {
		return false
	}
	f.n++
	return true
}

func (f *front) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.draining && f.n == 0 {
		close(f.idle)
	}
}

func (f *front) inflight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// drain refuses new orders, waits (within ctx) for those taken, then
// shuts the HTTP server down (it finishes the requests it serves).
func (f *front) drain(ctx context.Context) error {
	f.mu.Lock()
	f.draining = true
	f.idle = make(chan struct{})
	if f.n == 0 {
		close(f.idle)
	}
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
		return fmt.Errorf("%d orders still being placed: %w", f.inflight(), ctx.Err())
	}
	return f.srv.Shutdown(ctx)
}

// serve tells the driver this node is ready ("ready" on stdout), then
// runs until SIGTERM or SIGINT (or, for the driver's children, stdin
// closing), and drains within env.drain:
//
//  1. the node is marked draining: /readyz answers 503, discovery (the
//     lease on Kubernetes) and every peer are told, new inbound calls are
//     refused as not executed;
//  2. the api refuses new orders (503) and waits for those it took;
//  3. System.Stop finishes the calls the node runs, says goodbye and
//     deregisters (deletes the lease).
//
// Kubernetes sends SIGTERM after preStop; terminationGracePeriodSeconds
// must cover preStop plus env.drain (deploy/kubernetes/shop.yaml).
func serve(env nodeEnv, sys *actor.System, node *remote.Node, fr *front) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if env.onStdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop <- syscall.SIGTERM
		}()
	}
	fmt.Println("ready")
	var why string
	select {
	case s := <-stop:
		why = s.String()
	case <-sys.Done():
		// Declared dead by the cluster (discovery reported this
		// incarnation down): a restart is a new incarnation.
		fmt.Fprintf(os.Stderr, "shop %s: the node stopped (declared dead?)\n", sys.Name())
		os.Exit(1)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), env.drain)
	defer cancel()
	node.Drain(ctx)
	var errs []error
	if fr != nil {
		if err := fr.drain(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := sys.Stop(ctx); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "shop %s: %s: drain did not finish within %v: %v\n", sys.Name(), why, env.drain, errs)
		os.Exit(1)
	}
	if !env.onStdin {
		fmt.Fprintf(os.Stderr, "shop %s: %s: drained and stopped in %v\n", sys.Name(), why, time.Since(start).Round(time.Millisecond))
	}
}
