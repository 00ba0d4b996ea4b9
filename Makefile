# etcdpilot Makefile.
#
# Every tool is built from pinned Go modules into bin/ (nothing is downloaded from anywhere
# but the Go module proxy and Debian's apt). A tool target does nothing when the pinned
# version is already in bin/. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

# ---------------------------------------------------------------------------------------------
# Release and images
# ---------------------------------------------------------------------------------------------

# VERSION is the operator release being built (semver, no leading v), CREATED_AT its release
# date (the CSV's createdAt). Releasing is described in docs/development.md; catalog/releases.yaml
# records the commit of every release.
VERSION ?= 0.2.0
CREATED_AT ?= 2026-11-21T00:00:00Z

# Public image names: what a real user pulls. Local builds override the registry.
IMAGE_TAG_BASE ?= quay.io/etcdpilot/etcdpilot
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)
ETCD_IMAGE_REPOSITORY ?= gcr.io/etcd-development/etcd

# OLM bundle and catalog images of this release, and the image of its capability scorecard
# tests (scorecard/), which the bundle's scorecard config names.
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
SCORECARD_IMG ?= $(IMAGE_TAG_BASE)-scorecard-tests:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:latest

# REGISTRY is where `make images` pushes and what the local deploy points the operator at.
# The local cluster's registry is localhost:5000; with USE_EXISTING_CLUSTER=true name your own.
# A public image keeps its path there: quay.io/etcdpilot/etcdpilot:v0.1.0 is pushed as
# localhost:5000/etcdpilot/etcdpilot:v0.1.0, and the local cluster's containerd mirrors
# quay.io and gcr.io to the local registry, so the bundle and catalog (which name the public
# images) install unchanged.
REGISTRY ?= localhost:5000
image-path = $(patsubst $(firstword $(subst /, ,$(1)))/%,%,$(1))
local-ref = $(REGISTRY)/$(call image-path,$(1))
LOCAL_IMG_NAME ?= $(call local-ref,$(IMAGE_TAG_BASE))
LOCAL_IMG_TAG ?= v$(VERSION)
LOCAL_IMG := $(LOCAL_IMG_NAME):$(LOCAL_IMG_TAG)
LOCAL_ETCD_IMAGE_REPOSITORY ?= $(call local-ref,$(ETCD_IMAGE_REPOSITORY))


# ---------------------------------------------------------------------------------------------
# Tools (pinned)
# ---------------------------------------------------------------------------------------------

CONTROLLER_TOOLS_VERSION ?= v0.20.1
KUSTOMIZE_VERSION ?= v5.8.2
GOLANGCI_LINT_VERSION ?= v2.15.0
CRANE_VERSION ?= v0.20.6
CRD_REF_DOCS_VERSION ?= v0.3.0
# Versions of tools built from a module under hack/tools/ are read from that go.mod, so the
# pin lives in one place.
modver = $(shell awk '$$1 == "$(2)" || $$2 == "$(2)" { v = ($$1 == "$(2)") ? $$2 : $$3 } END { print v }' hack/tools/$(1)/go.mod)
OPERATOR_SDK_VERSION := $(call modver,operator-sdk,github.com/operator-framework/operator-sdk)
# opm is built from OLM's module (hack/tools/olm): the operator-registry release OLM requires.
OPM_VERSION := $(call modver,olm,github.com/operator-framework/operator-registry)
COREDNS_VERSION := $(call modver,coredns,github.com/coredns/coredns)
LOCAL_PATH_PROVISIONER_VERSION := $(call modver,local-path-provisioner,github.com/rancher/local-path-provisioner)
# kube-router, whose firewall alone enforces NetworkPolicy on the local cluster (its bridge
# network plugin has none).
KUBE_ROUTER_VERSION := $(call modver,kube-router,github.com/cloudnativelabs/kube-router/v2)
# The S3 server of the backup tests (a local process in the integration tests, make s3-up in
# the cluster).
VERSITYGW_VERSION := $(call modver,versitygw,github.com/versity/versitygw)
NFDELAY_VERSION := $(call modver,nfdelay,github.com/mdlayher/netlink)
# promtool, which checks the alerting rules and runs their unit tests (internal/monitoring).
PROMETHEUS_VERSION := $(call modver,prometheus,github.com/prometheus/prometheus)
# The Prometheus release that module version is (v0.316.0 is v3.16.0).
PROMETHEUS_RELEASE := $(shell echo $(PROMETHEUS_VERSION) | sed -E 's/^v0\.([0-9])0?([0-9]+)\.([0-9]+)$$/v\1.\2.\3/')
# The Prometheus Operator (and its config reloader) of make monitoring-up; its CRDs for envtest.
PROMETHEUS_OPERATOR_VERSION := $(call modver,prometheus-operator,github.com/prometheus-operator/prometheus-operator)
# Kubernetes release of the local cluster and envtest.
K8S_VERSION := $(call modver,kubernetes,k8s.io/kubernetes)
# etcd releases the operator supports, one pinned module each: hack/tools/etcd-vX.Y holds the
# newest patch of a minor, hack/tools/etcd-vX.Y.Z each older patch still supported; an operand
# image is built for each. internal/versions.Supported lists the same releases (a test checks).
# A patch module selects its minor's versions of every other module (hack/check-etcd-modules.sh,
# in make verify), so that only etcd's own packages compile twice.
ETCD_VERSIONS := $(foreach d,$(notdir $(wildcard hack/tools/etcd-v*)),$(call modver,$(d),go.etcd.io/etcd/server/v3))
# The newest patch of each minor (the modules hack/tools/etcd-vX.Y).
ETCD_MINOR_VERSIONS := $(foreach d,$(notdir $(wildcard hack/tools/etcd-v*)),$(if $(word 3,$(subst ., ,$(d))),,$(call modver,$(d),go.etcd.io/etcd/server/v3)))
# The etcd release the local control plane and envtest run on.
CONTROL_PLANE_ETCD_VERSION := $(call modver,etcd-v3.6,go.etcd.io/etcd/server/v3)
GINKGO_VERSION := $(shell awk '$$1 == "github.com/onsi/ginkgo/v2" { print $$2 }' go.mod)

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
CRANE ?= $(LOCALBIN)/crane-$(CRANE_VERSION)
CRD_REF_DOCS ?= $(LOCALBIN)/crd-ref-docs-$(CRD_REF_DOCS_VERSION)
GINKGO ?= $(LOCALBIN)/ginkgo-$(GINKGO_VERSION)
OPERATOR_SDK ?= $(LOCALBIN)/operator-sdk-$(OPERATOR_SDK_VERSION)
OPM ?= $(LOCALBIN)/opm-$(OPM_VERSION)
COREDNS ?= $(LOCALBIN)/coredns-$(COREDNS_VERSION)
LOCAL_PATH_PROVISIONER ?= $(LOCALBIN)/local-path-provisioner-$(LOCAL_PATH_PROVISIONER_VERSION)
KUBE_ROUTER ?= $(LOCALBIN)/kube-router-$(KUBE_ROUTER_VERSION)
VERSITYGW ?= $(LOCALBIN)/versitygw-$(VERSITYGW_VERSION)
PROMTOOL ?= $(LOCALBIN)/promtool-$(PROMETHEUS_VERSION)
# promcheck (hack/tools/prometheus/promcheck, our own code on the pinned Prometheus module)
# checks the PromQL and metric names of the rules and the dashboard; rebuilt when it changes.
PROMCHECK ?= $(LOCALBIN)/promcheck
# nfdelay (hack/tools/nfdelay, our own code on the pinned netlink module) holds NFQUEUE
# packets to add latency between member pods in the e2e tests (hack/latency.sh).
NFDELAY ?= $(LOCALBIN)/nfdelay-$(NFDELAY_VERSION)
PROMETHEUS ?= $(LOCALBIN)/prometheus-$(PROMETHEUS_VERSION)
PROMETHEUS_OPERATOR ?= $(LOCALBIN)/prometheus-operator-$(PROMETHEUS_OPERATOR_VERSION)
PROMETHEUS_CONFIG_RELOADER ?= $(LOCALBIN)/prometheus-config-reloader-$(PROMETHEUS_OPERATOR_VERSION)
K8S_BIN ?= $(LOCALBIN)/k8s-$(K8S_VERSION)
K8S_BINARIES := kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl
KUBECTL ?= $(K8S_BIN)/kubectl
ETCD_BIN = $(LOCALBIN)/etcd-$(1)
CONTROL_PLANE_ETCD_BIN := $(call ETCD_BIN,$(CONTROL_PLANE_ETCD_VERSION))

