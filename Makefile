# capctl build, test and release targets. `make help` lists them.
SHELL := /usr/bin/env bash

# A tag like v0.3.0 when there is one, else v0.0.0-<commit> (semver-shaped, so tools can compare it).
VERSION      ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo "v0.0.0-$$(git rev-parse --short HEAD 2>/dev/null || echo dev)")
GIT_COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
TREE_STATE   ?= $(shell if git diff --quiet 2>/dev/null; then echo clean; else echo dirty; fi)
BUILD_DATE   ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG  := github.com/capctl/capctl/internal/version
LDFLAGS      := -X $(VERSION_PKG).gitVersion=$(VERSION) -X $(VERSION_PKG).gitCommit=$(GIT_COMMIT) \
                -X $(VERSION_PKG).gitTreeState=$(TREE_STATE) -X $(VERSION_PKG).buildDate=$(BUILD_DATE)

# -trimpath for every go command make runs (and the builds the tests start): without it the build
# cache keys each of capctl's own packages by the checkout's folder, so a clean clone anywhere else
# (CI's) compiles all of them again, about 4 CPU-minutes before the first test can start.
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

# Where hack/envtest-bins.sh puts kube-apiserver, etcd, kubectl and kube-controller-manager (shared by every clone).
K8S_VERSION        ?= v1.37.2
CAPCTL_ENVTEST_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/capctl/envtest/$(K8S_VERSION)
export KUBEBUILDER_ASSETS := $(CAPCTL_ENVTEST_DIR)

# The reference clusterctl, built from the Go module proxy, that the compatibility tests run
# against clusters capctl initialised (hack/clusterctl-bin.sh).
CLUSTERCTL_VERSION ?= v1.14.2
CLUSTERCTL_BIN     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/capctl/clusterctl/$(CLUSTERCTL_VERSION)/clusterctl
export CAPCTL_CLUSTERCTL ?= $(CLUSTERCTL_BIN)
# The clusterctl of the v1beta1 contract (v1.10), which sets up the v1beta1 management cluster of
# the live contract tests (capctl, like clusterctl v1.14, installs v1beta2 core providers only).
CLUSTERCTL_V1BETA1_VERSION ?= v1.10.10
CLUSTERCTL_V1BETA1_BIN     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/capctl/clusterctl/$(CLUSTERCTL_V1BETA1_VERSION)/clusterctl
export CAPCTL_CLUSTERCTL_V1BETA1 ?= $(CLUSTERCTL_V1BETA1_BIN)

# The Cluster API managers (core, kubeadm bootstrap and control plane, CAPD) that the end-to-end
# tests and the demo run as host processes, and kube-controller-manager next to kube-apiserver
# (hack/live-bins.sh). The demo needs one manager set; the upgrade end-to-end test also v1.13,
# the contract tests v1.10 (v1beta1), so `make demo` builds only CAPI_DEMO_SETS and `make
# live-bins` all of them.
CAPCTL_CAPI_BINS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/capctl/capi
CAPI_DEMO_SETS   ?= v1.14.2
CAPI_E2E_SETS    ?= v1.13.5:v1.13.7 v1.10.10
CAPI_SETS        ?= $(CAPI_DEMO_SETS) $(CAPI_E2E_SETS)
export CAPCTL_CAPI_BINS

# The upstream Cluster API fixtures the tests and the demo read (testenv.FixturesDir): a clusterctl
# local repository and CRDs, built by hack/fixtures.sh from the Go module proxy into the cache.
# $CAPCTL_FIXTURES or ../shared/fixtures, where present, are read first; the targets below build the
# cache all the same (a second of stamp checks once built) so that the build and its comparison with
# the shared folder (internal/testing/testenv) run wherever the tests run.
CAPCTL_FIXTURES_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/capctl/fixtures
export CAPCTL_FIXTURES_CACHE

# The test tiers (docs/development.md): unit (-short, no servers), integration (envtest API servers
# and the reference clusterctl: every package but the live ones) and e2e (live management
# clusters). test/e2e comes first so that it, the longest, starts first.
MODULE            := github.com/capctl/capctl
E2E_PKGS          ?= ./test/e2e/ ./test/demo/ ./internal/testing/livemgmt/
INTEGRATION_PKGS  ?= $(filter-out $(MODULE)/test/e2e $(MODULE)/test/demo $(MODULE)/internal/testing/livemgmt,$(shell go list ./...))
# -count=1: integration tests depend on API servers and binaries outside Go's test cache, so a
# cached pass would prove nothing. A timeout per package and tier: a hung test fails in minutes,
# not at CI's limit. test/e2e alone takes 35-39 min on this machine and has taken past 45 min in a
# slow run (2026-12-08, every package slower): 60m leaves it room and still fails a hang well
# within CI's 90 minutes.
GO_TEST_FLAGS       ?= -count=1
INTEGRATION_TIMEOUT ?= 30m
E2E_TIMEOUT         ?= 60m
# Where `make test` keeps each tier's output while both run (default: a new temporary folder).
TEST_LOG_DIR        ?=
BENCH               ?= .

