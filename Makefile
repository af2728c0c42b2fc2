# minik8s — the Makefile targets are the project's interface. `make help` lists them.

GO        ?= go
BIN       := bin
DATA_DIR  ?= $(CURDIR)/_output/cluster
PORT      ?= 6443
GOFLAGS   ?=
# The Kubernetes version the binaries report (kubectl version, client-go user agent).
KUBE_VERSION := v1.37.2
LDFLAGS   := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
             -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
             -X k8s.io/component-base/version.gitTreeState=clean
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)

.PHONY: help build dashboard up down conformance test test-unit test-integration test-e2e verify bench deps clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

deps: ## install what building and testing need (Debian packages, Go modules)
	@hack/install-deps.sh

dashboard: ## bundle the web dashboard into pkg/dashboard/dist (npm ci, esbuild; needs node and npm)
	@if command -v npm >/dev/null; then web/dashboard/build.sh; else echo "npm is missing: the dashboard is not built (make deps installs it)"; fi

build: dashboard ## build bin/minik8s, bin/kubectl and the kubectl plugins bin/kubectl-fn and bin/kubectl-wf
	$(GO) build $(GOFLAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/minik8s ./cmd/minik8s
	$(GO) build $(GOFLAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl ./cmd/kubectl
	$(GO) build $(GOFLAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-fn ./cmd/kubectl-fn
	$(GO) build $(GOFLAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-wf ./cmd/kubectl-wf

up: deps build ## run a single-node cluster in the background (logs: _output/minik8s.log)
	@hack/up.sh "$(DATA_DIR)" "$(PORT)"

down: ## stop the cluster started by `make up`
	@hack/down.sh "$(DATA_DIR)"

conformance: build ## the upstream conformance suite (e2e.test v1.37.2) on the `make up` cluster (started if needed), offline: its test images are built here (root; FOCUS, SKIP, PROCS, KEEP=1; hack/conformance.sh)
	@DATA_DIR="$(DATA_DIR)" PORT="$(PORT)" hack/conformance.sh all

test: deps verify build test-unit test-integration test-e2e ## run every test tier

test-unit: ## unit tests
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /test/)

test-integration: ## in-process apiserver on embedded etcd, driven by client-go and kubectl
	$(GO) test -count=1 -timeout 20m -ldflags "$(LDFLAGS)" ./test/integration/...

test-e2e: ## whole clusters as root: real pods on containerd, nodes in network namespaces, kubectl
	$(GO) test -count=1 -timeout 20m -ldflags "$(LDFLAGS)" ./test/e2e/...

verify: ## gofmt and go vet
	@out=$$(gofmt -l cmd pkg test 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench: build ## API throughput vs raw etcd, scheduler throughput at 100/1000 nodes, pod startup vs bare containerd, function cold start/warm/requests/s/scale-up, workflow overhead per Pass/Task state and runs/s, storage MB/s and file ops/s per volume type vs the node disk, proxy sync of 1000 Services x 10 endpoints (root; prints figures)
	$(BIN)/minik8s bench api
	$(BIN)/minik8s bench scheduler
	$(BIN)/minik8s bench pods
	$(BIN)/minik8s bench functions --cold 5 --cold-pull 2 --warm 200 --duration 5s
	$(BIN)/minik8s bench workflows --runs 30 --duration 10s
	$(BIN)/minik8s bench storage
	$(GO) test -run '^$$' -bench 'Sync.*1000x10$$' -benchtime 5x ./pkg/proxy/

clean: ## remove build outputs
	rm -rf $(BIN) _output
