# mailroom: an actor runtime for Go with location-transparent remote mailboxes.
# Every target works on a fresh machine with only Go installed; the test
# targets build Consul into .cache/ the first time (a few minutes).

GO ?= go
PKGS := ./...

.PHONY: test test-etcd test-dns chromium prometheus demo-observer test-chaos test-scale test-short test-protoactor test-kubernetes vet fmt-check lint staticcheck demo demo-patterns demo-cluster demo-grains demo-services demo-shop demo-jobs demo-protoactor failover fuzz fuzz-short bench-actor bench-remote bench-quick bench bench-budget bench-test tidy-check clean sim

## test: vet, gofmt check, staticcheck, a short run of every fuzzer, every test with -race (Consul tests against a real dev agent; the observer's browser test in headless Chromium and the metrics scrape test against a Prometheus server, each installed when missing), the protoactor bridge module's tests, the Kubernetes provider module's tests against a real kube-apiserver and etcd, the etcd provider module's against a real etcd, the DNS provider's against a real dnsmasq (installed when missing), then the chaos suite without its soak, then the job processor demo (exactly-once through a worker's SIGKILL)
test: vet fmt-check lint fuzz-short chromium prometheus test-protoactor test-kubernetes test-etcd
	scripts/consul.sh run -- scripts/dnsmasq.sh run -- $(GO) test -race -count=1 -timeout 20m $(PKGS)
	scripts/chaos.sh
	$(MAKE) demo-jobs

## test-chaos: the reliability suite, every fault scenario and the 10-minute soak; one summary line per scenario (docs/RELIABILITY.md)
CHAOS_SOAK ?= 10m
test-chaos: vet fmt-check
	scripts/chaos.sh -chaos.soak=$(CHAOS_SOAK)

## test-scale: 8, 16 and 32 nodes as OS processes with one Consul agent, a kill of 4 and their restart; one summary line per size; rewrites docs/SCALE.md (not part of make test)
test-scale: vet
	scripts/scale.sh

## test-protoactor: the protoactor-go bridge (its own module, protoactor/): vet, gofmt check, every test with -race
test-protoactor:
	cd protoactor && $(GO) vet ./... && test -z "$$(gofmt -l .)" && $(GO) test -race -count=1 ./...

## test-etcd: the etcd provider (its own module, discovery/etcd/): vet, gofmt check, every test with -race against a real etcd (scripts/etcd.sh installs Debian's etcd-server when missing), the provider conformance suite among them
test-etcd:
	cd discovery/etcd && $(GO) vet ./... && test -z "$$(gofmt -l .)"
	scripts/etcd.sh run -- sh -c 'cd discovery/etcd && $(GO) test -race -count=1 -timeout 10m ./...'

## test-dns: the DNS provider's tests (discovery.DNS) with -race against a real dnsmasq (scripts/dnsmasq.sh installs Debian's dnsmasq-base when missing); make test runs them with the rest of the root module
test-dns:
	scripts/dnsmasq.sh run -- $(GO) test -race -count=1 -run DNS ./discovery/

## test-kubernetes: the Kubernetes provider (its own module, discovery/kubernetes/): vet, gofmt check, every test with -race against a real kube-apiserver v1.31.4 and etcd (scripts/kube-apiserver.sh builds the apiserver into .cache/ the first time, ~5 min, and installs Debian's etcd-server when missing), the provider conformance suite and examples/shop's drain on SIGTERM (TestShopOnKubernetes) among them
test-kubernetes:
	cd discovery/kubernetes && $(GO) vet ./... && test -z "$$(gofmt -l .)"
	scripts/kube-apiserver.sh run -- sh -c 'cd discovery/kubernetes && $(GO) test -race -count=1 -timeout 15m ./...'

## chromium: install Debian's chromium for the observer's browser test when it is missing (scripts/chromium.sh; under CI=true a failure fails)
chromium:
	scripts/chromium.sh

## prometheus: install Debian's prometheus for the metrics scrape test when it is missing (scripts/prometheus.sh; under CI=true a failure fails)
prometheus:
	scripts/prometheus.sh

## test-short: the unit tests only, no Consul agent, no -race
test-short:
	$(GO) test -short $(PKGS)

## vet: go vet (the chaos suite's build tag included)
vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags chaos ./chaos
	cd examples/shop && $(GO) vet ./...