.PHONY: help build install test unit integration e2e prereqs fixtures envtest-bins clusterctl-bin live-bins demo-bins bench bench-describe demo examples fmt vet fuzz release-snapshot release-tools release-check release docs operator-plugin mcp-tools registry-bin clean

help: ## Show this help
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

build: ## Build bin/capctl with the version stamped in
	go build -ldflags "$(LDFLAGS)" -o bin/capctl ./cmd/capctl

install: ## go install capctl with the version stamped in
	go install -ldflags "$(LDFLAGS)" ./cmd/capctl

prereqs: ## Check Go, free disk, root and ip, and the fixtures before the long builds (hack/prereqs.sh; PREREQS_TARGET=demo|test|integration)
	@hack/prereqs.sh $(or $(PREREQS_TARGET),test)

fixtures: ## Build the upstream Cluster API fixtures (repository/, crds/) from the Go module proxy into the cache (idempotent)
	@hack/fixtures.sh "$(CAPCTL_FIXTURES_CACHE)" >/dev/null

envtest-bins: ## Build kube-apiserver, etcd, kubectl and kube-controller-manager from the Go module proxy into the cache (idempotent)
	@K8S_VERSION=$(K8S_VERSION) hack/envtest-bins.sh "$(CAPCTL_ENVTEST_DIR)"

clusterctl-bin: ## Build the reference clusterctl for the compatibility tests (idempotent)
	@CLUSTERCTL_VERSION=$(CLUSTERCTL_VERSION) hack/clusterctl-bin.sh "$(CLUSTERCTL_BIN)"

live-bins: envtest-bins ## Build the Cluster API managers (every set), kube-controller-manager and the v1beta1-era clusterctl for the live management clusters (idempotent)
	@CAPI_SETS="$(CAPI_SETS)" K8S_VERSION=$(K8S_VERSION) CAPCTL_ENVTEST_DIR="$(CAPCTL_ENVTEST_DIR)" hack/live-bins.sh
	@CLUSTERCTL_VERSION=$(CLUSTERCTL_V1BETA1_VERSION) hack/clusterctl-bin.sh "$(CLUSTERCTL_V1BETA1_BIN)"

demo-bins: envtest-bins ## Build only what the demo runs: the v1.14 managers and kube-controller-manager (idempotent)
	@CAPI_SETS="$(CAPI_DEMO_SETS)" K8S_VERSION=$(K8S_VERSION) CAPCTL_ENVTEST_DIR="$(CAPCTL_ENVTEST_DIR)" hack/live-bins.sh

# The capctl binary the tests run as a child process, built once per run before the tests start
# (testenv.CapctlBinaryEnv) rather than once in each test package that runs it.
WITH_TEST_BINARY = bin="$$(mktemp -d)/capctl" && trap 'rm -rf "$$(dirname "$$bin")"' EXIT && \
	go build -o "$$bin" ./cmd/capctl && export CAPCTL_TEST_BINARY="$$bin" &&

test: prereqs fixtures envtest-bins clusterctl-bin live-bins operator-plugin mcp-tools registry-bin ## Run every tier: e2e, go vet (and the Windows build) and integration side by side (the CI command)
	@$(WITH_TEST_BINARY) TEST_LOG_DIR="$(TEST_LOG_DIR)" hack/test-tiers.sh \
	  e2e "go test $(GO_TEST_FLAGS) -timeout $(E2E_TIMEOUT) $(E2E_PKGS)" \
	  vet "go vet ./... && GOOS=windows GOARCH=amd64 go build -o /dev/null ./cmd/capctl" \
	  integration "go test $(GO_TEST_FLAGS) -timeout $(INTEGRATION_TIMEOUT) $(INTEGRATION_PKGS)"

unit: ## Run the unit tier: the tests that need no server or binary (go test -short)
	go test -short ./...

integration: fixtures envtest-bins clusterctl-bin operator-plugin mcp-tools registry-bin ## Run the integration tier: real kube-apiserver + etcd, and the reference clusterctl (every package but the live ones)
	@$(WITH_TEST_BINARY) go test $(GO_TEST_FLAGS) -timeout $(INTEGRATION_TIMEOUT) $(INTEGRATION_PKGS)

