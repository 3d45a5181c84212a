# kairos: `make run` tries it out on an embedded Redis; `make test` runs every test.
GO ?= go

.PHONY: run test test-short test-deps vet build fuzz soak chaos sentinel bench bench-build helm chart

# Builds bin/kairos and runs it, rather than `go run`: interrupted with
# Ctrl-C, `go run` exits 1 whatever its program did, and make then reports
# an error. bin/kairos shuts down gracefully and exits 0.
run: build
	./bin/kairos serve

build:
	$(GO) build -o bin/kairos ./cmd/kairos

test-deps:
	./scripts/test-deps.sh

vet:
	$(GO) vet ./...

# Installs redis-server when missing, then runs vet, helm lint of the Helm
# chart, and the whole suite (fuzz seed corpora included, and the chart's
# helm template checks in deploy/helm) with the race detector, then the
# load tool's build, vet and tests (bench/ is a module of its own, which
# ./... does not reach).
test: test-deps vet chart bench-build
	$(GO) test -race -count=1 -timeout 15m ./...
	cd bench && $(GO) test -race -count=1 -timeout 10m ./...

# helm, pinned, for the chart's tests: built once into bin/tools
# (git-ignored; a minute or so), and bin/tools/helm links to it, where the
# tests in deploy/helm look for it (or $KAIROS_HELM).
HELM_VERSION := v3.22.0
HELM := bin/tools/helm-$(HELM_VERSION)
CHART := deploy/helm/kairos

helm: $(HELM)
	@ln -sfn helm-$(HELM_VERSION) bin/tools/helm

$(HELM):
	@echo "building helm $(HELM_VERSION) into bin/tools (once)"
	GOBIN=$(CURDIR)/bin/tools/helm-build $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv bin/tools/helm-build/helm $@ && rmdir bin/tools/helm-build

# helm lint --strict of the chart with each values variant in its ci/;
# `go test ./deploy/helm` renders each (helm template) and checks the objects.
chart: helm
	@for v in $(CHART)/ci/*.yaml; do \
	  echo "helm lint $(CHART) -f $$v"; $(HELM) lint --strict --quiet $(CHART) -f $$v || exit 1; \
	done

# The quick tier: every test that needs neither Chromium, node nor python
# and no long wait (the others skip under -short), without the race
# detector. `make test` is the full suite CI runs.
test-short:
	$(GO) test -short -count=1 -timeout 5m ./...
	cd bench && $(GO) test -short -count=1 ./...

# The load tool (bench/README.md): bench-build builds bin/kairos-bench and
# vets its module; bench runs it against bin/kairos on BENCH_REDIS, a
# dedicated Redis, with BENCH_ARGS (such as --scenario burst).
bench-build:
	cd bench && $(GO) build -o ../bin/kairos-bench ./cmd/kairos-bench && $(GO) vet ./...

BENCH_REDIS ?= redis://127.0.0.1:6390
BENCH_ARGS ?=
bench: build bench-build
	./bin/kairos-bench --redis-url $(BENCH_REDIS) --kairos-bin bin/kairos $(BENCH_ARGS)

# Runs each fuzzer for FUZZTIME (default 30s).
FUZZTIME ?= 30s
fuzz:
	@for pkg in ./callback ./api ./auth ./internal/filter; do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# The long soak: 10 minutes at a steady rate with 1% failing receivers,
# reporting jobs created/delivered/dead/duplicated/lost, RSS, Redis memory
# and goroutines. `make test` runs a 30-second version.
SOAK ?= 10m
soak: test-deps
	KAIROS_SOAK_DURATION=$(SOAK) $(GO) test -count=1 -run '^TestSoak$$' -timeout 30m -v ./e2e

# Chaos: a random schedule of network faults (toxiproxy), Redis freezes and
# SIGKILLs of kairos processes for CHAOS (default 10m) under load, reporting
# jobs created/delivered/lost/duplicated and the longest API stall. The
# normal suite runs each fault on its own (TestNetworkFaults, TestRedisFrozen).
CHAOS ?= 10m
chaos: test-deps
	KAIROS_CHAOS_DURATION=$(CHAOS) $(GO) test -count=1 -run '^TestChaos$$' -timeout 30m -v ./internal/server

# Sentinel: TestSentinelFailover (which make test runs once) SENTINEL_RUNS
# times in a row: kairos on a master, two replicas and three Sentinels at 20
# creates/s, through SENTINEL FAILOVER and a SIGKILL of the master, printing
# the stall, lost and duplicated jobs of each run.
SENTINEL_RUNS ?= 5
sentinel: test-deps
	$(GO) test -count=$(SENTINEL_RUNS) -run '^TestSentinelFailover$$' -timeout 30m -v ./internal/server
