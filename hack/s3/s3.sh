#!/usr/bin/env bash
# s3.sh: a real S3 server (versitygw, posix backend on a PVC) in the local cluster for the
# backup e2e tests and benchmarks.
#
#   hack/s3/s3.sh up|down
#
# up    build the versitygw image (the static binary on an empty base, UID 65532) and push
#       it unless the registry already holds this very binary, apply hack/s3/s3.yaml with
#       that image by digest, wait for the rollout, then create the buckets that are missing.
#       Idempotent, and it repairs: a Deployment scaled to 0 is scaled back to 1.
# down  delete the namespace (Deployment, Service, Secret, PVC) and wait until its volume is
#       gone too.
#
# Configured through the environment (the Makefile's s3-up/s3-down set all of these):
#   KUBECTL, CRANE, VERSITYGW   paths of those binaries
#   BUILD_IMAGE                 hack/build-image.sh
#   S3_IMAGE                    tag to push, e.g. localhost:5000/versity/versitygw:v1.8.0
#   S3_WORK                     scratch directory for the image's root filesystem
#   S3_BUCKETS                  bucket names, space-separated
#
# The buckets are made through versitygw's admin API (the same binary, run on this
# machine) at the Service's ClusterIP, which the node's kube-proxy routes for host processes
# too. When that address does not answer (a cluster other than the local one), a
# `kubectl port-forward` to the Service on 127.0.0.1 is used instead.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly NS=etcdpilot-s3 SECRET=s3-credentials PORT=7070
KUBECTL=${KUBECTL:-kubectl}
CRANE=${CRANE:-crane}
VERSITYGW=${VERSITYGW:-}
BUILD_IMAGE=${BUILD_IMAGE:-$here/../build-image.sh}
S3_IMAGE=${S3_IMAGE:-}
S3_WORK=${S3_WORK:-${TMPDIR:-/tmp}/etcdpilot-s3-image}
S3_BUCKETS=${S3_BUCKETS:-}
# The label that records which binary an image holds, so an unchanged one is not pushed again.
readonly SUM_LABEL=dev.etcdpilot.versitygw-sha256

log() { echo "[s3] $*"; }
k() { "$KUBECTL" "$@"; }

# push_image: print the pushed image as name@digest.
push_image() {
  local sum config
  sum=$(sha256sum "$VERSITYGW" | cut -d' ' -f1)
  config=$("$CRANE" config --insecure "$S3_IMAGE" 2>/dev/null || true)
  if [[ $config != *"\"$SUM_LABEL\":\"$sum\""* ]]; then
    local r=$S3_WORK
    rm -rf "$r" && mkdir -p "$r/usr/local/bin" "$r/etc" "$r/tmp" "$r/data"
    cp "$VERSITYGW" "$r/usr/local/bin/versitygw"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$r/etc/passwd"
    printf 'root:x:0:\nnonroot:x:65532:\n' >"$r/etc/group"
    chmod 1777 "$r/tmp"
    CRANE=$CRANE "$BUILD_IMAGE" -t "$S3_IMAGE" -e /usr/local/bin/versitygw -u 65532:65532 -w / \
      -E PATH=/usr/local/bin -l "$SUM_LABEL=$sum" "$r" >&2
  fi
  echo "${S3_IMAGE%:*}@$("$CRANE" digest --insecure "$S3_IMAGE")"
}

# admin ENDPOINT ARGS...: run a versitygw admin command with the root keys of the Secret.
admin() {
  local endpoint=$1
  shift
  ADMIN_ACCESS_KEY_ID=$access ADMIN_SECRET_ACCESS_KEY=$secret \
    "$VERSITYGW" admin --endpoint-url "$endpoint" "$@"
}

# make_buckets ENDPOINT: create every bucket of S3_BUCKETS that is not there yet.
make_buckets() {
  local endpoint=$1 have b
  have=$(admin "$endpoint" list-buckets)
  for b in $S3_BUCKETS; do
    if awk -v b="$b" '$1 == b { found = 1 } END { exit !found }' <<<"$have"; then
      continue
    fi
    admin "$endpoint" create-bucket --owner "$access" --bucket "$b"
    log "bucket $b created"
  done
}

# answers URL: true when the S3 server's health endpoint answers at URL within 1 s.
answers() { curl -fsS -m 1 -o /dev/null "$1/health" 2>/dev/null; }

up() {
  local image ip endpoint i pf_pid pf_log access secret
  [[ -x $VERSITYGW && -n $S3_IMAGE ]] || { echo "s3.sh up: set VERSITYGW (the binary) and S3_IMAGE" >&2; exit 2; }
  image=$(push_image)
  sed "s|@IMAGE@|$image|" "$here/s3.yaml" |
    k apply --server-side --force-conflicts --field-manager=etcdpilot-s3 -f - >/dev/null
  k -n "$NS" rollout status deployment/s3 --timeout=180s >/dev/null
  log "versitygw ready ($image)"
  [[ -n $S3_BUCKETS ]] || return 0

  access=$(k -n "$NS" get secret "$SECRET" -o jsonpath='{.data.accessKeyID}' | base64 -d)
  secret=$(k -n "$NS" get secret "$SECRET" -o jsonpath='{.data.secretAccessKey}' | base64 -d)
  ip=$(k -n "$NS" get service s3 -o jsonpath='{.spec.clusterIP}')
  endpoint=http://$ip:$PORT
  # kube-proxy may program the new endpoint a moment after the pod is ready.
  for ((i = 0; i < 10; i++)); do
    answers "$endpoint" && break
    sleep 0.5
  done
  if ! answers "$endpoint"; then
    log "ClusterIP $ip does not answer from this machine; using kubectl port-forward"
    pf_log=$(mktemp)
    "$KUBECTL" -n "$NS" port-forward --address 127.0.0.1 service/s3 ":$PORT" >"$pf_log" 2>&1 &
    pf_pid=$!
    trap 'kill '"$pf_pid"' 2>/dev/null || true; rm -f '"$pf_log" EXIT
    for ((i = 0; i < 50; i++)); do
      endpoint=$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) .*/http:\/\/127.0.0.1:\1/p' "$pf_log")
      [[ -n $endpoint ]] && answers "$endpoint" && break
      sleep 0.2
    done
    answers "$endpoint" || { cat "$pf_log" >&2; log "cannot reach the S3 server" >&2; exit 1; }
  fi
  make_buckets "$endpoint"
  log "buckets: $S3_BUCKETS; in-cluster endpoint http://s3.$NS.svc:$PORT, credentials Secret $NS/$SECRET"
}

down() {
  local i
  k delete namespace "$NS" --ignore-not-found --wait=true --timeout=180s >/dev/null
  # The PVC's volume (reclaim policy Delete) is removed by the provisioner after the
  # namespace is gone: wait for that too, so nothing of it is left on the node.
  for ((i = 0; i < 120; i++)); do
    [[ -z $(k get pv -o jsonpath="{range .items[?(@.spec.claimRef.namespace==\"$NS\")]}{.metadata.name}{end}") ]] && break
    sleep 0.5
  done
  log "removed"
}

case ${1:-} in
up) up ;;
down) down ;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