e2e: fixtures live-bins ## Run the e2e tier: live management clusters (test/e2e, test/demo, internal/testing/livemgmt)
	@$(WITH_TEST_BINARY) go test $(GO_TEST_FLAGS) -timeout $(E2E_TIMEOUT) $(E2E_PKGS)

bench: envtest-bins clusterctl-bin ## Run the benchmarks (real API servers; clusterctl side by side) and print their figures
	go test -run '^$$' -bench '$(BENCH)' -benchtime 1x -timeout 60m ./...

# DESCRIBE_BENCH_MACHINES=1000,10000 (worker machines; default 1000), DESCRIBE_BENCH_RUNS=3,
# DESCRIBE_BENCH_CLUSTERCTL_UNGROUPED_MAX=1003 (0 skips clusterctl's slow ungrouped view).
bench-describe: envtest-bins clusterctl-bin ## describe cluster, capctl vs clusterctl on one API server: median s, requests, peak RSS
	go test -run '^$$' -bench 'BenchmarkDescribeCluster$$' -benchtime 1x -timeout 60m ./pkg/describe/

demo: PREREQS_TARGET = demo
demo: prereqs fixtures demo-bins build ## Run the end-to-end demo on two live management clusters (real Cluster API controllers)
	@if [ -x hack/demo.sh ]; then CAPCTL=$(CURDIR)/bin/capctl hack/demo.sh; else echo "the demo is not built yet (see README)"; exit 1; fi

examples: ## Regenerate the demo's provider repository (examples/repository) with controller-gen
	hack/gen-examples.sh

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

vet: ## go vet
	go vet ./...

fuzz: ## Run every fuzz target for 30s each
	@for pkg in $$(go list ./...); do \
	  for f in $$(go test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; go test -run '^$$' -fuzz "^$$f$$" -fuzztime 30s $$pkg || exit 1; \
	  done; done

# The release tools (goreleaser, syft), pinned and built once from the Go module proxy
# (hack/release-tools.sh); the release targets put their folder first on PATH.
RELEASE_TOOLS_BIN ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/capctl/tools/bin
# Signing checksums.txt needs a key (COSIGN_KEY, a path, env://VAR or KMS URI) or a keyless
# identity (CAPCTL_SIGN_KEYLESS=1); without either the snapshot is built unsigned and says so.
SIGN_SKIP = $(if $(or $(COSIGN_KEY),$(CAPCTL_SIGN_KEYLESS)),,--skip=sign)

release-tools: ## Build the pinned goreleaser and syft from the Go module proxy into the cache (idempotent)
	@hack/release-tools.sh "$(RELEASE_TOOLS_BIN)" >/dev/null

release-snapshot: release-tools ## Build every release artefact locally (archives, SBOMs, checksums, krew manifest, Homebrew cask; no publish)
	@$(if $(SIGN_SKIP),echo "release-snapshot: no COSIGN_KEY or CAPCTL_SIGN_KEYLESS: checksums.txt is not signed (everything else is built)" >&2,true)
	PATH="$(RELEASE_TOOLS_BIN):$$PATH" hack/release-snapshot.sh $(SIGN_SKIP)

release-check: ## Validate dist/ from release-snapshot: checksums, an SBOM per archive naming capctl's commit, man pages, completions, krew and Homebrew
	CAPCTL_RELEASE_DIST=$(CURDIR)/dist go test -count=1 -v ./test/release/

release: release-tools ## Publish a tagged release with goreleaser (needs GITHUB_TOKEN; signs with COSIGN_KEY or CAPCTL_SIGN_KEYLESS)
	@$(if $(SIGN_SKIP),echo "release: refusing to publish unsigned checksums: set COSIGN_KEY or CAPCTL_SIGN_KEYLESS=1" >&2; exit 1,true)
	PATH="$(RELEASE_TOOLS_BIN):$$PATH" goreleaser release --clean

docs: ## Regenerate the command reference (docs/reference) and man pages (docs/man) from the cobra commands
	go test -count=1 -run '^TestCommandReferenceIsCurrent$$' ./cmd/capctl/ -args -update

mcp-tools: ## Install the MCP conformance suite and TypeScript SDK (npm) into the cache, for the MCP server's tests (idempotent; needs Node)
	@hack/mcp-tools.sh >/dev/null

registry-bin: ## Build the OCI registry (CNCF distribution) into the cache, for the OCI provider-repository tests on a real registry (idempotent)
	@hack/registry-bin.sh >/dev/null

operator-plugin: ## Build the Cluster API Operator's clusterctl-operator plugin into the cache, for its plugin test (idempotent)
	@hack/operator-plugin.sh >/dev/null

clean: ## Remove build output
	rm -rf bin dist completions
