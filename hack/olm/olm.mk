# OLM v0 on the local cluster, built here (included by the Makefile).
#
# Binaries come from pinned modules (hack/tools/olm for OLM itself, opm and grpc_health_probe;
# scorecard-test from hack/tools/operator-sdk) and Debian's
# busybox-static; images are pushed to $(REGISTRY); the install manifests are generated
# from the OLM module's own deploy/ by hack/olm/manifests.sh. No image is pulled from
# outside this machine: every image OLM and operator-sdk would fetch from the internet has
# a local stand-in below.

##@ OLM on the local cluster (hack/olm/olm.mk)

OLM_VERSION := $(call modver,olm,github.com/operator-framework/operator-lifecycle-manager)
OLM_BIN ?= $(LOCALBIN)/olm-$(OLM_VERSION)
OLM_BINARIES := olm catalog package-server copy-content cpb
# Our own stand-in for grpc_health_probe (the upstream module is not on the proxy), built
# in OLM's module for its gRPC.
GRPC_HEALTH_PROBE ?= $(LOCALBIN)/grpc_health_probe-$(OPM_VERSION)
SCORECARD_TEST ?= $(LOCALBIN)/scorecard-test-$(OPERATOR_SDK_VERSION)
# Debian 12's busybox-static, the userland of every image below (apt-get download, no
# system install). The image tag is the Debian version without epoch, '+' -> '-'.
BUSYBOX_DEB_VERSION ?= 1:1.35.0-4+deb12u1+b1
BUSYBOX_VERSION := $(subst +,-,$(lastword $(subst :, ,$(BUSYBOX_DEB_VERSION))))
BUSYBOX ?= $(LOCALBIN)/busybox-$(BUSYBOX_VERSION)/busybox

# Images (all in REGISTRY). Reference these from the bundle, catalog, scorecard and e2e.
BUSYBOX_IMAGE ?= $(REGISTRY)/busybox:$(BUSYBOX_VERSION)
OLM_IMAGE ?= $(REGISTRY)/olm:$(OLM_VERSION)
OLM_OPM_IMAGE ?= $(REGISTRY)/opm:$(OPM_VERSION)
SCORECARD_UNTAR_IMAGE ?= $(REGISTRY)/scorecard-untar:$(BUSYBOX_VERSION)
# The built-in tests keep their public path, so the bundle's scorecard config (which names
# quay.io/operator-framework/scorecard-test) runs it through the quay.io mirror.
SCORECARD_TEST_IMAGE ?= $(REGISTRY)/operator-framework/scorecard-test:$(OPERATOR_SDK_VERSION)
# operator-sdk run bundle-upgrade's fixed init image registry.access.redhat.com/ubi9/ubi:9.7;
# the local cluster's containerd fetches that registry from REGISTRY (hack/olm.sh up).
UBI9_SHIM_IMAGE ?= $(REGISTRY)/ubi9/ubi:9.7

# The local cluster's registry also answers over TLS (hack/cluster/registry-tls), for host
# tools that ignore --use-http (operator-sdk run bundle's index image, scorecard with a
# bundle image): name images REGISTRY_TLS/... and run them with SSL_CERT_FILE=REGISTRY_CA_BUNDLE.
REGISTRY_TLS ?= localhost:5443
REGISTRY_CA_BUNDLE ?= $(CLUSTER_DIR)/registry-ca-bundle.pem
OLM_OPM_INDEX_IMAGE ?= $(REGISTRY_TLS)/opm:$(OPM_VERSION)

OLM_OUT := $(CURDIR)/_output/olm
OLM_ENV = KUBECTL=$(KUBECTL) CRANE=$(CRANE) CLUSTER_DIR=$(CLUSTER_DIR) REGISTRY=$(REGISTRY) \
	OLM_IMAGE=$(OLM_IMAGE) OLM_OPM_IMAGE=$(OLM_OPM_IMAGE) OLM_OUT=$(OLM_OUT) \
	OLM_MODULE_DIR=$$(cd hack/tools/olm && go list -m -f '{{.Dir}}' github.com/operator-framework/operator-lifecycle-manager)

