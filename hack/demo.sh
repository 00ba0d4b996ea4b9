#!/usr/bin/env bash
# demo.sh (`make demo`): bring up the local cluster and OLM, build and push the images, the
# bundle and the catalog, install the operator the way a user does (CatalogSource,
# Subscription with manual approval, approve the InstallPlan) and create the sample
# EtcdCluster, with the Prometheus Operator and a Prometheus watching every namespace
# (make monitoring-up). One line per step with its duration, then what was made and where to look.
#
# With USE_EXISTING_CLUSTER=true it uses the cluster of the current kubeconfig, pushes the
# images to REGISTRY (which that cluster must be able to pull from) and deploys the operator
# with `make deploy` (that cluster need not run OLM).
set -euo pipefail
cd "$(dirname "$0")/.."

existing=${USE_EXISTING_CLUSTER:-false}
make_q() { make --no-print-directory "$@"; }
kubectl_bin=$(make_q -s print-KUBECTL)
KUBECTL=$kubectl_bin
# shellcheck source=hack/lib/olm-install.sh
source hack/lib/olm-install.sh
log_dir=$(mktemp -d -t etcdpilot-demo.XXXXXX)
demo_start=$(date +%s%3N)

# since T0: seconds (one decimal) elapsed since T0, given in milliseconds since the epoch.
since() { local ms=$(( $(date +%s%3N) - $1 )); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }

# step NAME CMD...: run CMD with its output in $log_dir/NAME.log; print one line with the
# duration, or the log's tail on failure.
step() {
  local name=$1; shift
  local t0
  t0=$(date +%s%3N)
  printf '[demo] %-34s' "$name"
  if "$@" >"$log_dir/$name.log" 2>&1; then
    printf ' done in %6ss\n' "$(since "$t0")"
  else
    printf ' FAILED (log: %s)\n' "$log_dir/$name.log"
    tail -n 30 "$log_dir/$name.log" >&2
    exit 1
  fi
}

# Every tool first, two builds at a time: the steps below then only start and install.
step tools make_q -j2 demo-tools USE_EXISTING_CLUSTER="$existing"
if [[ $existing == true ]]; then
  echo "[demo] using the cluster of the current kubeconfig (${KUBECONFIG:-~/.kube/config}); images go to ${REGISTRY:-localhost:5000}"
  step cluster-check "$kubectl_bin" version
else
  step cluster-up make_q cluster-up
  KUBECONFIG=$(make_q -s print-LOCAL_KUBECONFIG)
  export KUBECONFIG
fi
step images make_q images
step monitoring-up make_q monitoring-up
if [[ $existing == true ]]; then
  step deploy-operator make_q deploy
  operator_ns=etcdpilot-system
else
  operator_ns=etcdpilot-system
  step olm-up make_q olm-up
  step bundle-and-catalog-images make_q bundle-image catalog-image
  step catalog-source "$kubectl_bin" apply -f config/olm/catalogsource.yaml
  step wait-catalog-ready olm_wait_catalog_ready
  step subscribe "$kubectl_bin" apply -f config/olm/subscription.yaml
  step approve-installplan olm_approve_installplan
  step wait-csv-succeeded olm_wait_csv_succeeded
fi
if [[ $existing != true ]]; then
  # make deploy applies it itself; under OLM the operator's ServiceMonitor and alert rules
  # are applied next to the install (the bundle cannot carry them: see docs/monitoring.md).
  step operator-monitoring make_q deploy-monitoring
fi
step create-sample "$kubectl_bin" apply -n default -f config/samples/etcd_v1alpha1_etcdcluster.yaml
step wait-sample-ready "$kubectl_bin" -n default wait etcdcluster/etcdcluster-sample \
  --for=condition=Ready --timeout=300s
step check-sample-etcdctl "$kubectl_bin" -n default exec etcdcluster-sample-0 -c etcd -- etcdctl endpoint health --cluster
step plugin make_q plugin

if [[ $existing != true ]]; then
  echo
  "$kubectl_bin" get csv,installplan -n "$operator_ns"
  "$kubectl_bin" get etcd -A
fi
cat <<TEXT

[demo] done in $(since "$demo_start")s.
  kubeconfig:      export KUBECONFIG=${KUBECONFIG:-~/.kube/config}
  operator:        $kubectl_bin -n $operator_ns get csv,subscription,installplan,deploy,pods
  operator logs:   $kubectl_bin -n $operator_ns logs deploy/etcdpilot-controller-manager
  OperatorHub:     $kubectl_bin get packagemanifests etcdpilot -n olm
  sample cluster:  $kubectl_bin -n default get etcdcluster etcdcluster-sample   (3 members, TLS, Ready)
  Prometheus:      $kubectl_bin -n etcdpilot-monitoring port-forward svc/prometheus 9090, then
                   http://127.0.0.1:9090/api/v1/targets (HTTP API; hack/monitoring/README.md)
  etcdctl inside:  $kubectl_bin -n default exec etcdcluster-sample-0 -- etcdctl member list -w table
  kubectl plugin:  export PATH=$PWD/bin:\$PATH, then
                   kubectl etcdpilot status etcdcluster-sample -n default
  clients:         https://etcdcluster-sample-client.default.svc:2379 with the client certificate and CA
                   in secret etcdcluster-sample-client-tls (tls.crt, tls.key, ca.crt)
  step logs:       $log_dir
TEXT
if [[ $existing != true ]]; then
  echo "  cluster state:   $(make_q -s print-CLUSTER_DIR) (logs under logs/); stop it with 'make cluster-down'"
fi
