#!/usr/bin/env bash
# smoke-test.sh: prove the local cluster (hack/local-cluster.sh up) works end to end:
# a pod from the local registry runs, kubectl logs/exec work, a ClusterIP Service answers
# by its DNS name from another pod and by its address from the host, one without endpoints is
# refused at once, and a PVC of the default StorageClass keeps its data across pod
# re-creation. With several nodes, also:
# pods on two nodes reach each other, a NetworkPolicy holds for a pod on any node, and a
# node stopped and started again (hack/local-cluster.sh node-stop, node-start) stops and then
# runs its pods again. Everything happens in namespace cluster-smoke, deleted at the end.
#
# Uses the same environment as the cluster script (KUBECONFIG_OUT, K8S_BIN, REGISTRY_ADDR).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-/var/lib/etcdpilot-cluster}
KUBECONFIG_OUT=${KUBECONFIG_OUT:-$CLUSTER_DIR/kubeconfig}
K8S_BIN=${K8S_BIN:-$ROOT/bin/k8s-v1.35.4}
REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:5000}
BUSYBOX=localhost:${REGISTRY_ADDR##*:}/busybox:1.35
NS=cluster-smoke

k() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_OUT" -n "$NS" "$@"; }

step() {
  local name=$1 t0=${EPOCHREALTIME/./}
  shift
  "$@"
  local dt=$(((${EPOCHREALTIME/./} - t0) / 100000))
  printf '[smoke] %s ... %d.%ds\n' "$name" $((dt / 10)) $((dt % 10))
}

fail() {
  echo "[smoke] FAILED: $*" >&2
  k get all,pvc -o wide >&2 || true
  exit 1
}

# pod_spec NAME COMMAND [CLAIM] [NODE]: a busybox pod running COMMAND, with CLAIM at /data,
# on NODE.
pod_spec() {
  local volumes= node=
  [[ -z ${4:-} ]] || node="
  nodeName: $4"
  [[ -z ${3:-} ]] || volumes="
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: $3}}]"
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {app: $1}}
spec:
  terminationGracePeriodSeconds: 0$node
  containers:
  - name: main
    image: $BUSYBOX
    command: [sh, -c, '$2']$volumes
EOF
}

setup() {
  "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_OUT" delete namespace "$NS" --ignore-not-found --wait >/dev/null
  "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_OUT" create namespace "$NS" >/dev/null
}

pod_logs_exec() {
  pod_spec hello 'echo hello-from-pod; exec sleep 3600' | k apply -f - >/dev/null
  k wait --for=condition=Ready pod/hello --timeout=90s >/dev/null || fail "pod hello not Ready"
  [[ $(k logs hello) == hello-from-pod ]] || fail "kubectl logs: $(k logs hello)"
  # shellcheck disable=SC2016 # expanded by the shell in the pod
  [[ $(k exec hello -- sh -c 'echo exec-$((40 + 2))') == exec-42 ]] || fail "kubectl exec"
}

service_by_dns() {
  pod_spec web 'mkdir -p /www && echo served-by-web >/www/index.html && exec httpd -f -p 8080 -h /www' |
    k apply -f - >/dev/null
  k expose pod web --name=web --port=80 --target-port=8080 >/dev/null
  k wait --for=condition=Ready pod/web --timeout=90s >/dev/null || fail "pod web not Ready"
  local out
  for _ in $(seq 30); do
    out=$(k exec hello -- timeout 5 wget -qO- "http://web.$NS.svc.cluster.local" 2>&1) && break
    sleep 1
  done
  [[ $out == served-by-web ]] || fail "Service web by DNS name: $out"
  # The host reaches a ClusterIP too (the e2e tests' clients do): kube-proxy's translation
  # in the output path, past the guard.
  local ip
  ip=$(k get service web -o 'jsonpath={.spec.clusterIP}')
  out=$(curl -fsS --max-time 5 "http://$ip/" 2>&1) || fail "the host cannot reach Service web at $ip: $out"
  [[ $out == served-by-web ]] || fail "Service web from the host: $out"
  out=$(k exec hello -- nslookup kubernetes.default.svc.cluster.local 2>&1) || fail "nslookup: $out"
}

# A pod's connection to a Service without endpoints is refused at once. kube-proxy's REJECT
# refuses it, or, where kube-router's firewall accepted the packet ahead of that REJECT, the
# guard that keeps pod traffic on this machine does (the untranslated address would otherwise
# be routed off it).
service_without_endpoints() {
  k create service clusterip nobody --tcp=80:8080 >/dev/null
  local out
  out=$(k exec hello -- timeout 5 wget -qO- "http://nobody.$NS.svc.cluster.local" 2>&1) && fail "Service nobody answered: $out"
  [[ $out == *"Connection refused"* ]] || fail "Service nobody: not refused at once: $out"
  if command -v nft >/dev/null; then
    echo "[smoke] guard: pods $(nft list chain ip etcdpilot_guard forward | grep -o 'counter packets [0-9]*' | xargs), host $(nft list chain ip etcdpilot_guard output | grep -o 'counter packets [0-9]*' | xargs)"
  fi
}

