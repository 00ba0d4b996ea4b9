# The OLM bundle image: bundle/manifests and bundle/metadata, labelled for OLM.
# `make bundle` (issue 4) regenerates this file and bundle/ with operator-sdk.
FROM scratch

LABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1
LABEL operators.operatorframework.io.bundle.manifests.v1=manifests/
LABEL operators.operatorframework.io.bundle.metadata.v1=metadata/
LABEL operators.operatorframework.io.bundle.package.v1=etcdpilot
LABEL operators.operatorframework.io.bundle.channels.v1=stable,fast
LABEL operators.operatorframework.io.bundle.channel.default.v1=stable

COPY bundle/manifests /manifests/
COPY bundle/metadata /metadata/
COPY bundle/tests/scorecard /tests/scorecard/
