#!/usr/bin/env bash
# monitoring.sh: the Prometheus Operator and one Prometheus on the local cluster, built from
# pinned Go modules (hack/tools/prometheus-operator, hack/tools/prometheus).
#
#   hack/monitoring/monitoring.sh images|up|down
#
# images  build the three images (operator, config reloader, Prometheus: each a static binary
#         on an empty base, UID 65534) and push each unless the registry already holds that
#         very binary (a label records its sha256).
# up      images, then server-side apply the CRDs and wait until they are established, apply
#         operator.yaml and wait for the operator's rollout, apply prometheus.yaml and wait
#         until Prometheus answers /-/ready (through the API server's Service proxy, so no
#         port of this machine is used). Idempotent; every wait is bounded.
# down    delete the Prometheus object (so that the operator removes what it made), the
#         namespace, the cluster-wide RBAC, then the CRDs (and with them every PodMonitor,
#         ServiceMonitor and PrometheusRule of the cluster).
#
# Configured through the environment (the Makefile's monitoring-* targets set all of these):
#   KUBECTL, CRANE                        paths of those binaries
#   BUILD_IMAGE                           hack/build-image.sh
#   PROMETHEUS, PROMETHEUS_OPERATOR,
#   PROMETHEUS_CONFIG_RELOADER            the binaries to put in the images
#   PROMETHEUS_IMAGE, PROMETHEUS_OPERATOR_IMAGE,
#   PROMETHEUS_CONFIG_RELOADER_IMAGE      tags to push, e.g. localhost:5000/prometheus/prometheus:v3.16.0
#   PROMETHEUS_RELEASE                    the Prometheus release (v3.x.y), for the Prometheus object
#   PROMETHEUS_OPERATOR_CRDS              directory of the operator's CRD YAMLs
#   MONITORING_WORK                       scratch directory for the images' root filesystems
#   MONITORING_TIMEOUT                    seconds each wait may take (default 180)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly NS=etcdpilot-monitoring
KUBECTL=${KUBECTL:-kubectl}
CRANE=${CRANE:-crane}
BUILD_IMAGE=${BUILD_IMAGE:-$here/../build-image.sh}
MONITORING_WORK=${MONITORING_WORK:-${TMPDIR:-/tmp}/etcdpilot-monitoring-images}
TIMEOUT=${MONITORING_TIMEOUT:-180}
# The label that records which binary an image holds, so an unchanged one is not pushed again.
readonly SUM_LABEL=dev.etcdpilot.binary-sha256

log() { echo "[monitoring] $*"; }
k() { "$KUBECTL" "$@"; }
need() {
  local v
  for v in "$@"; do
    [[ -n ${!v:-} ]] || { echo "monitoring.sh: set $v" >&2; exit 2; }
  done
}

# push_image BINARY REF NAME EXTRA_DIR: build REF holding BINARY as /bin/NAME (its
# entrypoint) unless the registry holds that binary already; print REF as name@digest.
# EXTRA_DIR, when set, is a directory made writable (1777) in the image and its workdir.
push_image() {
  local bin=$1 ref=$2 name=$3 extra=${4:-} sum config r
  sum=$(sha256sum "$bin" | cut -d' ' -f1)
  config=$("$CRANE" config --insecure "$ref" 2>/dev/null || true)
  if [[ $config != *"\"$SUM_LABEL\":\"$sum\""* ]]; then
    r=$MONITORING_WORK/$name
    rm -rf "$r" && mkdir -p "$r/bin" "$r/etc" "$r/tmp"
    cp "$bin" "$r/bin/$name"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$r/etc/passwd"
    printf 'root:x:0:\nnobody:x:65534:\n' >"$r/etc/group"
    chmod 1777 "$r/tmp"
    if [[ -n $extra ]]; then
      mkdir -p "$r$extra" && chmod 1777 "$r$extra"
    fi
    CRANE=$CRANE "$BUILD_IMAGE" -t "$ref" -e "/bin/$name" -u 65534:65534 -w "${extra:-/}" \
      -E PATH=/bin -l "$SUM_LABEL=$sum" "$r" >&2
  fi
  echo "${ref%:*}@$("$CRANE" digest --insecure "$ref")"
}