volume_persists() {
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 16Mi}}
EOF
  # shellcheck disable=SC2016 # runs in the pod
  local script='if [ -f /data/token ]; then echo FOUND $(cat /data/token); else echo smoke-token >/data/token && echo WROTE; fi; exec sleep 3600'
  pod_spec writer "$script" data | k apply -f - >/dev/null
  k wait --for=condition=Ready pod/writer --timeout=90s >/dev/null || fail "pod writer not Ready"
  [[ $(k logs writer) == WROTE ]] || fail "first writer: $(k logs writer)"
  [[ $(k get pvc data -o 'jsonpath={.spec.storageClassName}') == local-path ]] || fail "PVC did not get the default StorageClass"
  k delete pod writer --wait >/dev/null
  pod_spec writer "$script" data | k apply -f - >/dev/null
  k wait --for=condition=Ready pod/writer --timeout=90s >/dev/null || fail "second pod writer not Ready"
  [[ $(k logs writer) == "FOUND smoke-token" ]] || fail "data did not survive: $(k logs writer)"
}

kubectl_all() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_OUT" "$@"; }

# reaches FROM-POD IP: FROM-POD fetches http://IP:8080 within 3 s.
reaches() { [[ $(k exec "$1" -- timeout 3 wget -qO- "http://$2:8080" 2>/dev/null) == served-by-* ]]; }

across_nodes() {
  local last ip
  last=$(kubectl_all get nodes -o name | sort | tail -n 1)
  last=${last#node/}
  pod_spec far 'mkdir -p /www && echo served-by-far >/www/index.html && exec httpd -f -p 8080 -h /www' "" "$last" |
    k apply -f - >/dev/null
  pod_spec near 'exec sleep 3600' "" node1 | k apply -f - >/dev/null
  k wait --for=condition=Ready pod/far pod/near --timeout=90s >/dev/null || fail "pods far ($last) and near (node1) not Ready"
  ip=$(k get pod far -o 'jsonpath={.status.podIP}')
  reaches near "$ip" || fail "a pod on node1 cannot reach one on $last ($ip)"
  # The one firewall of the machine enforces policies for pods of every node.
  k apply -f - >/dev/null <<EOF
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: far-closed}
spec:
  podSelector: {matchLabels: {app: far}}
  policyTypes: [Ingress]
EOF
  local i
  for i in $(seq 20); do reaches near "$ip" || break; sleep 0.5; done
  ((i < 20)) || fail "a NetworkPolicy did not close pod far on $last"
  k delete networkpolicy far-closed >/dev/null
  for i in $(seq 20); do reaches near "$ip" && break; sleep 0.5; done
  ((i < 20)) || fail "pod far on $last stayed closed after its NetworkPolicy went"
  # A node that stops takes its pods' processes with it; started again, it runs them again.
  "$ROOT/hack/local-cluster.sh" node-stop "$last" >/dev/null
  ! reaches near "$ip" || fail "pod far still answers with $last stopped"
  "$ROOT/hack/local-cluster.sh" node-start "$last" >/dev/null
  for i in $(seq 90); do
    ip=$(k get pod far -o 'jsonpath={.status.podIP}')
    ! reaches near "$ip" || break
    sleep 1
  done
  ((i < 90)) || fail "pod far did not run again after $last started"
}

teardown() {
  local pv
  pv=$(k get pvc data -o 'jsonpath={.spec.volumeName}')
  "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_OUT" delete namespace "$NS" --wait --timeout=120s >/dev/null
  # reclaimPolicy Delete: the provisioner's helper pod removes the volume, then the PV goes.
  "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_OUT" wait --for=delete "pv/$pv" --timeout=60s >/dev/null
}

step "namespace" setup
step "pod from local registry, logs, exec" pod_logs_exec
step "ClusterIP Service by DNS name" service_by_dns
step "Service without endpoints refused at once" service_without_endpoints
step "PVC (default StorageClass) survives pod re-creation" volume_persists
if (($(kubectl_all get nodes -o name | wc -l) > 1)); then
  step "across nodes: pod to pod, NetworkPolicy, node stop and start" across_nodes
fi
step "cleanup (namespace, PV reclaimed)" teardown
echo "[smoke] all passed"
