#!/usr/bin/env bash
# olm.sh: OLM v0 (olm-operator, catalog-operator and the packageserver behind
# `kubectl get packagemanifests`) on the local cluster, from images built here.
#
#   hack/olm.sh up|down|status
#
# up      install or update OLM and wait until it is healthy. Quick on an existing install
#         (the apply changes nothing and every wait passes at once).
# down    remove everything OLM and `up` made: the operators, the packageserver and its
#         APIService, every OLM custom resource and the CRDs, the namespaces olm and
#         operators, the cluster-scoped RBAC OLM creates for OperatorGroups and CSVs (the
#         olm.og.* ClusterRoles). Returns when all is gone; safe
#         to run any number of times.
# status  print each part's health; exit 1 unless all are healthy.
#
# Configured through the environment (hack/olm/olm.mk sets all of these):
#   KUBECTL, KUBECONFIG    the cluster (the local cluster's admin kubeconfig by default)
#   CRANE                  to resolve image digests in the registry
#   OLM_IMAGE, OLM_OPM_IMAGE   images the manifests name (pinned by digest when the registry knows them)
#   OLM_MODULE_DIR         the extracted OLM module (its deploy/ is the manifests' source)
#   OLM_OUT                where the generated manifests go (git-ignored)
#   CLUSTER_DIR            the local cluster's state directory
#   REGISTRY               the local registry (localhost:5000)
#
# The images operator-sdk pulls from registry.access.redhat.com come from the local registry
# through the local cluster's containerd mirrors (hack/local-cluster.sh).
#
# Network safety: before any kubectl call the API server's address is checked to be
# assigned on this machine (a stopped local cluster's 198.19.0.1 is not, and a connection
# to it would leave the machine).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${KUBECTL:?}" "${CRANE:?}" "${OLM_IMAGE:?}" "${OLM_OPM_IMAGE:?}" "${OLM_OUT:?}"
CLUSTER_DIR=${CLUSTER_DIR:-/var/lib/etcdpilot-cluster}
REGISTRY=${REGISTRY:-localhost:5000}

readonly PART_OF=app.kubernetes.io/part-of=etcdpilot-local-olm
readonly NS=olm
readonly APISERVICE=v1.packages.operators.coreos.com
# Everything OLM creates itself carries this label: the olm.og.* and packagemanifests-v1-*
# ClusterRoles, RBAC for CSVs (e.g. the packageserver's RoleBinding in kube-system), the
# packageserver's APIService, Service and certificate Secret.
readonly OLM_MANAGED=olm.managed=true
readonly OLM_MANAGED_CLUSTER_KINDS=clusterroles,clusterrolebindings,apiservices,mutatingwebhookconfigurations,validatingwebhookconfigurations
readonly OLM_MANAGED_NAMESPACED_KINDS=roles,rolebindings,serviceaccounts,services,secrets

STEP_PREFIX=olm
# shellcheck source=hack/lib/steps.sh
source "$ROOT/hack/lib/steps.sh"
on_exit() { failed_step $? || true; }
trap on_exit EXIT

kubectl() { "$KUBECTL" "$@"; }

# wait_for TIMEOUT DESCRIPTION COMMAND...: poll COMMAND until it succeeds.
wait_for() {
  local timeout=$1 what=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      printf 'timed out after %ss waiting for %s\n' "$timeout" "$what" >&2
      return 1
    fi
    sleep 0.5
  done
}

