package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/cluster"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/examples/examplepb"
	"github.com/mailroom-go/mailroom/proxypool"
	"github.com/mailroom-go/mailroom/remote"
)

// The kind of grain every node hosts: one account per user.
const kind = "account"

// idleTimeout passivates an account nobody touched for that long.
const idleTimeout = 2 * time.Second

// account is the grain of one user: its balance, loaded from the user's
// file when it is activated and written back before every answer that
// changed it (write-through: a node killed with SIGKILL runs no stop
// hook, so a balance only saved at passivation would lose acknowledged
// deposits), and once more when it passivates or stops.
//
//	Echo{Text: "deposit", N: n}  -> Echo{N: balance, From: node}
//	Echo{Text: "withdraw", N: n} -> the same, or the rejection insufficient_funds (nothing changed)
//	Echo{Text: "balance"}        -> the same
type account struct {
	path string
	bal  int64
	err  error // the file could not be read: every message is refused
}

func accountKind(dir string) cluster.Kind {
	return cluster.Kind{Name: kind, IdleTimeout: idleTimeout, Props: func(id string) *actor.Props {
		return actor.PropsFromProducer(func() actor.Actor { return &account{path: filepath.Join(dir, id+".json")} })
	}}
}

type saved struct {
	Balance int64 `json:"balance"`
}

func (a *account) load() error {
	b, err := os.ReadFile(a.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a new account
	}
	if err != nil {
		return err
	}
	var s saved
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s: %w", a.path, err)
	}
	a.bal = s.Balance
	return nil
}

// save writes the balance to a new file and renames it over the old one,
// so a kill leaves either the old balance or the new, never half of one.
func (a *account) save() error {
	b, _ := json.Marshal(saved{Balance: a.bal})
	tmp := a.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, a.path)
}

func (a *account) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		a.err = a.load()
	case actor.ReceiveTimeout, actor.Stopped: // passivation, or the node stopping
		if a.err == nil {
			_ = a.save()
		}
	case *examplepb.Echo:
		if a.err != nil {
			c.RespondError(actor.Reject("store_failed", a.err.Error()))
			return
		}
		old := a.bal
		switch m.Text {
		case "deposit":
			a.bal += m.N
		case "withdraw":
			if m.N > a.bal {
				c.RespondError(actor.Reject("insufficient_funds", fmt.Sprintf("balance %d, withdrawal %d", a.bal, m.N)))
				return
			}
			a.bal -= m.N
		case "balance":
		default:
			c.RespondError(actor.Reject("bad_op", "unknown operation "+strconv.Quote(m.Text)))
			return
		}
		if a.bal != old {
			if err := a.save(); err != nil {
				a.bal = old
				c.RespondError(actor.Reject("store_failed", err.Error()))
				return
			}
		}
		c.Respond(&examplepb.Echo{N: a.bal, From: c.System().Name()})
	}
}

// runNode is one node of the demo, in a child process: the cluster layer
// hosting accounts, and an HTTP front that any client may call for any
// user (the grain lives wherever placement says). It prints
// "ready <http address>" once serving, and stops when its stdin closes.
func runNode(name, seeds, dir string) error {
	sys, err := actor.Start(actor.Config{Name: name, Logger: actor.DiscardLogger()})
	if err != nil {
		return err
	}
	if err := sys.RegisterTypes(&examplepb.Echo{}); err != nil {
		return err
	}
	cfg := remote.Config{Cookie: cookie, Listen: "127.0.0.1:0"}
	if seeds != "" {
		d, err := discovery.NewStatic(strings.Split(seeds, ",")...)
		if err != nil {
			return err
		}
		cfg.Discovery = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	node, err := remote.Start(ctx, sys, cfg)
	if err != nil {
		return err
	}
	if _, err := proxypool.Start(node, proxypool.Config{}); err != nil {
		return err
	}
	c, err := cluster.Start(ctx, node, cluster.Config{Kinds: []cluster.Kind{accountKind(dir)}})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: front(c, sys), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("ready %s %s\n", node.Addr(), ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	return sys.Stop(sctx)
}

var userRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// answer is the JSON of every /op response.
type answer struct {
	Balance int64  `json:"balance"`
	Node    string `json:"node,omitempty"`    // where the grain ran
	Outcome string `json:"outcome,omitempty"` // of a failure: not_executed, may_have_executed, executed
	Code    string `json:"code,omitempty"`    // of a rejection
	Err     string `json:"error,omitempty"`
}

// front is a node's HTTP API:
//
//	POST /op?op=deposit|withdraw|balance&user=U&amount=N (POST: an HTTP
//	    client never resends it by itself, as Go's does a GET on a reused
//	    connection that broke)
//	    200 {balance, node}; 409 a rejection (executed, nothing changed);
//	    503 not executed (safe to retry); 502 may have executed
//	GET /stats   this node's cluster.Stats, activations and hosts
func front(c *cluster.Cluster, sys *actor.System) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /op", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		user, op := q.Get("user"), q.Get("op")
		amount, _ := strconv.ParseInt(q.Get("amount"), 10, 64)
		if !userRE.MatchString(user) || amount < 0 || (op != "balance" && amount == 0) {
			http.Error(w, "want op, user ([A-Za-z0-9_-]{1,64}) and a positive amount", http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		res, err := cluster.RequestAs[*examplepb.Echo](ctx, c, sys, kind, user, &examplepb.Echo{Text: op, N: amount})
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			o := actor.Outcome(err)
			status := http.StatusBadGateway
			switch o {
			case actor.NotExecuted:
				status = http.StatusServiceUnavailable
			case actor.Executed:
				status = http.StatusConflict
			}
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(answer{Outcome: o.Label(), Code: actor.ErrorCode(err), Err: err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(answer{Balance: res.N, Node: res.From})
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(nodeStats{Stats: c.Stats(), Running: c.Activations(), Hosts: c.Hosts(kind)})
	})
	return mux
}

// nodeStats is the /stats answer.
type nodeStats struct {
	cluster.Stats
	Running int      `json:"running"`
	Hosts   []string `json:"hosts"`
}
