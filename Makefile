# statusfold — see `make help`.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

# Versions of the tools and of the local control plane, pinned.
K8S_VERSION            ?= v1.37.2
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN         ?= go run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
# Helm for the chart's tests, built from its module into bin/tools (kept out of the product's go.mod).
HELM_VERSION           ?= v3.22.0
HELM                   ?= $(CURDIR)/bin/tools/helm-$(HELM_VERSION)/helm
export HELM

# The control-plane binaries (kube-apiserver, etcd, kubectl) for envtest and `statusfold local`.
ENVTEST_ASSETS_DIR     ?= $(HOME)/.cache/statusfold/k8s/$(K8S_VERSION)
KUBEBUILDER_ASSETS     ?= $(ENVTEST_ASSETS_DIR)
export KUBEBUILDER_ASSETS

# KubeStellar's controller-manager, which test/kscompat (a module of its own) runs beside statusfold.
KUBESTELLAR_VERSION    ?= v0.30.0
KUBESTELLAR_ASSETS     ?= $(HOME)/.cache/statusfold/kubestellar/$(KUBESTELLAR_VERSION)
export KUBESTELLAR_ASSETS
# The checksum database does not know github.com/kubestellar/kubeflex v0.9.3.
KSCOMPAT_ENV           := GONOSUMDB=github.com/kubestellar STATUSFOLD_BIN=$(CURDIR)/bin/statusfold
KSCOMPAT_TEST_FLAGS    ?= -count=1

GO_TEST_FLAGS          ?= -race -count=1
TEST_TIMEOUT           ?= 40m
FUZZ_TIME              ?= 60s

OCM_API_VERSION        := $(shell go list -m -f '{{.Version}}' open-cluster-management.io/api 2>/dev/null)

##@ General

.PHONY: help
help: ## Show this help (the variables in it with their current values).
	@awk 'BEGIN {FS = ":.*##"; printf "Usage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST) | \
	  sed -e 's|$$(IMAGE_DIR)|$(IMAGE_DIR)|g' -e 's|$$(HELM_VERSION)|$(HELM_VERSION)|g' \
	      -e 's|$$(ENVTEST_ASSETS_DIR)|$(ENVTEST_ASSETS_DIR)|g' -e 's|$$(IMG)|$(IMG)|g'

##@ Development

