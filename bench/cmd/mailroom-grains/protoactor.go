package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	paactor "github.com/asynkron/protoactor-go/actor"
	pacluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/test"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	paremote "github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The same workload on protoactor-go's cluster: three members in this
// process, each with its own gRPC remote on loopback, its in-memory test
// provider (the one protoactor-go's own tests use: no Consul or etcd
// between them, as mailroom's side runs on Static seeds) and its default
// identity lookup (disthash, the partition by rendezvous hashing); the
// kind is the same account grain.

type paAccount struct{ bal int64 }

func (a *paAccount) Receive(c paactor.Context) {
	if m, ok := c.Message().(*wrapperspb.Int64Value); ok {
		a.bal += m.Value
		c.Respond(wrapperspb.Int64(a.bal))
	}
}

func startProtoactor(ctx context.Context, n int) ([]*pacluster.Cluster, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	agent := test.NewInMemAgent()
	var cs []*pacluster.Cluster
	for range n {
		sys := paactor.NewActorSystem(paactor.WithLoggerFactory(func(*paactor.ActorSystem) *slog.Logger { return log }))
		kind := pacluster.NewKind("account", paactor.PropsFromProducer(func() paactor.Actor { return &paAccount{} }))
		cfg := pacluster.Configure("grains", test.NewTestProvider(agent), disthash.New(),
			paremote.Configure("127.0.0.1", 0), pacluster.WithKinds(kind))
		c := pacluster.New(sys, cfg)
		c.StartMember()
		cs = append(cs, c)
	}
	// Ready when a request from every member to a probe identity is
	// answered (each has seen the others: the lookup is partitioned).
	for i, c := range cs {
		for {
			if _, err := c.Request(fmt.Sprintf("probe-%d", i), "account", wrapperspb.Int64(0)); err == nil {
				break
			}
			if ctx.Err() != nil {
				return cs, fmt.Errorf("protoactor member %d never answered: %w", i, ctx.Err())
			}
		}
	}
	return cs, nil
}

func stopProtoactor(cs []*pacluster.Cluster) {
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i].Shutdown(true)
	}
}

// runProtoactor measures activation and the steady state of grain calls
// on protoactor-go's cluster (workload "protoactor-grain").
func runProtoactor(ctx context.Context, cfg config, ids []string, rep *Report) error {
	cs, err := startProtoactor(ctx, cfg.nodes)
	defer stopProtoactor(cs)
	if err != nil {
		return err
	}
	call := func(caller, i int) error {
		_, err := cs[caller%len(cs)].Request(ids[i], "account", wrapperspb.Int64(1))
		return err
	}
	act := measure(ctx, "activation", 0, cfg.ids, cfg.activators, func(_ int, i int) error { return call(i, i) }, func(int) int { return 0 })
	act.Workload = "protoactor-activation"
	printResult(act)
	rep.ProtoactorActivation = act
	pick := func(int) int { return randN(cfg.ids) }
	measure(ctx, "warmup", 0, cfg.calls/4, cfg.callers, call, pick)
	for r := range cfg.rounds {
		res := measure(ctx, "protoactor-grain", r, cfg.calls, cfg.callers, call, pick)
		printResult(res)
		rep.Rounds = append(rep.Rounds, res)
	}
	return nil
}