# Builds must use this machine's Go and never fetch a toolchain.
export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false

# ---------------------------------------------------------------------------------------------
# Local cluster
# ---------------------------------------------------------------------------------------------

# All state of the local cluster lives in CLUSTER_DIR; its admin kubeconfig is written to
# LOCAL_KUBECONFIG. With USE_EXISTING_CLUSTER=true, targets use the current kubeconfig instead.
CLUSTER_DIR ?= /var/lib/etcdpilot-cluster
LOCAL_KUBECONFIG ?= $(CLUSTER_DIR)/kubeconfig
# How many nodes `make cluster-up` starts (1 to 5), each with its own kubelet and containerd
# (hack/cluster/README.md): three, one per zone, so that the e2e suite sees members spread,
# drained and lost as on a production cluster.
NODES ?= 3
USE_EXISTING_CLUSTER ?= false
ifneq ($(USE_EXISTING_CLUSTER),true)
export KUBECONFIG := $(LOCAL_KUBECONFIG)
endif

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-20s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Write the version markers and pinned images from internal/versions (hack/versions), then the CRDs and RBAC from the Go markers, and the operator's alert rules (config/prometheus).
	go run ./hack/versions
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/..." paths="./controllers/..." output:crd:artifacts:config=config/crd/bases
	go run ./hack/rulesgen config/prometheus/rules.yaml

.PHONY: generate
.PHONY: docs
docs: $(CRD_REF_DOCS) ## Write the API reference (docs/api-reference.md) from the Go types and their comments.
	@$(CRD_REF_DOCS) --source-path=api/v1alpha1 --config=hack/refdocs/config.yaml --renderer=markdown \
		--output-path=docs/api-reference.md --log-level=ERROR

generate: $(CONTROLLER_GEN) $(PROMCHECK) ## Generate the DeepCopy methods of the API types, and the list of metric names the alert rules and the dashboard use.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."
	$(PROMCHECK) -rules internal/monitoring/rules.yaml -dashboard internal/monitoring/dashboard.json -names internal/monitoring/testdata/metric-names.txt

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and apply its fixes.
	$(GOLANGCI_LINT) run --fix

# Integration tests run against our own kube-apiserver and etcd (envtest), never
# setup-envtest's downloads.
ENVTEST_ASSETS := $(LOCALBIN)/envtest-$(K8S_VERSION)
.PHONY: envtest-assets
envtest-assets: $(K8S_BIN)/kube-apiserver $(CONTROL_PLANE_ETCD_BIN)/etcd $(KUBECTL) ## Lay out the envtest binaries (kube-apiserver, etcd, kubectl).
	@mkdir -p $(ENVTEST_ASSETS)
	@ln -sf $(K8S_BIN)/kube-apiserver $(ENVTEST_ASSETS)/kube-apiserver
	@ln -sf $(KUBECTL) $(ENVTEST_ASSETS)/kubectl
	@ln -sf $(CONTROL_PLANE_ETCD_BIN)/etcd $(ENVTEST_ASSETS)/etcd