# What hack/olm/images.sh builds the images from; olm-tools adds operator-sdk, which the
# OLM e2e specs, the scorecard and `make bundle` use (each names it), but no image needs:
# so that `make demo` does not build it.
OLM_IMAGE_INPUTS = $(addprefix $(OLM_BIN)/,$(OLM_BINARIES)) $(GRPC_HEALTH_PROBE) $(SCORECARD_TEST) $(BUSYBOX) $(OPM) $(CRANE)

.PHONY: olm-tools
olm-tools: $(OLM_IMAGE_INPUTS) $(OPERATOR_SDK) ## Build OLM, opm, grpc_health_probe, scorecard-test, operator-sdk and fetch busybox into bin/.

.PHONY: olm-images
olm-images: $(OLM_IMAGE_INPUTS) ## Build and push the OLM, opm, busybox, scorecard and ubi9-stand-in images (skipped when up to date).
	@CRANE=$(CRANE) BUILD_IMAGE=$(CURDIR)/hack/build-image.sh BUSYBOX=$(BUSYBOX) OLM_BIN=$(OLM_BIN) \
		OPM=$(OPM) GRPC_HEALTH_PROBE=$(GRPC_HEALTH_PROBE) SCORECARD_TEST=$(SCORECARD_TEST) \
		WORK=$(LOCALBIN)/image-work/olm BUSYBOX_IMAGE=$(BUSYBOX_IMAGE) OLM_IMAGE=$(OLM_IMAGE) \
		OLM_OPM_IMAGE=$(OLM_OPM_IMAGE) SCORECARD_UNTAR_IMAGE=$(SCORECARD_UNTAR_IMAGE) \
		SCORECARD_TEST_IMAGE=$(SCORECARD_TEST_IMAGE) UBI9_SHIM_IMAGE=$(UBI9_SHIM_IMAGE) \
		hack/olm/images.sh

.PHONY: olm-up
olm-up: $(KUBECTL) cluster-ensure olm-images ## Install OLM (with packageserver) on the local cluster and wait until healthy.
	@$(OLM_ENV) hack/olm.sh up

.PHONY: olm-down
olm-down: $(KUBECTL) ## Remove OLM and everything it made from the cluster.
	@$(OLM_ENV) hack/olm.sh down

.PHONY: olm-status
olm-status: $(KUBECTL) ## Show OLM's health (exit 1 when unhealthy).
	@$(OLM_ENV) hack/olm.sh status

# One go build for the five binaries (they share most packages).
OLM_VERSION_PKG := github.com/operator-framework/operator-lifecycle-manager/pkg/version
$(addprefix $(OLM_BIN)/,$(OLM_BINARIES)) &:
	$(call go-build-module,$(OLM_BIN)/,olm,$(addprefix github.com/operator-framework/operator-lifecycle-manager/,cmd/olm cmd/catalog cmd/package-server cmd/copy-content util/cpb),-tags $(OLM_TAGS) -ldflags "-s -w -X $(OLM_VERSION_PKG).OLMVersion=$(OLM_VERSION)")

$(GRPC_HEALTH_PROBE): hack/tools/olm/grpchealthprobe/main.go
	$(call go-build-module,$@,olm,./grpchealthprobe,-tags $(OLM_TAGS) -ldflags "-s -w")

$(SCORECARD_TEST):
	$(call go-build-module,$@,operator-sdk,github.com/operator-framework/operator-sdk/images/scorecard-test,-ldflags "-s -w")

# apt-get download needs the package lists: refreshed once if the pinned version is missing.
$(BUSYBOX):
	@set -e; echo "fetching busybox-static=$(BUSYBOX_DEB_VERSION) (apt-get download, no install)"; \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; cd $$tmp; \
	apt-get download -q=2 busybox-static=$(BUSYBOX_DEB_VERSION) 2>/dev/null || \
		{ apt-get update -qq >/dev/null && apt-get download -q=2 busybox-static=$(BUSYBOX_DEB_VERSION); }; \
	dpkg-deb -x busybox-static_*.deb root; mkdir -p $(dir $@); mv root/bin/busybox $@