.PHONY: manifests
manifests: ## Regenerate deepcopy code, CRDs (config/crd) and RBAC (config/rbac) from the Go types and markers.
	$(CONTROLLER_GEN) object paths="./api/..."
	$(CONTROLLER_GEN) crd paths="./api/..." output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=statusfold-manager paths="./aggregator/..." paths="./webhooks/..." paths="./certs/..." output:rbac:artifacts:config=config/rbac
	@mkdir -p config/crd/external
	cp "$$(go env GOMODCACHE)/open-cluster-management.io/api@$(OCM_API_VERSION)/cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml" config/crd/external/
	@chmod 0644 config/crd/external/*.yaml
	@# The chart's copies: its CRDs and the generated manager role (templates/rbac.yaml reads it).
	rm -f charts/statusfold/crds/*.yaml
	cp config/crd/bases/*.yaml config/crd/external/*.yaml charts/statusfold/crds/
	cp config/rbac/role.yaml charts/statusfold/files/manager-role.yaml

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -l -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet (the root module and test/kscompat).
	go vet ./...
	cd test/kscompat && $(KSCOMPAT_ENV) go vet ./...

.PHONY: verify
verify: ## Check, changing no file, that generated code and manifests are current, code is formatted, and docs, chart, config and Go comments use product words (hack/verify-words.sh).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-ed: $$out"; exit 1; fi
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} "$$tmp" 2>/dev/null || true; \
	  $(MAKE) --no-print-directory -C "$$tmp" manifests >/dev/null; \
	  if ! diff -r -q config "$$tmp/config" >/dev/null || ! diff -r -q api "$$tmp/api" >/dev/null || ! diff -r -q charts "$$tmp/charts" >/dev/null; then \
	    diff -r -u config "$$tmp/config" || true; diff -r -u api "$$tmp/api" || true; diff -r -u charts "$$tmp/charts" || true; \
	    echo "generated files are stale: run 'make manifests' and commit"; exit 1; fi
	@echo "verify: generated files are current"
	@bash hack/verify-words.sh

##@ Build

.PHONY: build
build: ## Build bin/statusfold.
	go build -o bin/statusfold ./cmd/statusfold

# `make image`: the image is built by hack/image (go-containerregistry, a module of its own) from a
# static binary, without a container engine. The release version is the file VERSION: the image tag,
# the binary's `statusfold version`, the chart's appVersion (its default image tag) and the
# PostCreateHook's image are that one value (test/chart TestVersionsAgree).
VERSION                ?= $(shell cat $(CURDIR)/VERSION)
REVISION               ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE_DIR              ?= $(CURDIR)/bin/image
IMAGE_ARCH             ?= $(shell go env GOARCH)
IMAGE_REF              ?= ghcr.io/statusfold/statusfold:$(VERSION)

.PHONY: image
image: ## Build the OCI image (static binary, CA bundle, user 65532) into $(IMAGE_DIR)/oci (OCI layout) and $(IMAGE_DIR)/statusfold.tar (docker/podman load), no container engine needed.
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" \
	  -o "$(IMAGE_DIR)/linux-$(IMAGE_ARCH)/statusfold" ./cmd/statusfold
	cd hack/image && go run . -binary "$(IMAGE_DIR)/linux-$(IMAGE_ARCH)/statusfold" -arch $(IMAGE_ARCH) \
	  -version "$(VERSION)" -revision "$(REVISION)" -ref "$(IMAGE_REF)" \
	  -layout "$(IMAGE_DIR)/oci" -tarball "$(IMAGE_DIR)/statusfold.tar"

.PHONY: helm
helm: $(HELM) ## Build Helm $(HELM_VERSION) from its Go module into bin/tools (for the chart's tests).
$(HELM):
	@mkdir -p "$(dir $(HELM))"
	cd "$(dir $(HELM))" && GOBIN="$(dir $(HELM))" GOFLAGS= go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver, etcd and kubectl from Go modules into $(ENVTEST_ASSETS_DIR) (skipped when present).
	@K8S_VERSION=$(K8S_VERSION) hack/envtest-assets.sh "$(ENVTEST_ASSETS_DIR)" >/dev/null

.PHONY: kubestellar-assets
kubestellar-assets: ## Build KubeStellar $(KUBESTELLAR_VERSION)'s controller-manager from Go modules into $(KUBESTELLAR_ASSETS) (skipped when present).
	@KUBESTELLAR_VERSION=$(KUBESTELLAR_VERSION) hack/kubestellar-assets.sh "$(KUBESTELLAR_ASSETS)" >/dev/null

.PHONY: run
# The binary is built and run, not `go run`: `go run` exits 1 when Ctrl-C reaches it, however
# cleanly the program stops, and make would report that as an error.
run: envtest-assets build ## Run the embedded default: `statusfold local --demo` (local control plane, controller, webhooks, samples, simulated WECs).
	bin/statusfold local --demo

##@ Test

.PHONY: test
test: envtest-assets kubestellar-assets helm verify vet build ## Run all tests (unit, envtest integration, image and chart, test/kscompat beside KubeStellar) against a real control plane; builds what they need first.
	go test $(GO_TEST_FLAGS) -timeout $(TEST_TIMEOUT) $$(go list ./... | grep -v '/test/hostile$$')
	@# The hostile suite measures the time and heap bounds of user code: without the race detector,
	@# which slows code several times and inflates the heap, and after the other packages.
	go test -count=1 -timeout $(TEST_TIMEOUT) ./test/hostile
	cd test/kscompat && $(KSCOMPAT_ENV) go test $(KSCOMPAT_TEST_FLAGS) -timeout 20m ./...

.PHONY: test-kscompat
test-kscompat: envtest-assets kubestellar-assets helm build ## Run only test/kscompat: statusfold beside KubeStellar's controller-manager, and the differential.
	cd test/kscompat && $(KSCOMPAT_ENV) go test $(KSCOMPAT_TEST_FLAGS) -v -timeout 20m ./...

.PHONY: test-unit
test-unit: ## Run only the tests that need no control plane.
	go test $(GO_TEST_FLAGS) -short ./...

.PHONY: bench
bench: ## Run the benchmarks (6 runs each, for medians).
	go test -run '^$$' -bench . -benchmem -count 6 ./policy/...

.PHONY: kscompat-speed
kscompat-speed: envtest-assets kubestellar-assets build ## Measure against KubeStellar: its evaluation code vs policy/collector (medians of 5), and update → CombinedStatus latency of both controllers (medians of 10).
	cd test/kscompat && $(KSCOMPAT_ENV) go test -count=1 -v -timeout 30m -run 'TestSpeed|TestEndToEndLatency' ./... -args -kscompat.speed

##@ Scale and robustness

LOAD_WECS              ?= 1000
LOAD_OBJECTS           ?= 100
LOAD_UPDATES           ?= 3000
LOAD_L2_FOR            ?= 60s
LOAD_TIMEOUT           ?= 40m
LOAD_ARGS              ?=

.PHONY: load
load: envtest-assets ## Run the load test at the default size (LOAD_WECS × LOAD_OBJECTS WorkStatuses, ≈15 min): light load (L1), full speed (L2) and start and memory (L3), each against the same run's plain-apiserver baseline; report, profiles and manager log in bin/load/ (docs/performance.md).
	@mkdir -p bin/load
	go test ./test/load -run '^TestLoad$$' -count=1 -v -timeout $(LOAD_TIMEOUT) -args -load.measure \
	  -load.wecs=$(LOAD_WECS) -load.objects=$(LOAD_OBJECTS) -load.updates=$(LOAD_UPDATES) -load.l2-for=$(LOAD_L2_FOR) \
	  -load.report=$(CURDIR)/bin/load/report.json -load.profile-dir=$(CURDIR)/bin/load $(LOAD_ARGS)

.PHONY: fuzz
fuzz: ## Run every Fuzz* target in the repository (found with `go test -list`) for FUZZ_TIME each.
	@total=0; failed=""; for pkg in $$(go list ./...); do \
	  if ! out=$$(go test -list '^Fuzz' "$$pkg" 2>&1); then echo "$$out"; failed="$$failed $$pkg"; continue; fi; \
	  for f in $$(echo "$$out" | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f for $(FUZZ_TIME)"; \
	    go test "$$pkg" -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZ_TIME); \
	    total=$$((total + 1)); \
	  done; \
	done; echo "fuzz: $$total targets, $(FUZZ_TIME) each"; \
	if [ -n "$$failed" ]; then echo "fuzz: could not list the tests of:$$failed"; exit 1; fi

##@ Deployment

IMG                    ?= ghcr.io/statusfold/statusfold:$(VERSION)
KUBECTL                ?= kubectl

.PHONY: docker-build
docker-build: ## Build the container image $(IMG).
	docker build -t $(IMG) .

.PHONY: deploy
deploy: ## Install the CRDs and deploy statusfold (config/default, built-in certificates) to the current kubectl context, image $(IMG).
	$(KUBECTL) apply --server-side -f config/crd/bases -f config/crd/external
	$(KUBECTL) kustomize config/default | sed 's|ghcr.io/statusfold/statusfold:latest|$(IMG)|' | $(KUBECTL) apply -f -

.PHONY: undeploy
undeploy: ## Remove what `make deploy` installed, except the CRDs (and so the users' objects).
	$(KUBECTL) kustomize config/default | $(KUBECTL) delete --ignore-not-found -f -