operator_image= reloader_image= prometheus_image=
images() {
  need PROMETHEUS PROMETHEUS_OPERATOR PROMETHEUS_CONFIG_RELOADER \
    PROMETHEUS_IMAGE PROMETHEUS_OPERATOR_IMAGE PROMETHEUS_CONFIG_RELOADER_IMAGE
  operator_image=$(push_image "$PROMETHEUS_OPERATOR" "$PROMETHEUS_OPERATOR_IMAGE" operator)
  reloader_image=$(push_image "$PROMETHEUS_CONFIG_RELOADER" "$PROMETHEUS_CONFIG_RELOADER_IMAGE" prometheus-config-reloader)
  prometheus_image=$(push_image "$PROMETHEUS" "$PROMETHEUS_IMAGE" prometheus /prometheus)
  log "images: $operator_image $reloader_image $prometheus_image"
}

# ready: true when Prometheus answers /-/ready through the API server's Service proxy.
ready() {
  k get --raw "/api/v1/namespaces/$NS/services/prometheus:web/proxy/-/ready" >/dev/null 2>&1
}

up() {
  local t0=$SECONDS deadline crds
  need PROMETHEUS_RELEASE PROMETHEUS_OPERATOR_CRDS
  [[ -f $PROMETHEUS_OPERATOR_CRDS/monitoring.coreos.com_prometheuses.yaml ]] ||
    { echo "monitoring.sh: no CRDs in $PROMETHEUS_OPERATOR_CRDS" >&2; exit 2; }
  images
  # Server-side: the CRDs are too large for the last-applied annotation of a client-side apply.
  k apply --server-side --force-conflicts --field-manager=etcdpilot-monitoring \
    -f "$PROMETHEUS_OPERATOR_CRDS" >/dev/null
  mapfile -t crds < <(sed -n 's/^  name: \(.*\.monitoring\.coreos\.com\)$/crd\/\1/p' "$PROMETHEUS_OPERATOR_CRDS"/*.yaml)
  k wait --for=condition=Established --timeout="${TIMEOUT}s" "${crds[@]}" >/dev/null
  log "CRDs established"
  sed -e "s|@OPERATOR_IMAGE@|$operator_image|" -e "s|@RELOADER_IMAGE@|$reloader_image|" "$here/operator.yaml" |
    k apply --server-side --force-conflicts --field-manager=etcdpilot-monitoring -f - >/dev/null
  k -n "$NS" rollout status deployment/prometheus-operator --timeout="${TIMEOUT}s" >/dev/null
  log "operator ready"
  sed -e "s|@PROMETHEUS_IMAGE@|$prometheus_image|" -e "s|@PROMETHEUS_VERSION@|$PROMETHEUS_RELEASE|" "$here/prometheus.yaml" |
    k apply --server-side --force-conflicts --field-manager=etcdpilot-monitoring -f - >/dev/null
  deadline=$((SECONDS + TIMEOUT))
  until ready; do
    if ((SECONDS >= deadline)); then
      log "Prometheus did not become ready within ${TIMEOUT}s" >&2
      k -n "$NS" get prometheus,statefulset,pods -o wide >&2 || true
      k -n "$NS" logs deployment/prometheus-operator --tail=30 >&2 || true
      exit 1
    fi
    sleep 1
  done
  log "Prometheus ready in $((SECONDS - t0))s: $KUBECTL -n $NS port-forward svc/prometheus 9090, then http://127.0.0.1:9090"
}

down() {
  local crds
  k -n "$NS" delete prometheus --all --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1 || true
  k delete namespace "$NS" --ignore-not-found --wait=true --timeout=180s >/dev/null
  k delete clusterrolebinding --ignore-not-found etcdpilot-monitoring-prometheus-operator \
    etcdpilot-monitoring-prometheus etcdpilot-monitoring-prometheus-metrics-reader >/dev/null
  k delete clusterrole --ignore-not-found etcdpilot-monitoring-prometheus-operator \
    etcdpilot-monitoring-prometheus >/dev/null
  crds=$(k get crd -o name | grep '\.monitoring\.coreos\.com$' || true)
  if [[ -n $crds ]]; then
    # shellcheck disable=SC2086 # one name per word
    k delete --wait=true --timeout=120s $crds >/dev/null
  fi
  log "removed"
}

case ${1:-} in
images) images ;;
up) up ;;
down) down ;;
*) echo "usage: $0 images|up|down" >&2; exit 2 ;;
esac