# check_apiserver_local: the kubeconfig's API server is on an address of this machine (or a
# name), and answers.
check_apiserver_local() {
  local server host
  server=$(kubectl config view --minify -o 'jsonpath={.clusters[0].cluster.server}' 2>/dev/null) ||
    die "no usable kubeconfig (KUBECONFIG=${KUBECONFIG:-})"
  host=${server#*://}
  host=${host%%/*}
  host=${host%:*}
  host=${host#[}
  host=${host%]}
  if [[ $host =~ ^[0-9.]+$ || $host == *:* ]]; then
    [[ $(ip -o addr show) == *" inet $host/"* || $(ip -o addr show) == *" inet6 $host/"* ]] ||
      die "the API server $server is not on this machine's addresses: is the cluster down? (make cluster-up)"
  fi
  kubectl get --raw /readyz >/dev/null 2>&1 || die "the API server $server does not answer"
}

# ---------------------------------------------------------------------------------------
# up

# digest_ref REF: REF pinned to its digest in the registry (REF:tag@sha256:...), so a
# rebuilt image rolls the pods that run it; REF unchanged when the registry lacks it.
digest_ref() {
  local d
  if d=$("$CRANE" digest --insecure "$1" 2>/dev/null); then echo "$1@$d"; else echo "$1"; fi
}

generate_manifests() {
  [[ -n ${OLM_MODULE_DIR:-} ]] || die "OLM_MODULE_DIR is not set (the extracted OLM module)"
  mkdir -p "$OLM_OUT"
  KUBECTL=$KUBECTL OLM_MODULE_DIR=$OLM_MODULE_DIR OLM_IMAGE=$(digest_ref "$OLM_IMAGE") \
    OLM_OPM_IMAGE=$(digest_ref "$OLM_OPM_IMAGE") PART_OF_LABEL="${PART_OF%%=*}: ${PART_OF#*=}" \
    "$ROOT/hack/olm/manifests.sh" "$OLM_OUT"
}

apply() { kubectl apply --server-side --force-conflicts --field-manager=etcdpilot-olm "$@" >/dev/null; }

install_crds() {
  apply -f "$OLM_OUT/crds.yaml"
  kubectl wait --for=condition=Established --timeout=60s -f "$OLM_OUT/crds.yaml" >/dev/null
}

install_operators() {
  apply -f "$OLM_OUT/olm.yaml"
  kubectl -n "$NS" rollout status deployment/olm-operator --timeout=180s >/dev/null
  kubectl -n "$NS" rollout status deployment/catalog-operator --timeout=180s >/dev/null
  wait_for 60 "olm-operator available" deployment_ready olm-operator
  wait_for 60 "catalog-operator available" deployment_ready catalog-operator
}

# deployment_ready NAME: at least one replica, all of them updated and available (rollout
# status alone calls a deployment scaled to zero complete).
deployment_ready() {
  local want updated available
  read -r want updated available < <(kubectl -n "$NS" get deployment "$1" \
    -o 'jsonpath={.spec.replicas} {.status.updatedReplicas} {.status.availableReplicas}{"\n"}') || return 1
  ((want >= 1 && ${updated:-0} == want && ${available:-0} == want))
}

csv_succeeded() { [[ $(kubectl -n "$NS" get csv packageserver -o 'jsonpath={.status.phase}') == Succeeded ]]; }
apiservice_available() {
  [[ $(kubectl get apiservice "$APISERVICE" -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}') == True ]]
}

wait_packageserver() {
  wait_for 240 "CSV $NS/packageserver Succeeded" csv_succeeded
  wait_for 120 "APIService $APISERVICE Available" apiservice_available
  wait_for 60 "kubectl get packagemanifests" kubectl get packagemanifests -A
}

do_up() {
  local t0=$SECONDS
  check_apiserver_local
  step "manifests (from the module's deploy/)" generate_manifests
  step "CRDs" install_crds
  step "olm-operator, catalog-operator" install_operators
  step "packageserver CSV, APIService $APISERVICE" wait_packageserver
  log "OLM up in $((SECONDS - t0))s"
}

# ---------------------------------------------------------------------------------------
# down

# The operators first, so that nothing re-creates what is being deleted.
stop_operators() {
  kubectl -n "$NS" delete deployment olm-operator catalog-operator --ignore-not-found --cascade=foreground --wait=true >/dev/null
  # Without its packageserver the APIService fails discovery, which stalls namespace
  # deletion cluster-wide: it goes before anything else.
  kubectl delete apiservice "$APISERVICE" --ignore-not-found >/dev/null
}

olm_crds() { kubectl get crd -l "$PART_OF" -o name; }

# Deleting a CRD deletes its objects; with the operators gone no one would remove a
# finalizer OLM put on one, so any left are dropped.
delete_crds() {
  local crds crd res items ns name
  crds=$(olm_crds)
  [[ -n $crds ]] || return 0
  # shellcheck disable=SC2086 # one name per word
  kubectl delete $crds --wait=false >/dev/null
  local deadline=$((SECONDS + 180))
  while [[ -n $(olm_crds) ]]; do
    for crd in $(olm_crds); do
      res=${crd#*/}
      # (The type may vanish between the two calls: a failed get is not an error here.)
      items=$(kubectl get "$res" -A -o 'jsonpath={range .items[?(@.metadata.finalizers)]}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}' 2>/dev/null) || continue
      while read -r ns name; do
        [[ -n $name ]] || continue
        kubectl ${ns:+-n "$ns"} patch "$res" "$name" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
      done <<<"$items"
    done
    ((SECONDS < deadline)) || die "CRDs still present after 180s: $(olm_crds | xargs)"
    sleep 0.5
  done
}

# Namespaces olm and operators and the cluster-scoped RBAC from the manifests (by label),
# then what OLM made itself (the olm.og.* ClusterRoles would be left over: olm-operator
# goes first, and they have no owner to be collected with).
delete_rest() {
  kubectl delete namespaces,clusterroles,clusterrolebindings -l "$PART_OF" --ignore-not-found --wait=true >/dev/null
  kubectl delete "$OLM_MANAGED_CLUSTER_KINDS" -l "$OLM_MANAGED" --ignore-not-found --wait=true >/dev/null
  kubectl delete "$OLM_MANAGED_NAMESPACED_KINDS" -A -l "$OLM_MANAGED" --ignore-not-found --wait=true >/dev/null
}


# leftovers: anything of OLM still in the cluster (empty when clean).
leftovers() {
  {
    kubectl get namespaces,clusterroles,clusterrolebindings,crd -l "$PART_OF" -o name
    kubectl get "$OLM_MANAGED_CLUSTER_KINDS" -l "$OLM_MANAGED" -o name
    kubectl get "$OLM_MANAGED_NAMESPACED_KINDS" -A -l "$OLM_MANAGED" -o name
    kubectl get apiservice "$APISERVICE" -o name --ignore-not-found
  } 2>&1
}

do_down() {
  local t0=$SECONDS
  check_apiserver_local
  step "operators stopped, APIService removed" stop_operators
  step "OLM custom resources and CRDs" delete_crds
  step "namespaces olm, operators and OLM's RBAC" delete_rest
  local left
  left=$(leftovers)
  [[ -z $left ]] || die "still present: $(xargs <<<"$left")"
  log "OLM down in $((SECONDS - t0))s"
}

# ---------------------------------------------------------------------------------------
# status

do_status() {
  local bad=0
  check() { # NAME COMMAND...
    local name=$1 state=ok
    shift
    "$@" >/dev/null 2>&1 || { state="UNHEALTHY"; bad=1; }
    printf '  %-46s %s\n' "$name" "$state"
  }
  check_apiserver_local
  check "CRDs (8)" test "$(olm_crds | wc -l)" -eq 8
  check "deployment olm/olm-operator" deployment_ready olm-operator
  check "deployment olm/catalog-operator" deployment_ready catalog-operator
  check "CSV olm/packageserver Succeeded" csv_succeeded
  check "APIService $APISERVICE" apiservice_available
  return $bad
}

# ---------------------------------------------------------------------------------------

ACTION=${1:-}
case $ACTION in
up) do_up ;;
down) do_down ;;
status) do_status ;;
*)
  echo "usage: $0 up|down|status" >&2
  exit 2
  ;;
esac