## fmt-check: fail if gofmt would change a file
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## lint: staticcheck (pinned, STATICCHECK_VERSION) over the root module, the chaos suite's build tag, bench/, protoactor/, discovery/kubernetes/, discovery/etcd/ and examples/shop/
STATICCHECK_VERSION := 0.8.2
STATICCHECK := $(CURDIR)/.cache/bin/staticcheck
lint: staticcheck
	$(STATICCHECK) $(PKGS)
	$(STATICCHECK) -tags chaos ./chaos
	cd bench && $(STATICCHECK) ./...
	cd protoactor && $(STATICCHECK) ./...
	cd discovery/kubernetes && $(STATICCHECK) ./...
	cd discovery/etcd && $(STATICCHECK) ./...
	cd examples/shop && $(STATICCHECK) ./...

## staticcheck: install staticcheck STATICCHECK_VERSION from the Go module proxy into .cache/bin, unless that version is there
staticcheck:
	@case "$$($(STATICCHECK) -version 2>/dev/null)" in \
	*"($(STATICCHECK_VERSION))") ;; \
	*) echo "installing staticcheck v$(STATICCHECK_VERSION) into .cache/bin"; \
	   GOBIN=$(CURDIR)/.cache/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@v$(STATICCHECK_VERSION) ;; \
	esac

## demo: the quickstart (a supervision tree, Send, Request, Call, a crash and its restart)
demo:
	$(GO) run ./examples/quickstart

## demo-patterns: every group call pattern on three nodes (two child processes)
demo-patterns:
	$(GO) run ./examples/patterns

## demo-cluster: three nodes on one Consul agent; one is killed and comes back as a new incarnation
demo-cluster:
	scripts/consul.sh run -- $(GO) run ./examples/cluster

## demo-grains: per-user accounts as grains behind HTTP on three nodes (child processes, Static discovery): load, one node SIGKILLed, every final balance checked against what was acknowledged (exits non-zero if not); ~15 s
demo-grains:
	$(GO) run ./examples/grains

## demo-services: versioned services, their error messages and a rolling restart under 1,000 calls (child processes)
demo-services:
	$(GO) run ./examples/services

## demo-shop (examples/shop is its own module: it imports discovery/kubernetes): api (HTTP) -> orders (a service) -> stock (a supervised actor): 2,000 orders at 200/s, stock SIGKILLed and restarted mid-load; status counts and max latency
demo-shop:
	cd examples/shop && $(GO) run .

## demo-jobs: an HTTP api and two supervised workers (child processes) settle 5,000 jobs and 10 poison ones, a worker SIGKILLed mid-load and restarted; prints jobs= done= failed= lost= duplicated= and fails unless lost=0 and duplicated=0 (part of make test)
demo-jobs:
	$(GO) run ./examples/jobs

## demo-protoactor: protoactor-go actors over mailroom's remote: a child node SIGKILLed under 1,000 pending futures
demo-protoactor:
	cd protoactor && $(GO) run ./examples/protoactor

## demo-observer: the live view in the browser: three nodes (two child processes) under light load, one killed and restarted; prints the URL and runs until Ctrl-C (DEMO_ARGS="-for 20s" for a bounded run)
DEMO_ARGS ?=
demo-observer:
	$(GO) run ./examples/observer $(DEMO_ARGS)

## failover: kill a node under 1,000 in-flight calls and show how they end
failover:
	$(GO) run ./examples/failover

## sim: the remote core's deterministic simulator over 1,000,000 seeds (SIM_SEEDS), split over GOMAXPROCS workers; one summary line 'sim seeds=N failures=0 ...'; a failure prints the first failing seed's trace and exits non-zero (go test runs 10,000 seeds in make test)
SIM_SEEDS ?= 1000000
sim:
	@$(GO) run ./remote/internal/sim/cmd/sim -seeds $(SIM_SEEDS)

## fuzz: run each fuzzer for FUZZTIME (default 1m): the frame decoder, the handshake (and its name checks), the whole inbound envelope (and the decode estimate), the node name rule
FUZZTIME ?= 1m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzFrameDecoder$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzHandshake$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzEnvelope$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzValidIsTheRule$$' -fuzztime $(FUZZTIME) ./internal/nodename