# cert-manager's Certificate CRD, from its pinned module, so that envtest serves the API the
# operator uses in TLS mode CertManager.
CERT_MANAGER_VERSION ?= v1.21.2
CERT_MANAGER_CRDS := $(LOCALBIN)/crds/cert-manager-$(CERT_MANAGER_VERSION)
$(CERT_MANAGER_CRDS)/cert-manager.io_certificates.yaml:
	@set -e; dir=$$(go mod download -json github.com/cert-manager/cert-manager@$(CERT_MANAGER_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	test -n "$$dir" || { echo "could not download cert-manager $(CERT_MANAGER_VERSION)" >&2; exit 1; }; \
	mkdir -p $(CERT_MANAGER_CRDS) && cp $$dir/deploy/crds/cert-manager.io_certificates.yaml $@ && chmod 644 $@

# The Prometheus Operator's CRDs (monitoring.coreos.com: PodMonitor, ServiceMonitor,
# PrometheusRule, Prometheus and the rest), copied from the pinned module. Tests and
# make monitoring-up use the directory; the PodMonitor file stands for the whole set.
PROMETHEUS_OPERATOR_CRDS ?= $(LOCALBIN)/crds/prometheus-operator-$(PROMETHEUS_OPERATOR_VERSION)
.PHONY: prometheus-operator-crds
prometheus-operator-crds: $(PROMETHEUS_OPERATOR_CRDS)/monitoring.coreos.com_podmonitors.yaml ## Copy the Prometheus Operator's CRDs into $(PROMETHEUS_OPERATOR_CRDS).
$(PROMETHEUS_OPERATOR_CRDS)/monitoring.coreos.com_podmonitors.yaml:
	@set -e; dir=$$(cd hack/tools/prometheus-operator && go mod download -json github.com/prometheus-operator/prometheus-operator | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	test -n "$$dir" || { echo "could not download prometheus-operator $(PROMETHEUS_OPERATOR_VERSION)" >&2; exit 1; }; \
	mkdir -p $(PROMETHEUS_OPERATOR_CRDS) && cp $$dir/example/prometheus-operator-crd/*.yaml $(PROMETHEUS_OPERATOR_CRDS)/ && chmod 644 $(PROMETHEUS_OPERATOR_CRDS)/*.yaml

# What `make test` needs built besides the generated files: CI builds it before it runs
# `make test` beside the local cluster's start, so that no tool is built by two makes at once.
TEST_DEPS = envtest-assets $(CERT_MANAGER_CRDS)/cert-manager.io_certificates.yaml $(PROMETHEUS_OPERATOR_CRDS)/monitoring.coreos.com_podmonitors.yaml $(VERSITYGW) $(PROMTOOL) $(PROMCHECK) $(foreach v,$(ETCD_MINOR_VERSIONS),$(call ETCD_BIN,$(v))/etcd)

# The suites that need a running cluster (or minutes of one machine) and have targets of
# their own; the test framework under test/framework is unit-tested with the rest.
CLUSTER_SUITES = -e /test/e2e -e /test/bench -e /test/scale

.PHONY: test-deps
test-deps: $(TEST_DEPS) ## Build the tools and fetch the CRDs that make test uses.

.PHONY: test
# -parallel 4: the controllers' envtests that wait in real time run in parallel (t.Parallel),
# and the two longest (Auto raft timing over a one-minute window, 100 s and 60 s) would
# otherwise hold both of go test's default slots on two cores while the others queue.
test: manifests generate fmt vet $(TEST_DEPS) test-rules test-monitoring ## Run unit and integration tests, the alerting rules' tests, and the check of the rules' and dashboard's metrics against real etcd.
	CERT_MANAGER_CRDS="$(CERT_MANAGER_CRDS)" PROMETHEUS_OPERATOR_CRDS="$(PROMETHEUS_OPERATOR_CRDS)" PROMTOOL="$(PROMTOOL)" KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" VERSITYGW="$(VERSITYGW)" go test -parallel 4 $$(go list ./... | grep -v $(CLUSTER_SUITES)) -coverprofile cover.out

.PHONY: test-rules
test-rules: $(PROMTOOL) ## Check the alerting rules (every expression parses) and run their promtool unit tests.
	$(PROMTOOL) check rules internal/monitoring/rules.yaml
	cd internal/monitoring && $(PROMTOOL) test rules rules_test.yaml

# Scrapes of a 3-member cluster of each etcd minor (hack/monitoring/scrape-etcd.sh), which
# promcheck checks every etcd metric name of the rules and the dashboard against.
MONITORING_SCRAPES := $(CURDIR)/_output/monitoring-scrapes
.PHONY: test-monitoring
test-monitoring: $(PROMCHECK) $(foreach v,$(ETCD_MINOR_VERSIONS),$(call ETCD_BIN,$(v))/etcd) ## Check that the rules and the dashboard parse, scope the etcd group by etcd_cluster!="", and use only metrics that each etcd minor exports.
	@rm -rf $(MONITORING_SCRAPES) && mkdir -p $(MONITORING_SCRAPES)
	@# One cluster per minor, all at once (each mostly waits on its members), on ports of its own.
	@pids=; i=0; for v in $(ETCD_MINOR_VERSIONS); do \
		PORT_LOW=$$((20000 + i * 4000)) PORT_SPAN=4000 ETCD_DIR=$(LOCALBIN)/etcd-$$v hack/monitoring/scrape-etcd.sh $$v $(MONITORING_SCRAPES) & \
		pids="$$pids $$!"; i=$$((i + 1)); \
	done; rc=0; for p in $$pids; do wait $$p || rc=1; done; exit $$rc
	$(PROMCHECK) -rules internal/monitoring/rules.yaml -dashboard internal/monitoring/dashboard.json \
		$(foreach v,$(ETCD_MINOR_VERSIONS),-etcd '$(MONITORING_SCRAPES)/etcd-$(v)-member*.prom')

# How long `make fuzz` looks for an observation the planner mishandles.
FUZZTIME ?= 5m

.PHONY: fuzz
fuzz: ## Fuzz the membership planner (FUZZTIME, 5m): no plan may lose quorum, touch the leader first, or forget a member. `make test` runs the seeds.
	go test ./internal/membership -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME)

.PHONY: bench
bench: bench-unit bench-scale bench-cluster ## Run every benchmark: unit ones, the operator at scale in envtest, then those on the local cluster.

.PHONY: bench-unit
bench-unit: $(CONTROL_PLANE_ETCD_BIN)/etcd $(VERSITYGW) ## Run the benchmarks of the pure packages, and the agent's backup and restore of a 512 MiB etcd to S3 (a local etcd and versitygw) next to etcdctl's snapshot save.
	VERSITYGW="$(VERSITYGW)" go test -run '^$$' -bench . -benchmem $$(go list ./... | grep -v $(CLUSTER_SUITES))

.PHONY: bench-scale
bench-scale: envtest-assets $(CERT_MANAGER_CRDS)/cert-manager.io_certificates.yaml $(PROMETHEUS_OPERATOR_CRDS)/monitoring.coreos.com_podmonitors.yaml ## Run the operator against many EtcdClusters in envtest, with fake etcd members (SCALE_CLUSTERS, default 1000; SCALE_WINDOW, default 1m): steady-state writes, p99 reconcile time, memory, CPU, member polls.
	CERT_MANAGER_CRDS="$(CERT_MANAGER_CRDS)" PROMETHEUS_OPERATOR_CRDS="$(PROMETHEUS_OPERATOR_CRDS)" KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -run '^Test' -bench Scale -benchtime=1x -timeout 60m ./test/scale

.PHONY: bench-cluster
bench-cluster: $(KUSTOMIZE) $(KUBECTL) cluster-ensure images s3-up deploy ## Run the benchmarks on the local cluster (bootstrap, scale 3->5, member replacement next to a learner joined by hand, the operator's memory next to 10,000 unrelated objects, a 3-member upgrade, a 3-member rollout of a changed etcd option, a 512 MiB backup to S3, a node lost with a member, writes with etcd's authentication on, each next to a floor).
	$(S3_TEST_ENV_BENCH) KUBECTL=$(KUBECTL) NODE_CTL='$(E2E_NODE_CTL)' go test -run '^$$' -bench . -benchtime=1x -timeout 40m ./test/bench

.PHONY: verify
verify: manifests generate fmt docs bundle catalog-validate docs-links ## Fail when generated files (CRDs, bundle) or go.mod are stale, the catalog is invalid, the capability claim is not what the scorecard record earns, a relative link of the docs is broken, or lint finds a problem.
	go run ./hack/capabilities check
	hack/check-etcd-modules.sh
	go mod tidy
	@for d in hack/tools/*/ hack/cluster/*/; do [ -f $$d/go.mod ] && (cd $$d && go mod tidy) || true; done
	@if [ -n "$$(git status --porcelain)" ]; then \
		echo "verify: these files are stale or uncommitted; run 'make manifests generate fmt bundle' and 'go mod tidy' and commit:"; \
		git status --porcelain; git diff --stat; exit 1; fi
	$(MAKE) lint

.PHONY: docs-links
docs-links: ## Check every relative link (file and heading) of README.md and docs/.
	go run ./hack/linkcheck README.md docs

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the manager binary.
	go build -o $(LOCALBIN)/manager .

PLUGIN ?= $(LOCALBIN)/kubectl-etcdpilot
.PHONY: plugin
plugin: ## Build the kubectl plugin, kubectl-etcdpilot, into bin/ (put bin/ on PATH: kubectl etcdpilot help).
	go build -o $(PLUGIN) ./internal/plugin/cmd/kubectl-etcdpilot

.PHONY: run
run: manifests generate fmt vet ## Run the manager on this machine against the current kubeconfig.
	go run . --metrics-bind-address=0

# The daemon-less image build mirrors Dockerfile: a static /manager on an empty base, run as
# UID 65532. Etcd operand images mirror gcr.io/etcd-development/etcd: etcd, etcdctl and
# etcdutl in /usr/local/bin.
IMAGE_WORK := $(LOCALBIN)/image-work
.PHONY: image
image: $(CRANE) ## Build the operator image with no daemon and push it as LOCAL_IMG.
	@rm -rf $(IMAGE_WORK)/operator && mkdir -p $(IMAGE_WORK)/operator/etc $(IMAGE_WORK)/operator/tmp
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags '-s -w' -o $(IMAGE_WORK)/operator/manager .
	@printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > $(IMAGE_WORK)/operator/etc/passwd
	@printf 'root:x:0:\nnonroot:x:65532:\n' > $(IMAGE_WORK)/operator/etc/group
	@chmod 1777 $(IMAGE_WORK)/operator/tmp
	CRANE=$(CRANE) hack/build-image.sh -t $(LOCAL_IMG) -e /manager -u 65532:65532 -w / $(IMAGE_WORK)/operator

.PHONY: etcd-images
etcd-images: $(CRANE) $(foreach v,$(ETCD_VERSIONS),$(call ETCD_BIN,$(v))/etcd) ## Build an etcd operand image per supported version and push them.
	@for v in $(ETCD_VERSIONS); do \
		root=$(IMAGE_WORK)/etcd-$$v; rm -rf $$root; mkdir -p $$root/usr/local/bin $$root/var/etcd $$root/var/lib/etcd; \
		cp $(LOCALBIN)/etcd-$$v/etcd $(LOCALBIN)/etcd-$$v/etcdctl $(LOCALBIN)/etcd-$$v/etcdutl $$root/usr/local/bin/; \
		CRANE=$(CRANE) hack/build-image.sh -t $(LOCAL_ETCD_IMAGE_REPOSITORY):$$v -c /usr/local/bin/etcd -w /var/etcd \
			-E PATH=/usr/local/bin:/usr/bin:/bin $$root; \
	done

.PHONY: images
images: image etcd-images ## Build and push the operator image and every etcd operand image to REGISTRY.

# The kube-apiserver of the local cluster's Kubernetes release, as its public image name
# (registry.k8s.io is served from the local registry): the e2e runs it as a pod on an
# EtcdTenant, with the manifest of docs/kube-apiserver.md. A static binary on an empty base.
KUBE_APISERVER_IMAGE := registry.k8s.io/kube-apiserver:$(K8S_VERSION)
.PHONY: kube-apiserver-image
kube-apiserver-image: $(CRANE) $(K8S_BIN)/kube-apiserver ## Build the kube-apiserver image the e2e runs on tenants and push it to REGISTRY.
	@rm -rf $(IMAGE_WORK)/kube-apiserver && mkdir -p $(IMAGE_WORK)/kube-apiserver/usr/local/bin $(IMAGE_WORK)/kube-apiserver/tmp
	@cp $(K8S_BIN)/kube-apiserver $(IMAGE_WORK)/kube-apiserver/usr/local/bin/
	@chmod 1777 $(IMAGE_WORK)/kube-apiserver/tmp
	CRANE=$(CRANE) hack/build-image.sh -t $(call local-ref,$(KUBE_APISERVER_IMAGE)) -e /usr/local/bin/kube-apiserver -u 65532:65532 -w / \
		-E PATH=/usr/local/bin:/usr/bin:/bin $(IMAGE_WORK)/kube-apiserver

# The capability scorecard tests (scorecard/): a static binary on an empty base, run as UID
# 1001 (scorecard's restricted pod security); scorecard runs it as the test's entrypoint.
.PHONY: scorecard-image
scorecard-image: $(CRANE) ## Build the capability scorecard tests' image and push it (as SCORECARD_IMG's path) to REGISTRY.
	@rm -rf $(IMAGE_WORK)/scorecard && mkdir -p $(IMAGE_WORK)/scorecard/usr/local/bin $(IMAGE_WORK)/scorecard/etc $(IMAGE_WORK)/scorecard/tmp
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags '-s -w' -o $(IMAGE_WORK)/scorecard/usr/local/bin/etcdpilot-scorecard-tests ./scorecard
	@printf 'root:x:0:0:root:/root:/sbin/nologin\ndefault:x:1001:0:default:/tmp:/sbin/nologin\n' > $(IMAGE_WORK)/scorecard/etc/passwd
	@printf 'root:x:0:\n' > $(IMAGE_WORK)/scorecard/etc/group
	@chmod 1777 $(IMAGE_WORK)/scorecard/tmp
	CRANE=$(CRANE) hack/build-image.sh -t $(call local-ref,$(SCORECARD_IMG)) -e /usr/local/bin/etcdpilot-scorecard-tests \
		-u 1001 -w /tmp -E HOME=/tmp -E PATH=/usr/local/bin:/usr/bin:/bin $(IMAGE_WORK)/scorecard

##@ Deployment

# The local deploy is a generated (git-ignored) kustomize overlay over config/default that
# points the operator at LOCAL_IMG, by digest when the registry knows it (a rebuilt image
# keeps its tag, its digest changes, so the operator restarts on the new one), and at
# LOCAL_ETCD_IMAGE_REPOSITORY.
DEPLOY_OVERLAY := $(CURDIR)/_output/deploy
# DEPLOY_TEST_FAILPOINTS=true turns on the operator's crash-test hooks
# (controllers/failpoint.go); the e2e suite deploys with it. Never for real clusters.
DEPLOY_TEST_FAILPOINTS ?= false
# DEPLOY_CA_ROTATION_MIN_PHASE, when set, shortens the phases of a CA rotation
# (--ca-rotation-min-phase); the e2e suite's client re-reads the client Secret every second.
DEPLOY_CA_ROTATION_MIN_PHASE ?=
# DEPLOY_PPROF_BIND_ADDRESS, when set, serves Go's profiling endpoints on the operator pod
# (--pprof-bind-address, plain HTTP): the e2e suite reads the operator's goroutines through
# the API server's pod proxy when a spec fails. Never for real clusters.
DEPLOY_PPROF_BIND_ADDRESS ?=
.PHONY: deploy-overlay
deploy-overlay: $(CRANE)
	@rm -rf $(DEPLOY_OVERLAY) && mkdir -p $(DEPLOY_OVERLAY)
	@digest=$$($(CRANE) digest --insecure $(LOCAL_IMG) 2>/dev/null || true); \
	if [ -n "$$digest" ]; then ref="  digest: $$digest"; else ref="  newTag: $(LOCAL_IMG_TAG)"; fi; \
	printf '%s\n' \
		'apiVersion: kustomize.config.k8s.io/v1beta1' 'kind: Kustomization' \
		'resources:' '- ../../config/default' \
		'images:' '- name: $(IMAGE_TAG_BASE)' '  newName: $(LOCAL_IMG_NAME)' "$$ref" \
		'patches:' '- target: {kind: Deployment, name: etcdpilot-controller-manager}' \
		'  patch: |-' \
		'    - op: replace' '      path: /spec/template/spec/containers/0/env/0/value' '      value: $(LOCAL_ETCD_IMAGE_REPOSITORY)' \
		$(if $(filter true,$(DEPLOY_TEST_FAILPOINTS)),'    - op: add' '      path: /spec/template/spec/containers/0/env/-' \
			'      value:' '        name: ETCDPILOT_TEST_FAILPOINTS' '        value: "true"') \
		$(if $(DEPLOY_CA_ROTATION_MIN_PHASE),'    - op: add' '      path: /spec/template/spec/containers/0/env/-' \
			'      value:' '        name: CA_ROTATION_MIN_PHASE' '        value: "$(DEPLOY_CA_ROTATION_MIN_PHASE)"') \
		$(if $(DEPLOY_PPROF_BIND_ADDRESS),'    - op: add' '      path: /spec/template/spec/containers/0/args/-' \
			'      value: --pprof-bind-address=$(DEPLOY_PPROF_BIND_ADDRESS)') \
		> $(DEPLOY_OVERLAY)/kustomization.yaml

.PHONY: install
install: manifests $(KUSTOMIZE) $(KUBECTL) ## Install the CRDs into the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) $(KUBECTL) ## Remove the CRDs from the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) $(KUBECTL) deploy-overlay ## Deploy the operator (LOCAL_IMG) and wait until it is available; with the Prometheus Operator's CRDs, its ServiceMonitor and alert rules too (config/prometheus).
	$(KUSTOMIZE) build $(DEPLOY_OVERLAY) | $(KUBECTL) apply --server-side --force-conflicts -f -
	@$(MAKE) --no-print-directory deploy-monitoring
	$(KUBECTL) -n etcdpilot-system rollout status deployment/etcdpilot-controller-manager --timeout=180s

.PHONY: deploy-monitoring
deploy-monitoring: $(KUSTOMIZE) $(KUBECTL) ## Apply config/prometheus (the operator's ServiceMonitor and alert rules, namespace etcdpilot-system) when the Prometheus Operator's CRDs are installed.
	@if $(KUBECTL) get crd servicemonitors.monitoring.coreos.com prometheusrules.monitoring.coreos.com >/dev/null 2>&1; then \
		$(KUSTOMIZE) build config/prometheus | $(KUBECTL) apply --server-side --force-conflicts -f -; \
	else echo "deploy-monitoring: the Prometheus Operator's CRDs are not installed: config/prometheus (the operator's ServiceMonitor and alert rules) is left out"; fi

# The custom resources go first, each waited for, while the operator still runs: their
# finalizers need it. Deleted with the operator, a resource that still had its finalizer
# would keep its CRD and namespace from ever going, and this target would wait for good.
API_RESOURCES := etcdtenants.etcd.etcdpilot.io,etcdbackupschedules.etcd.etcdpilot.io,etcdbackups.etcd.etcdpilot.io,etcdclusters.etcd.etcdpilot.io
.PHONY: undeploy
undeploy: $(KUSTOMIZE) $(KUBECTL) deploy-overlay ## Remove every EtcdTenant, EtcdCluster, EtcdBackup and schedule (waiting for the operator's cleanup), then the operator and its CRDs.
	@if $(KUBECTL) get crd etcdclusters.etcd.etcdpilot.io >/dev/null 2>&1; then \
		$(KUBECTL) delete $(API_RESOURCES) --all --all-namespaces --ignore-not-found --wait=true --timeout=5m || { \
			echo "undeploy: the custom resources above were not all gone after 5 minutes; the operator removes their finalizers: is it running? (kubectl -n etcdpilot-system get pods)" >&2; exit 1; }; \
	fi
	$(KUSTOMIZE) build $(DEPLOY_OVERLAY) | $(KUBECTL) delete --ignore-not-found --wait=true -f -

##@ Local cluster

# How the node-loss spec stops and starts a node of the local cluster; none on another cluster.
ifneq ($(USE_EXISTING_CLUSTER),true)
E2E_NODE_CTL = $(CLUSTER_ENV) $(CURDIR)/hack/local-cluster.sh
endif
CLUSTER_ENV = CLUSTER_DIR=$(CLUSTER_DIR) NODES=$(NODES) KUBECONFIG_OUT=$(LOCAL_KUBECONFIG) K8S_BIN=$(K8S_BIN) \
	ETCD_BIN=$(CONTROL_PLANE_ETCD_BIN) COREDNS=$(COREDNS) LOCAL_PATH_PROVISIONER=$(LOCAL_PATH_PROVISIONER) KUBE_ROUTER=$(KUBE_ROUTER) \
	CRANE=$(CRANE) BUILD_IMAGE=$(CURDIR)/hack/build-image.sh

.PHONY: cluster-up
cluster-up: $(addprefix $(K8S_BIN)/,$(K8S_BINARIES)) $(CONTROL_PLANE_ETCD_BIN)/etcd $(COREDNS) $(LOCAL_PATH_PROVISIONER) $(KUBE_ROUTER) $(CRANE) ## Start (or restart clean) the local cluster of NODES nodes (default 3).
	$(CLUSTER_ENV) hack/local-cluster.sh up

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and remove everything it made.
	$(CLUSTER_ENV) hack/local-cluster.sh down

.PHONY: cluster-smoke
cluster-smoke: ## Prove the running local cluster works: registry pull, logs/exec, Service DNS, PVC data.
	$(CLUSTER_ENV) hack/cluster/smoke-test.sh

.PHONY: cluster-status
cluster-status: ## Show the health of the local cluster (exit 1 when unhealthy).
	$(CLUSTER_ENV) hack/local-cluster.sh status

# Ensure a healthy cluster: keep a running one, start one otherwise.
.PHONY: cluster-ensure
cluster-ensure:
ifneq ($(USE_EXISTING_CLUSTER),true)
	@$(CLUSTER_ENV) hack/local-cluster.sh status >/dev/null 2>&1 || $(MAKE) cluster-up
endif

##@ S3 server for the backup tests

# versitygw (posix backend on a PVC) in namespace S3_NAMESPACE of the cluster, from
# hack/s3/s3.yaml; the namespace, Secret (keys accessKeyID, secretAccessKey) and Service
# names are fixed there. s3-up makes S3_BUCKETS; the e2e specs and benchmarks get the
# in-cluster endpoint, the Secret and their bucket through E2E_S3_* and BENCH_S3_*.
S3_IMAGE ?= $(REGISTRY)/versity/versitygw:$(VERSITYGW_VERSION)
S3_NAMESPACE := etcdpilot-s3
S3_CREDENTIALS_SECRET := s3-credentials
S3_ENDPOINT := http://s3.$(S3_NAMESPACE).svc:7070
S3_E2E_BUCKET := etcdpilot-e2e
S3_BENCH_BUCKET := etcdpilot-bench
S3_BUCKETS := $(S3_E2E_BUCKET) $(S3_BENCH_BUCKET)
S3_ENV = KUBECTL=$(KUBECTL) CRANE=$(CRANE) VERSITYGW=$(VERSITYGW) BUILD_IMAGE=$(CURDIR)/hack/build-image.sh \
	S3_IMAGE=$(S3_IMAGE) S3_WORK=$(IMAGE_WORK)/versitygw S3_BUCKETS="$(S3_BUCKETS)"
S3_TEST_ENV_E2E = E2E_S3_ENDPOINT=$(S3_ENDPOINT) E2E_S3_NAMESPACE=$(S3_NAMESPACE) \
	E2E_S3_CREDENTIALS_SECRET=$(S3_CREDENTIALS_SECRET) E2E_S3_BUCKET=$(S3_E2E_BUCKET)
S3_TEST_ENV_BENCH = BENCH_S3_ENDPOINT=$(S3_ENDPOINT) BENCH_S3_NAMESPACE=$(S3_NAMESPACE) \
	BENCH_S3_CREDENTIALS_SECRET=$(S3_CREDENTIALS_SECRET) BENCH_S3_BUCKET=$(S3_BENCH_BUCKET)

.PHONY: s3-up
s3-up: $(VERSITYGW) $(CRANE) $(KUBECTL) cluster-ensure ## Start (or repair) the S3 server of the backup tests in the cluster and make its buckets; fast when already up.
	@$(S3_ENV) hack/s3/s3.sh up

.PHONY: s3-down
s3-down: $(KUBECTL) ## Remove the S3 server, its data and its namespace from the cluster.
	@$(S3_ENV) hack/s3/s3.sh down

##@ Monitoring: the Prometheus Operator and Prometheus

# Both built from pinned modules (hack/tools/prometheus-operator, hack/tools/prometheus) and
# run in namespace etcdpilot-monitoring (hack/monitoring/README.md). The Prometheus scrapes
# every PodMonitor and ServiceMonitor and evaluates every PrometheusRule of the cluster.
MONITORING_NAMESPACE := etcdpilot-monitoring
PROMETHEUS_IMAGE ?= $(REGISTRY)/prometheus/prometheus:$(PROMETHEUS_RELEASE)
PROMETHEUS_OPERATOR_IMAGE ?= $(REGISTRY)/prometheus-operator/prometheus-operator:$(PROMETHEUS_OPERATOR_VERSION)
PROMETHEUS_CONFIG_RELOADER_IMAGE ?= $(REGISTRY)/prometheus-operator/prometheus-config-reloader:$(PROMETHEUS_OPERATOR_VERSION)
MONITORING_ENV = KUBECTL=$(KUBECTL) CRANE=$(CRANE) BUILD_IMAGE=$(CURDIR)/hack/build-image.sh \
	PROMETHEUS=$(PROMETHEUS) PROMETHEUS_OPERATOR=$(PROMETHEUS_OPERATOR) PROMETHEUS_CONFIG_RELOADER=$(PROMETHEUS_CONFIG_RELOADER) \
	PROMETHEUS_IMAGE=$(PROMETHEUS_IMAGE) PROMETHEUS_OPERATOR_IMAGE=$(PROMETHEUS_OPERATOR_IMAGE) \
	PROMETHEUS_CONFIG_RELOADER_IMAGE=$(PROMETHEUS_CONFIG_RELOADER_IMAGE) \
	PROMETHEUS_RELEASE=$(PROMETHEUS_RELEASE) PROMETHEUS_OPERATOR_CRDS=$(PROMETHEUS_OPERATOR_CRDS) \
	MONITORING_WORK=$(IMAGE_WORK)/monitoring
MONITORING_BINARIES = $(PROMETHEUS) $(PROMETHEUS_OPERATOR) $(PROMETHEUS_CONFIG_RELOADER)

.PHONY: monitoring-images
monitoring-images: $(MONITORING_BINARIES) $(CRANE) cluster-ensure ## Build the Prometheus Operator, config reloader and Prometheus images and push those that changed.
	@$(MONITORING_ENV) hack/monitoring/monitoring.sh images

.PHONY: monitoring-up
monitoring-up: $(MONITORING_BINARIES) $(CRANE) $(KUBECTL) $(PROMETHEUS_OPERATOR_CRDS)/monitoring.coreos.com_podmonitors.yaml cluster-ensure ## Install (or repair) the Prometheus Operator and a Prometheus watching every namespace; returns when Prometheus is ready.
	@$(MONITORING_ENV) hack/monitoring/monitoring.sh up

.PHONY: monitoring-down
monitoring-down: $(KUBECTL) ## Remove Prometheus, the Prometheus Operator, their namespace and RBAC, and the monitoring.coreos.com CRDs.
	@$(MONITORING_ENV) hack/monitoring/monitoring.sh down

##@ Tests on a cluster

# Four processes: the parallel specs mostly wait on pods, and four keep both cores busier
# without slowing them (docs/development.md has the figures).
E2E_PROCS ?= 4
# Each e2e run also writes a Ginkgo JSON report here (deploy.json, olm.json); after a failed
# run, go run ./hack/e2efailures $(E2E_REPORTS)/*.json prints what failed, briefly (.ci/run
# prints it last).
E2E_REPORTS := $(CURDIR)/_output/e2e
GINKGO_E2E = $(GINKGO) -v $(if $(CI),--no-color) --procs=$(E2E_PROCS) --timeout=40m --output-dir=$(E2E_REPORTS)
# The previous release (the newest in catalog/releases.yaml), which the OLM specs install and
# upgrade to this VERSION through the catalog's graph.
PREVIOUS_VERSION = $(shell hack/catalog.sh releases | tail -n 1 | cut -d' ' -f1)

.PHONY: test-e2e
test-e2e: test-e2e-deploy test-e2e-olm test-e2e-scorecard ## Run the whole e2e suite on the local cluster: with make deploy, through OLM, then the scorecard tests of the claimed levels.

.PHONY: test-e2e-deploy
test-e2e-deploy: $(GINKGO) $(KUSTOMIZE) $(KUBECTL) $(NFDELAY) cluster-ensure images kube-apiserver-image s3-up monitoring-up plugin ## Run the e2e specs on the operator `make deploy` installs.
	rm -f $(E2E_REPORTS)/deploy.json
	KUBE_APISERVER_IMAGE=$(KUBE_APISERVER_IMAGE) KUBECTL=$(KUBECTL) PLUGIN=$(PLUGIN) NFDELAY=$(NFDELAY) LOCAL_IMG=$(LOCAL_IMG) NODE_CTL='$(E2E_NODE_CTL)' $(S3_TEST_ENV_E2E) $(GINKGO_E2E) --json-report=deploy.json --label-filter='!olm' ./test/e2e

# The chaos suite (test/e2e/chaos_test.go): random faults and spec changes under a recorded
# workload, checked for linearizability with porcupine. Its short profile is one of the
# specs of test-e2e-deploy; this target runs it alone, in the long profile (about 30 minutes on the local cluster)
# unless CHAOS_PROFILE=short. CHAOS_SEED=<n> replays a run's plan of faults.
CHAOS_PROFILE ?= long
.PHONY: test-chaos
test-chaos: $(GINKGO) $(KUSTOMIZE) $(KUBECTL) cluster-ensure images ## Run the chaos suite alone on the local cluster (CHAOS_PROFILE=long|short, CHAOS_SEED to replay).
	CHAOS_PROFILE=$(CHAOS_PROFILE) CHAOS_SEED=$(CHAOS_SEED) KUBECTL=$(KUBECTL) LOCAL_IMG=$(LOCAL_IMG) \
		$(GINKGO) -v $(if $(CI),--no-color) --procs=1 --timeout=75m --label-filter=chaos ./test/e2e

# A run whose history is not linearizable keeps it in _output/chaos/<profile>-<seed>/.
# chaos-replay checks it again and, when it is still not linearizable, prints for each key
# where the check stopped: the last operations it could order and those it could not.
.PHONY: chaos-replay
chaos-replay: ## Check a kept chaos history again (CHAOS_HISTORY=_output/chaos/<profile>-<seed>/history.json).
	@test -n "$(CHAOS_HISTORY)" || { echo "chaos-replay: set CHAOS_HISTORY to the history.json a chaos run kept" >&2; exit 1; }
	CHAOS_HISTORY=$(abspath $(CHAOS_HISTORY)) go test ./internal/chaos -run '^TestReplay$$' -count=1 -v

# What the OLM and scorecard runs build before they start: OLM and its images, every release's
# operator and bundle image, the scorecard tests' image, operator-sdk. None of it is used by
# test-e2e-deploy or shares a file with it, so CI builds it beside the deploy run at the
# lowest CPU priority, on the cycles the specs leave idle.
.PHONY: e2e-olm-inputs
e2e-olm-inputs: $(OPERATOR_SDK) olm-images release-images scorecard-image ## Build what test-e2e-olm and test-e2e-scorecard build first (CI runs it beside test-e2e-deploy).

# The OLM specs install the operator themselves, from the catalog image (the committed
# catalog/ served by opm) and bundle images, which name public images that the local
# cluster's containerd fetches from the local registry.
.PHONY: test-e2e-olm
test-e2e-olm: $(GINKGO) $(OPERATOR_SDK) olm-up images release-images bundle-image catalog-check catalog-image ## Run the e2e specs that install and upgrade the operator through OLM.
	@test -n "$(PREVIOUS_VERSION)" || { echo "test-e2e-olm: catalog/releases.yaml lists no previous release" >&2; exit 1; }
	rm -f $(E2E_REPORTS)/olm.json
	E2E_INSTALL=olm OPERATOR_SDK=$(OPERATOR_SDK) SSL_CERT_FILE=$(REGISTRY_CA_BUNDLE) \
		E2E_OLM_CATALOG_IMAGE=$(CATALOG_IMG) E2E_OLM_HEAD_CSV=$(BUNDLE_PACKAGE).v$(VERSION) \
		E2E_OLM_PREVIOUS_CSV=$(BUNDLE_PACKAGE).v$(PREVIOUS_VERSION) \
		E2E_OLM_HEAD_BUNDLE=$(REGISTRY_TLS)/$(call image-path,$(BUNDLE_IMG)) \
		E2E_OLM_PREVIOUS_BUNDLE=$(REGISTRY_TLS)/$(call image-path,$(IMAGE_TAG_BASE)-bundle:v$(PREVIOUS_VERSION)) \
		E2E_OLM_INDEX_IMAGE=$(OLM_OPM_INDEX_IMAGE) E2E_OLM_DECOMPRESSION_IMAGE=$(BUSYBOX_IMAGE) \
		$(GINKGO_E2E) --json-report=olm.json --label-filter=olm ./test/e2e

.PHONY: demo
demo: ## Start everything locally: cluster, OLM, images, catalog, the operator installed through OLM, a sample EtcdCluster.
	@hack/demo.sh

##@ OLM bundle and catalog


BUNDLE_PACKAGE := etcdpilot
BUNDLE_CHANNELS ?= stable,fast
BUNDLE_DEFAULT_CHANNEL ?= stable
BUNDLE_CSV := bundle/manifests/$(BUNDLE_PACKAGE).clusterserviceversion.yaml

# The bundle is generated from config/ (the CSV base in config/manifests/bases carries what
# a human writes: description, links, install modes; the API markers carry the descriptors),
# finished by hack/csv (release date, operator image, icon) and validated with the
# operatorframework suite, where any warning fails too.
.PHONY: bundle
bundle: manifests $(KUSTOMIZE) $(OPERATOR_SDK) ## Generate bundle/ and bundle.Dockerfile for VERSION from config/, and validate them.
	@$(OPERATOR_SDK) generate kustomize manifests --apis-dir api --package $(BUNDLE_PACKAGE) -q --interactive=false
	@cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	@cd config/scorecard && $(KUSTOMIZE) edit set image etcdpilot-scorecard-tests=$(SCORECARD_IMG)
	@rm -rf bundle/manifests bundle/metadata bundle/tests
	@$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle -q --overwrite --version $(VERSION) \
		--package $(BUNDLE_PACKAGE) --channels $(BUNDLE_CHANNELS) --default-channel $(BUNDLE_DEFAULT_CHANNEL) 2>&1 | { grep -v 'level=info' || true; }
	@go run ./hack/csv -csv $(BUNDLE_CSV) -created-at $(CREATED_AT) -icon docs/icon.svg
	@$(MAKE) --no-print-directory bundle-validate

.PHONY: bundle-validate
# The validators a community-operators or certification pipeline runs: the operatorframework
# suite (OperatorHub metadata v2, capabilities, categories, deprecated APIs, good practices),
# then the older OperatorHub and community validators those pipelines still run. A warning
# fails too, except the two older validators' notice that they are deprecated.
BUNDLE_VALIDATORS = suite=operatorframework name=operatorhub name=community
BUNDLE_VALIDATOR_NOTICES = validator is deprecated|Community Operator bundle validator is deprecated
bundle-validate: $(OPERATOR_SDK) ## Validate bundle/ with the operatorframework suite and the OperatorHub and community validators; a warning fails too.
	@for v in $(BUNDLE_VALIDATORS); do \
		out=$$($(OPERATOR_SDK) bundle validate ./bundle --select-optional $$v 2>&1) || { echo "$$out"; exit 1; }; \
		if echo "$$out" | grep -E 'level=(warning|error)' | grep -Evq '$(BUNDLE_VALIDATOR_NOTICES)'; then \
			echo "$$out"; echo "bundle-validate ($$v): warnings count as failures" >&2; exit 1; fi; \
		echo "bundle validate $$v: ok"; \
	done

.PHONY: bundle-image
bundle-image: $(CRANE) ## Build the bundle image from bundle/ and push it to REGISTRY (as BUNDLE_IMG's path).
	@CRANE=$(CRANE) hack/bundle-image.sh bundle $(call local-ref,$(BUNDLE_IMG))

# Release and catalog steps (hack/catalog.sh). Images keep their public path in REGISTRY.
CATALOG_ENV = OPM=$(OPM) CRANE=$(CRANE) REGISTRY=$(REGISTRY) PUBLIC_PREFIX=$(dir $(IMAGE_TAG_BASE))

.PHONY: release-images
release-images: $(CRANE) ## Rebuild every release's operator and bundle image from its commit (catalog/releases.yaml) and push them.
	@$(CATALOG_ENV) OPERATOR_IMAGES=true hack/catalog.sh release-images

.PHONY: catalog
catalog: $(OPM) $(CRANE) bundle-image ## Render catalog/ from its template; pushes every release's bundle image first (needs the local registry).
	@$(CATALOG_ENV) hack/catalog.sh release-images
	@$(CATALOG_ENV) hack/catalog.sh render

.PHONY: catalog-check
catalog-check: $(OPM) $(CRANE) bundle-image ## Fail when catalog/ is not what its template renders to (needs the local registry).
	@$(CATALOG_ENV) hack/catalog.sh release-images
	@$(CATALOG_ENV) hack/catalog.sh check

.PHONY: catalog-validate
catalog-validate: $(OPM) ## Validate the file-based catalog in catalog/ with opm.
	@$(OPM) validate catalog && echo "opm validate catalog: ok"

.PHONY: catalog-image
catalog-image: $(CRANE) olm-images ## Build the catalog image (OLM's opm image serving catalog/) and push it as CATALOG_IMG's path.
	@$(CATALOG_ENV) OLM_OPM_IMAGE=$(OLM_OPM_IMAGE) CATALOG_REF=$(call local-ref,$(CATALOG_IMG)) hack/catalog.sh image

# OLM v0.42.0 on the local cluster, built here: olm-tools, olm-images, olm-up, olm-down,
# olm-status (its own help section).
include hack/olm/olm.mk

##@ Scorecard (capability levels proven on the local cluster)

# hack/scorecard.sh runs `operator-sdk scorecard ./bundle` in SCORECARD_NAMESPACE against the
# operator installed through OLM (it installs this release from the catalog when OLM has no
# etcdpilot, and removes it afterwards) and writes _output/scorecard/scorecard.{json,xml}.
# SCORECARD_WAIT_TIME bounds the whole run: the capability tests run one after the other and
# each bounds itself to SCORECARD_TEST_TIMEOUT (scorecard/README.md).
SCORECARD_SELECTOR ?=
SCORECARD_WAIT_TIME ?= 30m
SCORECARD_DEPS = $(OPERATOR_SDK) $(CRANE) olm-up images bundle-image catalog-check catalog-image scorecard-image
SCORECARD_ENV = KUBECTL=$(KUBECTL) OPERATOR_SDK=$(OPERATOR_SDK) CRANE=$(CRANE) \
	SCORECARD_UNTAR_IMAGE=$(SCORECARD_UNTAR_IMAGE) SCORECARD_TESTS_IMAGE=$(SCORECARD_IMG) \
	SCORECARD_TESTS_LOCAL=$(call local-ref,$(SCORECARD_IMG)) HEAD_CSV=$(BUNDLE_PACKAGE).v$(VERSION) \
	SCORECARD_WAIT_TIME=$(SCORECARD_WAIT_TIME)

.PHONY: scorecard
scorecard: $(SCORECARD_DEPS) ## Run every scorecard test (or SCORECARD_SELECTOR's) in the cluster; fails when a built-in test or a claimed level fails.
	@$(SCORECARD_ENV) SCORECARD_SELECTOR='$(SCORECARD_SELECTOR)' hack/scorecard.sh report

.PHONY: test-e2e-scorecard
test-e2e-scorecard: $(SCORECARD_DEPS) ## Run the built-in scorecard tests and those of the levels the CSV claims, so a claimed level cannot regress.
	@$(SCORECARD_ENV) SCORECARD_SELECTOR="$$(go run ./hack/capabilities selector)" hack/scorecard.sh report

# Level 4 proves monitoring against a real Prometheus, so the run that records the levels
# brings up make monitoring-up's first (test-e2e-scorecard runs after CI's own).
.PHONY: capabilities
capabilities: $(SCORECARD_DEPS) monitoring-up ## Run every scorecard test (with the Prometheus of monitoring-up), set the CSV's capabilities to the highest level earned, regenerate bundle and catalog.
	@$(SCORECARD_ENV) hack/scorecard.sh record
	@$(MAKE) --no-print-directory bundle catalog

##@ Tools

.PHONY: tools
tools: $(CONTROLLER_GEN) $(KUSTOMIZE) $(GOLANGCI_LINT) $(CRANE) $(CRD_REF_DOCS) $(GINKGO) $(NFDELAY) $(OPERATOR_SDK) $(OPM) $(COREDNS) $(LOCAL_PATH_PROVISIONER) $(KUBE_ROUTER) $(VERSITYGW) $(PROMTOOL) $(PROMETHEUS) $(PROMETHEUS_OPERATOR) $(PROMETHEUS_CONFIG_RELOADER) $(addprefix $(K8S_BIN)/,$(K8S_BINARIES)) $(foreach v,$(ETCD_VERSIONS),$(call ETCD_BIN,$(v))/etcd) ## Build every pinned tool into bin/.

# demo-tools: every tool `make demo` uses, so that hack/demo.sh builds them first, two at a
# time (make -j2): one build alone leaves a core idle while it downloads modules and while
# it links. With
# USE_EXISTING_CLUSTER=true the local cluster's and OLM's tools are left out.
DEMO_TOOLS = $(KUSTOMIZE) $(KUBECTL) $(CRANE) $(MONITORING_BINARIES) \
	$(PROMETHEUS_OPERATOR_CRDS)/monitoring.coreos.com_podmonitors.yaml \
	$(foreach v,$(ETCD_VERSIONS),$(call ETCD_BIN,$(v))/etcd)
ifneq ($(USE_EXISTING_CLUSTER),true)
DEMO_TOOLS += $(addprefix $(K8S_BIN)/,$(K8S_BINARIES)) $(CONTROL_PLANE_ETCD_BIN)/etcd $(COREDNS) \
	$(LOCAL_PATH_PROVISIONER) $(KUBE_ROUTER) $(OLM_IMAGE_INPUTS)
endif
.PHONY: demo-tools
demo-tools: $(DEMO_TOOLS) ## Build the tools make demo uses (hack/demo.sh runs it with -j2).

# go-install-tool installs package $(2) at version $(3) as $(1) (a versioned file name).
define go-install-tool
@set -e; tmp=$$(mktemp -d); \
echo "building $(notdir $(1)) from $(2)@$(3)"; \
GOBIN=$$tmp go install $(2)@$(3); \
mkdir -p $(LOCALBIN); mv $$tmp/* $(1); rmdir $$tmp
endef

# go-build-module builds packages $(3) from the pinned module in hack/tools/$(2) into
# directory $(1) (or file $(1) when one package), with extra go build flags $(4).
define go-build-module
@set -e; echo "building $(notdir $(patsubst %/,%,$(1))) from hack/tools/$(2)"; mkdir -p $(dir $(1)); \
cd hack/tools/$(2) && CGO_ENABLED=0 go build -trimpath $(4) -o $(1) $(3)
endef

$(CONTROLLER_GEN):
	$(call go-install-tool,$@,sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

$(KUSTOMIZE):
	$(call go-install-tool,$@,sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

$(CRD_REF_DOCS):
	$(call go-install-tool,$@,github.com/elastic/crd-ref-docs,$(CRD_REF_DOCS_VERSION))

$(GOLANGCI_LINT):
	$(call go-install-tool,$@,github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

$(CRANE):
	$(call go-install-tool,$@,github.com/google/go-containerregistry/cmd/crane,$(CRANE_VERSION))

$(GINKGO):
	$(call go-install-tool,$@,github.com/onsi/ginkgo/v2/ginkgo,$(GINKGO_VERSION))

OSDK_VERSION_PKG := github.com/operator-framework/operator-sdk/internal/version
$(OPERATOR_SDK):
	$(call go-build-module,$@,operator-sdk,github.com/operator-framework/operator-sdk/cmd/operator-sdk,-tags containers_image_openpgp -ldflags "-s -w -X $(OSDK_VERSION_PKG).Version=$(OPERATOR_SDK_VERSION) -X $(OSDK_VERSION_PKG).ImageVersion=$(OPERATOR_SDK_VERSION) -X $(OSDK_VERSION_PKG).GitVersion=$(OPERATOR_SDK_VERSION)")

comma := ,
OPM_VERSION_PKG := github.com/operator-framework/operator-registry/cmd/opm/version
# OLM_TAGS: opm and OLM's binaries (hack/olm/olm.mk) share a module and tags, so one
# compile of each package they share serves both.
OLM_TAGS := json1$(comma)containers_image_openpgp
$(OPM):
	$(call go-build-module,$@,olm,github.com/operator-framework/operator-registry/cmd/opm,-tags $(OLM_TAGS) -ldflags "-s -w -X $(OPM_VERSION_PKG).gitCommit=$(OPM_VERSION) -X $(OPM_VERSION_PKG).opmVersion=$(OPM_VERSION)")

# CoreDNS with only the plugins the local cluster's Corefile uses (hack/tools/coredns/main.go).
$(COREDNS): hack/tools/coredns/main.go hack/tools/coredns/go.mod hack/tools/coredns/go.sum
	$(call go-build-module,$@,coredns,.,-ldflags "-s -w")

$(LOCAL_PATH_PROVISIONER):
	$(call go-build-module,$@,local-path-provisioner,github.com/rancher/local-path-provisioner,-ldflags "-s -w -X main.VERSION=$(LOCAL_PATH_PROVISIONER_VERSION)")

# kube-router's firewall alone (hack/tools/kube-router/main.go: no routing, proxy or cloud SDK).
$(KUBE_ROUTER): hack/tools/kube-router/main.go hack/tools/kube-router/go.mod hack/tools/kube-router/go.sum
	$(call go-build-module,$@,kube-router,.,-ldflags "-s -w")

$(VERSITYGW):
	$(call go-build-module,$@,versitygw,github.com/versity/versitygw/cmd/versitygw,-ldflags "-s -w -X main.Version=$(VERSITYGW_VERSION)")

# Prometheus and promtool keep one service discovery, Kubernetes (the only one the Prometheus
# Operator's configurations use), with Prometheus's own build tags: the others bring the SDKs
# of every cloud, and leaving them out cuts what a fresh machine compiles for Prometheus from
# 135 MB of Go source to 56 MB. Both binaries use the same tags, so they share every package.
PROM_TAGS := remove_all_sd,enable_kubernetes_sd
$(PROMTOOL):
	$(call go-build-module,$@,prometheus,github.com/prometheus/prometheus/cmd/promtool,-tags $(PROM_TAGS) -ldflags "-s -w")

$(NFDELAY): $(wildcard hack/tools/nfdelay/*.go) hack/tools/nfdelay/go.mod hack/tools/nfdelay/go.sum
	$(call go-build-module,$@,nfdelay,.,-ldflags "-s -w")

$(PROMCHECK): $(wildcard hack/tools/prometheus/promcheck/*.go) hack/tools/prometheus/go.mod hack/tools/prometheus/go.sum
	$(call go-build-module,$@,prometheus,./promcheck,-ldflags "-s -w")

# Prometheus and the Prometheus Operator of make monitoring-up. The version variables of
# prometheus/common's version package are what /api/v1/status/buildinfo and the operator's
# --version report. Prometheus is built without the builtinassets tag: its web UI's assets are
# not part of the module, the HTTP API is complete without them.
PROM_VERSION_PKG := github.com/prometheus/common/version
$(PROMETHEUS):
	$(call go-build-module,$@,prometheus,github.com/prometheus/prometheus/cmd/prometheus,-tags $(PROM_TAGS) -ldflags "-s -w -X $(PROM_VERSION_PKG).Version=$(PROMETHEUS_RELEASE:v%=%) -X $(PROM_VERSION_PKG).Branch=HEAD")

$(PROMETHEUS_OPERATOR):
	$(call go-build-module,$@,prometheus-operator,github.com/prometheus-operator/prometheus-operator/cmd/operator,-ldflags "-s -w -X $(PROM_VERSION_PKG).Version=$(PROMETHEUS_OPERATOR_VERSION:v%=%) -X $(PROM_VERSION_PKG).Branch=HEAD")

$(PROMETHEUS_CONFIG_RELOADER):
	$(call go-build-module,$@,prometheus-operator,github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader,-ldflags "-s -w -X $(PROM_VERSION_PKG).Version=$(PROMETHEUS_OPERATOR_VERSION:v%=%) -X $(PROM_VERSION_PKG).Branch=HEAD")

K8S_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(K8S_VERSION:v%=%))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION:v%=%))) \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(K8S_VERSION)
# One go build for all six binaries: they share most packages, so this is far faster than six.
$(addprefix $(K8S_BIN)/,$(K8S_BINARIES)) &:
	$(call go-build-module,$(K8S_BIN)/,kubernetes,$(addprefix k8s.io/kubernetes/cmd/,$(K8S_BINARIES)),-ldflags "$(K8S_LDFLAGS)")

# One rule per etcd release: server (named etcd), etcdctl, etcdutl, from its module
# (hack/tools/etcd-vX.Y.Z when it exists, else hack/tools/etcd-vX.Y).
etcd-module = $(if $(wildcard hack/tools/etcd-$(1)/go.mod),etcd-$(1),etcd-$(basename $(1)))
define etcd-rule
$(call ETCD_BIN,$(1))/etcd:
	$$(call go-build-module,$(call ETCD_BIN,$(1))/etcd,$(call etcd-module,$(1)),go.etcd.io/etcd/server/v3,-ldflags "-s -w")
	$$(call go-build-module,$(call ETCD_BIN,$(1))/etcdctl,$(call etcd-module,$(1)),go.etcd.io/etcd/etcdctl/v3,-ldflags "-s -w")
	$$(call go-build-module,$(call ETCD_BIN,$(1))/etcdutl,$(call etcd-module,$(1)),go.etcd.io/etcd/etcdutl/v3,-ldflags "-s -w")
endef
$(foreach v,$(ETCD_VERSIONS),$(eval $(call etcd-rule,$(v))))

# print-VAR prints a make variable (scripts use it to share the Makefile's settings).
print-%:
	@echo '$($*)'
