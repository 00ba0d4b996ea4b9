#!/usr/bin/env bash
# manifests.sh: write the OLM v0 install manifests for the local cluster, generated from the
# pinned module's own deploy/ files (never hand-copied, never committed).
#
#   hack/olm/manifests.sh OUTDIR
#
# writes OUTDIR/crds.yaml (apply with --server-side) and OUTDIR/olm.yaml. Environment:
#   KUBECTL          kubectl (its built-in kustomize applies the patches below)
#   OLM_MODULE_DIR   the extracted module github.com/operator-framework/operator-lifecycle-manager
#   OLM_IMAGE        image of olm-operator, catalog-operator, packageserver and the util image
#   OLM_OPM_IMAGE    opm image: registry pods of catalogs, `extract` of bundle unpack Jobs
#   PART_OF_LABEL    "key: value" label put on every object (what `hack/olm.sh down` deletes by)
#
# The fixes the stock v0.42.0 files need (each was a failure on this cluster; the details are
# in hack/olm/README.md, "Changes to the stock manifests"):
#   - CRDs from deploy/chart/crds: the quickstart crds.yaml lacks OLMConfig, without which
#     olm-operator never processes a CSV. The CSV CRD is too big for client-side apply.
#   - OLMConfig "cluster", as the chart creates it.
#   - catalog-operator args: the quickstart passes single-dash flags (`-namespace`), which the
#     cobra-based v0.42 binary rejects; also the local opm and util images (the defaults are
#     quay.io/...:latest) and --set-workload-user-id=true (the chart's default), so registry
#     and unpack pods run as UID 1001 and pass restricted pod security.
#   - every quay.io image -> the images built here; the operatorhubio CatalogSource (an
#     internet catalog) is dropped. The packageserver CSV stays: the cluster has the
#     aggregation layer, so its APIService (PackageManifests) works.
# Each patch first tests that it edits the container it means to, and the result is checked
# to name no image outside the local registry: a changed upstream file fails loudly here.
set -euo pipefail

out=${1:?usage: $0 OUTDIR}
: "${KUBECTL:?}" "${OLM_MODULE_DIR:?}" "${OLM_IMAGE:?}" "${OLM_OPM_IMAGE:?}" "${PART_OF_LABEL:?}"
deploy=$OLM_MODULE_DIR/deploy
[[ -f $deploy/upstream/quickstart/olm.yaml ]] || { echo "manifests.sh: no OLM deploy/ in $OLM_MODULE_DIR" >&2; exit 1; }

work=$out/kustomize
rm -rf "$work"
mkdir -p "$work"

# Every object carries this label; `hack/olm.sh down` deletes by it.
labels="labels:
- pairs: {$PART_OF_LABEL}
  includeSelectors: false"

# CRDs: the chart's eight files.
mkdir -p "$work/crds"
crds=()
for f in "$deploy"/chart/crds/*.yaml; do
  cp "$f" "$work/crds/"
  crds+=("- ${f##*/}")
done
printf '%s\n' 'apiVersion: kustomize.config.k8s.io/v1beta1' 'kind: Kustomization' 'resources:' \
  "${crds[@]}" "$labels" >"$work/crds/kustomization.yaml"
"$KUBECTL" kustomize "$work/crds" >"$out/crds.yaml.tmp"
mv "$out/crds.yaml.tmp" "$out/crds.yaml"

cp "$deploy/upstream/quickstart/olm.yaml" "$work/quickstart-olm.yaml"
cat >"$work/olmconfig.yaml" <<'EOF'
apiVersion: operators.coreos.com/v1
kind: OLMConfig
metadata:
  name: cluster
EOF

container=/spec/template/spec/containers/0
csv_container=/spec/install/spec/deployments/0/spec/template/spec/containers/0
cat >"$work/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- quickstart-olm.yaml
- olmconfig.yaml
$labels
patches:
- patch: |-
    \$patch: delete
    apiVersion: operators.coreos.com/v1alpha1
    kind: CatalogSource
    metadata:
      name: operatorhubio-catalog
      namespace: olm
- target: {kind: Deployment, name: olm-operator}
  patch: |-
    - {op: test, path: $container/name, value: olm-operator}
    - {op: replace, path: $container/image, value: "$OLM_IMAGE"}
- target: {kind: Deployment, name: catalog-operator}
  patch: |-
    - {op: test, path: $container/name, value: catalog-operator}
    - {op: replace, path: $container/image, value: "$OLM_IMAGE"}
    - op: replace
      path: $container/args
      value:
      - --namespace=olm
      # Only legacy ConfigMap-backed catalogs use this image; none is built here.
      - --configmapServerImage=$OLM_OPM_IMAGE
      - --opmImage=$OLM_OPM_IMAGE
      - --util-image=$OLM_IMAGE
      - --set-workload-user-id=true
- target: {kind: ClusterServiceVersion, name: packageserver}
  patch: |-
    - {op: test, path: $csv_container/name, value: packageserver}
    - {op: replace, path: $csv_container/image, value: "$OLM_IMAGE"}
EOF

"$KUBECTL" kustomize "$work" >"$out/olm.yaml.tmp"
mv "$out/olm.yaml.tmp" "$out/olm.yaml"

# Every image reference must be one of ours, and the internet catalog must be gone.
local_registry=${OLM_IMAGE%%/*}
bad=$(grep -nE '(image|Image)[:=]' "$out/olm.yaml" | grep -v "$local_registry/" || true)
[[ -z $bad ]] || { printf 'manifests.sh: image references outside %s:\n%s\n' "$local_registry" "$bad" >&2; exit 1; }
if grep -qE 'quay\.io|operatorhubio' "$out/olm.yaml"; then
  echo "manifests.sh: $out/olm.yaml still names quay.io or operatorhubio" >&2
  exit 1
fi