## fuzz-short: every fuzzer for FUZZTIME_SHORT executions (default 50000x), as part of make test; a count, not a duration: a duration races Go's fuzz coordinator at its deadline on a loaded machine and fails with "context deadline exceeded" and no crasher (go.dev/issue/75804)
FUZZTIME_SHORT ?= 50000x
fuzz-short:
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME_SHORT)

## bench-actor: local actor benchmarks (compare runs with benchstat)
bench-actor:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./actor

## bench-remote: native-path benchmarks over loopback, two processes
bench-remote:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./remote

## bench-quick: side-by-side remote benchmark, quick set (< 5 min): bench/results/quick.{json,md,svg}; then grain calls beside named-actor calls on three nodes: bench/results/quick-grains.{json,md}
bench-quick:
	cd bench && $(GO) build -o ../.cache/mailroom-bench ./cmd/mailroom-bench
	cd bench && MAILROOM_BENCH_COMMAND="make bench-quick" ../.cache/mailroom-bench -set quick
	cd bench && $(GO) build -o ../.cache/mailroom-grains ./cmd/mailroom-grains && ../.cache/mailroom-grains -out results -name quick-grains

## bench: the full sweep (about 30 min): bench/results/full.{json,md,svg}
bench:
	cd bench && $(GO) build -o ../.cache/mailroom-bench ./cmd/mailroom-bench
	cd bench && MAILROOM_BENCH_COMMAND="make bench" ../.cache/mailroom-bench -set full -readme README.md

## bench-budget: where the CPU goes per message (bench/README.md, "Per-message budget"): CPU profiles of both processes, pooled unpaced send of bytes from 1,000 goroutines (beside lean) and of data from 1,000 actors, into bench/results/pprof/budget-$(BUDGET)
BUDGET ?= after
BUDGET_DIR = results/pprof/budget-$(BUDGET)
bench-budget:
	cd bench && $(GO) build -o ../.cache/mailroom-bench ./cmd/mailroom-bench && $(GO) build -o ../.cache/mailroom-budget ./cmd/mailroom-budget
	cd bench && ../.cache/mailroom-bench -set quick -only '^send (pooled|lean) +bytes +w=1000 +goroutine r=one' -rounds 1 -skip-raw -m 8000 -pprof $(BUDGET_DIR) -out $(BUDGET_DIR) -name bytes
	cd bench && ../.cache/mailroom-bench -set quick -only '^send pooled +data +w=1000 +actor .*unpaced' -rounds 1 -skip-raw -m 3000 -pprof $(BUDGET_DIR) -out $(BUDGET_DIR) -name data
	cd bench && ../.cache/mailroom-budget -msgs 8000000 $(BUDGET_DIR)/000-send-pooled-bytes-1000-goroutine-one-r0.mailroom-sender.pprof $(BUDGET_DIR)/000-send-pooled-bytes-1000-goroutine-one-r0.mailroom-receiver.pprof $(BUDGET_DIR)/001-send-lean-bytes-1000-goroutine-one-r0.lean-sender.pprof $(BUDGET_DIR)/001-send-lean-bytes-1000-goroutine-one-r0.lean-receiver.pprof | tee $(BUDGET_DIR)/bytes-budget.md
	cd bench && ../.cache/mailroom-budget -msgs 3000000 $(BUDGET_DIR)/000-send-pooled-data-1000-actor-per-writer-r0.mailroom-sender.pprof $(BUDGET_DIR)/000-send-pooled-data-1000-actor-per-writer-r0.mailroom-receiver.pprof | tee $(BUDGET_DIR)/data-budget.md

## bench-test: the bench module's vet, gofmt check and unit tests
bench-test:
	cd bench && $(GO) vet ./... && test -z "$$(gofmt -l .)" && $(GO) test ./...

## tidy-check: fail if go.mod/go.sum are not tidy
tidy-check:
	$(GO) mod tidy -diff
	cd examples/shop && $(GO) mod tidy -diff
	cd discovery/etcd && $(GO) mod tidy -diff
	cd discovery/kubernetes && $(GO) mod tidy -diff

## clean: remove caches (the Consul binary, test caches)
clean:
	rm -rf .cache
	$(GO) clean -testcache

## help: list the targets
help:
	@grep -E '^## ' Makefile | sed 's/^## /  /'
