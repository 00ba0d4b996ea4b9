#!/usr/bin/env bash
# local-cluster.sh: a real Kubernetes cluster of one or more nodes on this machine, for the
# e2e tests.
#
#   hack/local-cluster.sh up|down|status
#   hack/local-cluster.sh node-stop|node-start NODE
#
# up      stop and wipe whatever an earlier cluster left, then start a fresh one and wait
#         until it is healthy: etcd, kube-apiserver, controller-manager, scheduler,
#         containerd, kubelet, kube-proxy, CoreDNS, a local image registry (plain HTTP,
#         and the same content over TLS for host tools that insist on it) and the
#         local-path-provisioner as the default StorageClass, and kube-router's firewall,
#         which enforces NetworkPolicy (the bridge network plugin does not).
# down    stop every process, unmount, delete interfaces, iptables rules, lo addresses and
#         the state directory. Safe to run any number of times.
# status  print each component's health; exit 0 only if all are healthy.
# node-stop NODE   the node dies as a machine does: its kubelet, container runtime and every
#         process of its pods are killed at once (SIGKILL); its state stays on disk.
# node-start NODE  the node comes back: its container runtime and kubelet start again on
#         that state, as after a reboot.
#
# Nodes: NODES of them (default 1), node1..nodeN in zones zone-a, zone-b, ...; one control
# plane, and each node with its own kubelet, containerd, cgroup root, pod address range and
# CNI bridge (hack/cluster/README.md, "Several nodes on one machine").
#
# Configured only through the environment (the Makefile sets all of these):
#   CLUSTER_DIR            the one state directory (default /var/lib/etcdpilot-cluster)
#   NODES                  how many nodes (1 to 5, default 1); read by `up` only, the other
#                          actions find the nodes that `up` made
#   KUBECONFIG_OUT         admin kubeconfig to write (default $CLUSTER_DIR/kubeconfig)
#   K8S_BIN                kube-apiserver, kube-controller-manager, kube-scheduler,
#                          kubelet, kube-proxy, kubectl
#   ETCD_BIN               etcd, etcdctl, etcdutl for the control plane
#   COREDNS, LOCAL_PATH_PROVISIONER, KUBE_ROUTER, CRANE   paths of those binaries
#   REGISTRY_ADDR          where the registry listens (default 127.0.0.1:5000); images are
#                          referenced as localhost:<port>/...
#   REGISTRY_TLS_ADDR      where the same registry also answers over TLS and plain HTTP
#                          (default 127.0.0.1:5443), with a certificate from a CA made at
#                          `up`; $CLUSTER_DIR/registry-ca-bundle.pem (the system CAs plus that
#                          CA) is for SSL_CERT_FILE, so the system trust store stays untouched
#   BUILD_IMAGE            hack/build-image.sh
#   MIRRORED_REGISTRIES    public registries containerd fetches from the local registry
#                          (default: quay.io gcr.io registry.k8s.io registry.access.redhat.com)
#   DISK_FREE_MIN_GIB      free space `up` requires on CLUSTER_DIR's filesystem (default 20)
#
# The reason for every setting is in hack/cluster/README.md ("Why each setting").
# Network safety: every address this script or the cluster connects to is assigned on this
# machine first (loopback, the addresses put on lo, the pod bridge); nothing listens on or
# talks to the outside network.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-/var/lib/etcdpilot-cluster}
CLUSTER_DIR=${CLUSTER_DIR%/}
KUBECONFIG_OUT=${KUBECONFIG_OUT:-$CLUSTER_DIR/kubeconfig}
K8S_BIN=${K8S_BIN:-$ROOT/bin/k8s-v1.35.4}
ETCD_BIN=${ETCD_BIN:-$ROOT/bin/etcd-v3.6.16}
COREDNS=${COREDNS:-$ROOT/bin/coredns-v1.12.4}
LOCAL_PATH_PROVISIONER=${LOCAL_PATH_PROVISIONER:-$ROOT/bin/local-path-provisioner-v0.0.30}
KUBE_ROUTER=${KUBE_ROUTER:-$ROOT/bin/kube-router-v2.1.0}
CRANE=${CRANE:-$ROOT/bin/crane-v0.20.6}
REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:5000}
# Public registries whose images containerd fetches from the local registry instead.
MIRRORED_REGISTRIES=${MIRRORED_REGISTRIES:-quay.io gcr.io registry.k8s.io registry.access.redhat.com}
REGISTRY_TLS_ADDR=${REGISTRY_TLS_ADDR:-127.0.0.1:5443}
BUILD_IMAGE=${BUILD_IMAGE:-$ROOT/hack/build-image.sh}
NODES=${NODES:-1}
# Every node's images, volumes and logs share one filesystem: when it fills, every node turns
# DiskPressure at once and nothing schedules. The floor covers a whole e2e run.
DISK_FREE_MIN_GIB=${DISK_FREE_MIN_GIB:-20}

# Daemons and tools we run need the sbin directories (iptables, runc, modprobe) even when
# make runs us with a minimal PATH.
export PATH=$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset KUBECONFIG # every kubectl call below names its kubeconfig

# Addresses: node and DNS on lo (the kernel has no dummy links), pods and services in
# ranges that stay inside this machine.
# node1 is the node the host-wide agents (kube-proxy, kube-router) act for.
readonly NODE_NAME=node1
# Every node has this address: kube-router's firewall, one for the machine, enforces policies
# for the pods whose host address is its node's (hack/cluster/README.md). Each kubelet
# listens on a port of its own there.
readonly NODE_IP=198.19.0.1
readonly DNS_IP=198.19.0.10
# All pods; each node has a /20 of it (node_pod_range).
readonly POD_CIDR=198.18.0.0/16
# The nftables table that keeps pod traffic on this machine (setup_host_network).
readonly GUARD_TABLE=etcdpilot_guard
readonly SERVICE_CIDR=198.19.128.0/17
readonly API_SERVICE_IP=198.19.128.1
# Not the default 2379/2380, so an etcd a test runs on the host does not collide with ours.
readonly ETCD_CLIENT_URL=http://127.0.0.1:12379
readonly ETCD_PEER_URL=http://127.0.0.1:12380
readonly REGISTRY=localhost:${REGISTRY_ADDR##*:}
readonly TEMPLATES=$ROOT/hack/cluster

readonly S=$CLUSTER_DIR
readonly PKI=$S/pki KCFG=$S/kubeconfigs LOGS=$S/logs RUN=$S/run
readonly ADMIN_KUBECONFIG=$KCFG/admin.kubeconfig
readonly REGISTRY_CA_BUNDLE=$S/registry-ca-bundle.pem
readonly SYSTEM_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
readonly MARKER=.etcdpilot-cluster # proves the directory is ours before `rm -rf`
readonly NODES_FILE=$S/nodes.count  # how many nodes `up` made, for the other actions

# ---------------------------------------------------------------------------------------
# nodes: node N (1..5) and where its parts live. node1 keeps the single-node layout (state
# directly under the cluster directory, pod cgroups at the root of each hierarchy); each
# further node has a directory under nodes/ and a cgroup root of its own, because a kubelet
# removes the pod cgroups, pod log directories and containers it does not know.

node_name() { echo "node$1"; }
# The node's topology.kubernetes.io/zone label, as a cloud's nodes carry one: what the
# operator reports per member (status.members[].zone) is checked against it.
node_zone() {
  local zones=(a b c d e)
  echo "zone-${zones[$1 - 1]}"
}
node_dir() { if (($1 == 1)); then echo "$S"; else echo "$S/nodes/node$1"; fi; }
# Daemon names (run/NAME.pid, logs/NAME.log): kubelet and containerd for node1, with
# -nodeN after them for the others.
node_suffix() { if (($1 == 1)); then echo ""; else echo "-node$1"; fi; }
node_sock() { echo "$RUN/containerd$(node_suffix "$1").sock"; }
node_cgroup() { if (($1 == 1)); then echo /; else echo "/etcdpilot-node$1"; fi; }
kubelet_port() { echo $((10250 + 1000 * ($1 - 1))); }
kubelet_healthz_port() { echo $((10248 + 1000 * ($1 - 1))); }
node_bridge() { echo "cni$(($1 - 1))"; }
node_pod_range() { echo "198.18.$((16 * ($1 - 1))).0/20"; }
node_pod_gateway() { echo "198.18.$((16 * ($1 - 1))).1"; }
# node_count: the nodes of the cluster in the state directory (1 when none is recorded).
node_count() { cat "$NODES_FILE" 2>/dev/null || echo 1; }
# node_number NAME: N for nodeN of this cluster, or fail.
node_number() {
  [[ $1 =~ ^node([1-9])$ ]] && ((BASH_REMATCH[1] <= $(node_count))) ||
    die "no node $1 in this cluster (nodes: node1..node$(node_count))"
  echo "${BASH_REMATCH[1]}"
}

# ---------------------------------------------------------------------------------------
# helpers

STEP_PREFIX=cluster
# shellcheck source=hack/lib/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/steps.sh"

on_exit() {
  local rc=$?
  if failed_step "$rc" && [[ -d $LOGS ]]; then
    printf '[cluster-%s] component logs: %s\n' "$ACTION" "$LOGS" >&2
  fi
}
trap on_exit EXIT

# render TEMPLATE OUT [NODE]: copy a template from hack/cluster, replacing @NAME@
# placeholders; those of a node (@NODE_DIR@, @CONTAINERD_SOCK@, ...) are NODE's (default 1).
render() {
  local text n=${3:-1}
  text=$(<"$TEMPLATES/$1")
  local kv
  for kv in "CLUSTER_DIR=$S" "PKI=$PKI" "REGISTRY=$REGISTRY" "NODE_IP=$NODE_IP" "DNS_IP=$DNS_IP" \
    "POD_CIDR=$POD_CIDR" "LOCAL_PATH_DIR=$S/local-path" \
    "NODE_NAME=$(node_name "$n")" "NODE_DIR=$(node_dir "$n")" "CONTAINERD_SOCK=$(node_sock "$n")" \
    "KUBELET_PORT=$(kubelet_port "$n")" "HEALTHZ_PORT=$(kubelet_healthz_port "$n")" \
    "CGROUP_ROOT=$(node_cgroup "$n")" "BRIDGE=$(node_bridge "$n")" \
    "POD_RANGE=$(node_pod_range "$n")" "POD_GATEWAY=$(node_pod_gateway "$n")"; do
    text=${text//@${kv%%=*}@/${kv#*=}}
  done
  printf '%s\n' "$text" >"$2"
}

# start_daemon NAME COMMAND...: run COMMAND in its own session (setsid), detached from the
# calling shell and make: no terminal, stdin from /dev/null, output to logs/NAME.log, so it
# survives make exiting and a Ctrl-C in the terminal.
start_daemon() {
  local name=$1
  shift
  # Not a process group leader here (no job control), so setsid execs in place and $! is
  # the daemon itself.
  setsid "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  local pid=$! exe i
  echo "$pid" >"$RUN/$name.pid"
  # Until it has exec'd the daemon, $! is a copy of this shell, which daemon_alive would
  # take for a daemon that exited: wait (at most 5 s) for the exec, or for its end.
  exe=$(readlink -f "$(command -v "$1")")
  for i in $(seq 50); do
    [[ -e /proc/$pid && $(readlink "/proc/$pid/exe" 2>/dev/null) != "$exe" ]] || break
    sleep 0.1
  done
}

# daemon_alive NAME: the process from run/NAME.pid is running and is ours.
daemon_alive() {
  local pid
  pid=$(cat "$RUN/$1.pid" 2>/dev/null) || return 1
  local args
  mapfile -d '' args 2>/dev/null <"/proc/$pid/cmdline" || return 1
  [[ "${args[*]}" == *"$S"* ]]
}

# wait_for NAME TIMEOUT COMMAND...: poll COMMAND until it succeeds; fail at once with the
# end of NAME's log if the daemon NAME died, or after TIMEOUT seconds.
wait_for() {
  local name=$1 timeout=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [[ -f $RUN/$name.pid ]] && ! daemon_alive "$name"; then
      printf '%s exited; last lines of %s:\n' "$name" "$LOGS/$name.log" >&2
      tail -n 25 "$LOGS/$name.log" >&2 || true
      return 1
    fi
    if ((SECONDS >= deadline)); then
      printf 'timed out after %ss waiting for %s (%s); last lines of its log:\n' \
        "$timeout" "$name" "$*" >&2
      tail -n 25 "$LOGS/$name.log" >&2 2>/dev/null || true
      return 1
    fi
    sleep 0.2
  done
}

# local_addr IP: IP is assigned on lo. Health checks connect to 198.19.0.x only when it is:
# a connection to an unassigned 198.19.0.1 leaves the machine (something outside answered).
# (Pipelines into `grep -q` are avoided throughout: grep exits at the first match, the
# writer gets SIGPIPE, and with pipefail the check fails although it matched.)
local_addr() { [[ $(ip -o -4 addr show dev lo) == *" $1/32 "* ]]; }

kubectl() { "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }
http_ok() { curl -fsS --max-time 2 -o /dev/null "$@"; }

# The state directory is deleted recursively: refuse anything that is not clearly ours.
check_cluster_dir() {
  [[ $S == /* && $S != *' '* ]] || die "CLUSTER_DIR must be an absolute path without spaces: '$S'"
  case ${S%/} in
  '' | /bin | /boot | /dev | /etc | /home | /lib* | /opt | /proc | /root | /run | /sbin | \
    /srv | /sys | /tmp | /usr | /usr/* | /var | /var/lib | /var/log | /work | "$ROOT") die "refusing CLUSTER_DIR=$S" ;;
  esac
  if [[ -d $S && ! -e $S/$MARKER ]] && [[ -n $(ls -A "$S") ]]; then
    die "$S exists, is not empty and was not made by this script; refusing to use it"
  fi
  # unix socket paths are limited to 107 bytes
  local longest
  longest=$(node_sock 5)
  ((${#longest} < 100)) || die "CLUSTER_DIR is too long for the containerd socket path"
}

# free_gib DIR: whole GiB free for root's files on the filesystem that holds DIR (or would).
free_gib() {
  local d=$1
  until [[ -e $d ]]; do d=$(dirname "$d"); done
  df -Pk "$d" | awk 'NR == 2 { print int($4 / 1048576) }'
}

check_disk() {
  local free
  free=$(free_gib "$S")
  ((free >= DISK_FREE_MIN_GIB)) || die "only ${free} GiB free on the filesystem of $S; the local cluster needs ${DISK_FREE_MIN_GIB} GiB (DISK_FREE_MIN_GIB): its nodes share that disk, and when it fills every node reports DiskPressure and takes no pod (hack/cluster/README.md)"
}

# ---------------------------------------------------------------------------------------
# down

# Process names we may start; a process is ours when its executable has one of these
# names AND its command line mentions the state directory (every daemon gets a path under
# it; containerd's shims get -address $RUN/containerd.sock). The name check keeps the
# shell or make that invoked us alive even if its command line mentions CLUSTER_DIR.
our_pids() {
  local p args exe
  for p in /proc/[0-9]*; do
    mapfile -d '' args 2>/dev/null <"$p/cmdline" || continue
    [[ "${args[*]}" == *"$S"* ]] || continue
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    exe=${exe% (deleted)}
    case ${exe##*/} in
    etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kube-proxy | \
      containerd | containerd-shim* | runc | coredns* | kube-router* | crane* | local-path-provisioner* | registry-tls)
      echo "${p#/proc/}"
      ;;
    esac
  done
}

# Pod containers: after their shim dies they are re-parented, so find them by cgroup.
# The kubelet (cgroupfs driver) puts every pod under <hierarchy><its cgroup root>/kubepods.
# pod_cgroups [NODE]: those of NODE's pods, or of every node's.
pod_cgroups() {
  if [[ -n ${1:-} ]]; then
    local root
    root=$(node_cgroup "$1")
    ls -d "/sys/fs/cgroup${root%/}/kubepods" /sys/fs/cgroup/*"${root%/}/kubepods" 2>/dev/null || true
  else
    ls -d /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/etcdpilot-node*/kubepods 2>/dev/null || true
  fi
}
# The cgroup roots of nodes 2 and up, in every hierarchy.
node_cgroup_roots() { ls -d /sys/fs/cgroup/*/etcdpilot-node[0-9]* 2>/dev/null || true; }

# kill_pod_processes [NODE]: SIGKILL every process of NODE's pods (of all pods without NODE)
# and remove their cgroups.
kill_pod_processes() {
  local cgs pids
  mapfile -t cgs < <(pod_cgroups "${1:-}")
  ((${#cgs[@]})) || return 0
  for _ in $(seq 50); do
    # find fails when a cgroup vanishes mid-walk (its pods are dying): what it read counts.
    pids=$({ find "${cgs[@]}" -name cgroup.procs -exec cat {} + 2>/dev/null || true; } | sort -u)
    [[ -n $pids ]] || break
    # shellcheck disable=SC2086 # one pid per word
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1
  done
  # Empty cgroups are removed deepest first.
  find "${cgs[@]}" -depth -type d -print0 2>/dev/null | xargs -0r rmdir 2>/dev/null || true
  [[ -n ${1:-} ]] || node_cgroup_roots | xargs -r rmdir 2>/dev/null || true
}

stop_processes() {
  local pids p
  # The kubelet first, so it does not start containers while they are being killed.
  # Everything is wiped afterwards, so nothing needs a graceful shutdown: SIGKILL.
  for p in $(our_pids); do
    if [[ $(readlink "/proc/$p/exe" 2>/dev/null) == */kubelet ]]; then kill -KILL "$p" 2>/dev/null || true; fi
  done
  kill_pod_processes
  for _ in $(seq 50); do
    pids=$(our_pids)
    [[ -n $pids ]] || break
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1
  done
  [[ -z $(our_pids) ]] || die "could not stop: $(our_pids | xargs)"
  kill_pod_processes
}

# Everything mounted under the state directory: overlay rootfs and shm of containers,
# network namespaces, kubelet's tmpfs/projected volumes. Lazy unmounts, deepest first.
unmount_all() {
  local mounts m
  for _ in 1 2 3 4 5; do
    mapfile -t mounts < <(awk -v dir="$S/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo | LC_ALL=C sort -ru)
    ((${#mounts[@]})) || return 0
    for m in "${mounts[@]}"; do
      umount -l "$(printf '%b' "$m")" 2>/dev/null || true # mountinfo escapes spaces as \040
    done
  done
  die "still mounted under $S: ${mounts[*]}"
}

# iptables/ip6tables: chains KUBE-* (kube-proxy, kubelet), CNI-* (portmap) and ETCDPILOT-*
# (ours) in every table, and every rule elsewhere that jumps to them or names our ranges.
# One iptables-restore transaction per table (one call per rule and chain takes seconds).
# kube-router's ipsets (KUBE-SRC-*, KUBE-DST-*, kube-router-*), once no rule uses them.
clean_ipsets() {
  command -v ipset >/dev/null || return 0
  local set
  for set in $(ipset list -n 2>/dev/null | grep -E '^(KUBE-|kube-router-|inet6:KUBE-|inet6:kube-router-)' || true); do
    ipset destroy "$set" 2>/dev/null || true
  done
}

clean_iptables() { # iptables|ip6tables
  local family=$1 table rules chains jumps c
  command -v "$family-restore" >/dev/null || return 0
  for table in filter nat mangle raw security; do
    rules=$("$family-save" -t "$table" 2>/dev/null) || continue
    chains=$(awk '/^:(KUBE|CNI|ETCDPILOT)-/ { print substr($1, 2) }' <<<"$rules")
    jumps=$(grep -E '^-A ' <<<"$rules" | grep -vE '^-A (KUBE|CNI|ETCDPILOT)-' |
      grep -E -- '-j (KUBE|CNI|ETCDPILOT)-|198\.18\.|198\.19\.' || true)
    [[ -n $chains || -n $jumps ]] || continue
    {
      echo "*$table"
      # With --noflush, declaring a chain flushes just that chain.
      for c in $chains; do echo ":$c - [0:0]"; done
      # shellcheck disable=SC2001 # per line
      [[ -z $jumps ]] || sed 's/^-A /-D /' <<<"$jumps"
      for c in $chains; do echo "-X $c"; done
      echo COMMIT
    } | "$family-restore" -w --noflush
  done
}

cleanup_network() {
  local v br
  for br in $(ip -o link show type bridge | awk -F': ' '$2 ~ /^cni[0-9]$/ { print $2 }'); do
    # Pod veths normally vanish with their network namespaces (unmounted above); any
    # still attached to the bridge go first.
    for v in $(ip -o link show master "$br" | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
      ip link del "$v" 2>/dev/null || true
    done
    ip link del "$br"
  done
  clean_iptables iptables
  clean_iptables ip6tables
  clean_ipsets
  ip route del unreachable "$POD_CIDR" 2>/dev/null || true
  # The guard goes last, once every process that sent pod traffic is gone.
  if command -v nft >/dev/null && nft list table ip "$GUARD_TABLE" >/dev/null 2>&1; then
    nft delete table ip "$GUARD_TABLE"
  fi
  local a
  for a in "$NODE_IP" "$DNS_IP"; do
    if local_addr "$a"; then ip addr del "$a/32" dev lo; fi
  done
}

# The few things containerd and the kubelet always put outside the state directory.
cleanup_host_files() {
  local d ns id h n nd sock
  # containerd-shim sockets: /run/containerd/s/sha256(<containerd address>/<ns>/<id>); a
  # killed shim leaves its socket behind.
  for nd in "$S" "$S"/nodes/node[0-9]; do
    [[ -d $nd ]] || continue
    n=1
    [[ $nd == "$S" ]] || n=${nd##*/node}
    sock=$(node_sock "$n")
    for d in "$nd"/containerd/state/io.containerd.runtime.v2.task/*/*/; do
      [[ -d $d ]] || continue
      id=$(basename "$d") ns=$(basename "$(dirname "$d")")
      h=$(printf '%s' "$sock/$ns/$id" | sha256sum | cut -d' ' -f1)
      rm -f "/run/containerd/s/$h"
    done
  done
  # A shim killed together with its task (its state already gone) can leave a socket that no
  # process listens on any more: garbage whoever made it, and nothing can use it.
  local listening f
  listening=$(ss -xlH 2>/dev/null | awk '{ print $5 }')
  for f in /run/containerd/s/*; do
    [[ -S $f ]] || continue
    grep -qxF "$f" <<<"$listening" || rm -f "$f"
  done
  rmdir /run/containerd/s /run/containerd 2>/dev/null || true
  # libcni's result cache (fixed /var/lib/cni): <network>-<sandbox id>-<ifname> for our
  # network "etcdpilot" and containerd's built-in "cni-loopback", for our sandboxes.
  rm -f /var/lib/cni/results/etcdpilot-*
  for d in "$S"{,/nodes/node[0-9]}/containerd/{root,state}/io.containerd.grpc.v1.cri/sandboxes/*/; do
    [[ -d $d ]] || continue
    rm -f "/var/lib/cni/results/cni-loopback-$(basename "$d")-lo"
  done
  rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null || true
  # The kubelet's /var/log/containers symlinks into our pod log directory (fixed path).
  if [[ -d /var/log/containers ]]; then
    find /var/log/containers -maxdepth 1 -type l -lname "$S/*" -delete
    rmdir /var/log/containers 2>/dev/null || true
  fi
}

do_down() {
  check_cluster_dir
  step "stop processes" stop_processes
  step "unmount" unmount_all
  step "network and iptables" cleanup_network
  step "remove state" remove_state
}

remove_state() {
  cleanup_host_files
  rm -rf "$S"
  if [[ $KUBECONFIG_OUT != "$S"/* ]]; then rm -f "$KUBECONFIG_OUT"; fi
}

# ---------------------------------------------------------------------------------------
# up

check_inputs() {
  local f
  [[ $NODES =~ ^[1-5]$ ]] || die "NODES must be 1 to 5, not '$NODES'"
  for f in "$K8S_BIN"/{kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,kube-proxy,kubectl} \
    "$ETCD_BIN"/{etcd,etcdctl} "$COREDNS" "$LOCAL_PATH_PROVISIONER" "$KUBE_ROUTER" "$CRANE" "$BUILD_IMAGE"; do
    [[ -x $f ]] || die "missing executable $f (build it first: see the Makefile)"
  done
  command -v go >/dev/null || die "go is not on PATH (needed to build the pause image)"
  ((EUID == 0)) || die "must run as root"
}

install_packages() {
  local pkgs=(containerd runc containernetworking-plugins iptables conntrack busybox-static
    openssl curl iproute2 util-linux ipset nftables) missing=() p
  for p in "${pkgs[@]}"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == *' ok installed' ]] || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

setup_host_network() {
  # The node and DNS addresses live on lo; assigned before anything connects to them.
  ip addr add "$NODE_IP/32" dev lo
  ip addr add "$DNS_IP/32" dev lo
  # Service traffic between pods on the bridge must pass through iptables (kube-proxy's
  # DNAT), and pod traffic is routed to the lo addresses.
  [[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] || modprobe br_netfilter
  grep -qw overlay /proc/filesystems || modprobe overlay
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
  # ip_forward is on and pod traffic is not masqueraded: make sure nothing from a pod is
  # ever forwarded off this machine (to the pod bridge and local addresses only). The rule
  # lives in a table of its own, not in iptables' filter table: an ACCEPT there (a network
  # policy firewall may put one first in FORWARD) ends only that table's chain, and every
  # table at the hook must let a packet through. Rejected, not dropped: a connection to a
  # Service without endpoints, which kube-proxy's REJECT in the filter table refuses, is
  # refused here too if an ACCEPT came first (it is not translated, so it would be routed
  # off the machine). The host's own connections (tests, kube-apiserver to webhooks) need
  # the same on the output hook: a Service address that kube-proxy's DNAT (at the nat
  # priority, before this chain) left untranslated (no endpoints, or rules not programmed
  # yet) has no route but the default one. The rule matches that address, not the
  # interface: at the output hook the interface is the route's before the DNAT. A pod
  # address has its route to its node's bridge (cni0, cni1, ...). While no bridge holds its
  # range (before a node's first pod), the pod range's unreachable route below answers
  # instead of the default one; the bridges' own routes are more specific. (Not a rule on
  # the output interface: for a Service address translated to a pod's, that interface is
  # still the default route's.)
  ip route add unreachable "$POD_CIDR"
  nft -f - <<EOF
table ip $GUARD_TABLE {
  chain forward {
    type filter hook forward priority filter; policy accept;
    ip saddr $POD_CIDR oifname != "cni*" counter reject comment "etcdpilot: pod traffic stays on this machine"
  }
  chain output {
    type filter hook output priority filter; policy accept;
    ip daddr $SERVICE_CIDR counter reject comment "etcdpilot: the host's traffic to Service addresses not translated stays on this machine"
  }
}
EOF
}

# Every address:port the cluster listens on must be free (after the cleanup, anything
# still there is not ours). Otherwise a health check could succeed against a stranger, e.g.
# images pushed to some other registry on :5000.
check_ports() {
  local want=("tcp $REGISTRY_ADDR" "tcp $REGISTRY_TLS_ADDR" "tcp 127.0.0.1:12379" "tcp 127.0.0.1:12380"
    "tcp $NODE_IP:6443" "tcp 127.0.0.1:10257" "tcp 127.0.0.1:10259"
    "tcp 127.0.0.1:10249" "tcp 127.0.0.1:10256"
    "tcp $DNS_IP:53" "udp $DNS_IP:53" "tcp $DNS_IP:8080" "tcp $DNS_IP:8181") n
  for n in $(seq "$NODES"); do
    want+=("tcp $NODE_IP:$(kubelet_port "$n")" "tcp 127.0.0.1:$(kubelet_healthz_port "$n")")
  done
  local listening w proto addr port busy=()
  listening=$( (ss -ltnpH | sed 's/^/tcp /'; ss -lunpH | sed 's/^/udp /') 2>/dev/null)
  for w in "${want[@]}"; do
    read -r proto addr <<<"$w"
    port=${addr##*:} addr=${addr%:*}
    # A listener on the same port conflicts if it is on that address or on a wildcard.
    busy+=("$(awk -v proto="$proto" -v port="$port" -v addr="$addr" '
      $1 == proto { n = split($5, a, ":"); la = substr($5, 1, length($5) - length(a[n]) - 1)
        if (a[n] == port && (la == addr || la == "0.0.0.0" || la == "*" || la == "[::]"))
          print proto " " $5 " " $7 }' <<<"$listening")")
  done
  mapfile -t busy < <(printf '%s\n' "${busy[@]}" | sed '/^$/d')
  ((${#busy[@]} == 0)) || die "ports the cluster needs are in use: $(printf '%s; ' "${busy[@]}")"
}

make_dirs() {
  mkdir -p "$S"
  touch "$S/$MARKER"
  echo "$NODES" >"$NODES_FILE"
  mkdir -p "$PKI" "$KCFG" "$LOGS" "$RUN" "$S"/{bin,etcd,registry,images,local-path,coredns}
  local n d
  for n in $(seq "$NODES"); do
    d=$(node_dir "$n")
    mkdir -p "$d"/{kubelet,pod-logs,cni/net.d,containerd/certs.d/$REGISTRY}
  done
  chmod 700 "$PKI" "$KCFG" "$S/etcd"
}

# make_cgroup_roots: the cgroup root of each node after the first, in every hierarchy (the
# kubelet refuses a root that does not exist). cgroup v1's cpuset starts a new group with no
# CPUs and no memory nodes: it gets its parent's.
make_cgroup_roots() {
  local n h root
  for n in $(seq 2 "$NODES"); do
    root=$(node_cgroup "$n")
    for h in /sys/fs/cgroup/*/; do
      [[ $h == */unified/ ]] && continue
      mkdir -p "${h%/}$root"
      if [[ -e ${h}cpuset.cpus ]]; then
        cat "${h}cpuset.cpus" >"${h%/}$root/cpuset.cpus"
        cat "${h}cpuset.mems" >"${h%/}$root/cpuset.mems"
      fi
    done
  done
}

# --- certificates (openssl, which reports on stderr: kept in logs/openssl.log; EC P-256
# keys are fast to make)

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$1.key" 2>>"$LOGS/openssl.log"; }

new_ca() { # NAME CN
  new_key "$1"
  openssl req -x509 -new -sha256 -days 3650 -key "$PKI/$1.key" -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature \
    -out "$PKI/$1.crt" 2>>"$LOGS/openssl.log"
}

new_cert() { # NAME CA SUBJECT EXTENDED-KEY-USAGE [SUBJECT-ALT-NAMES]
  local name=$1 ca=$2 subject=$3 eku=$4 san=${5:-}
  new_key "$name"
  local ext="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$eku"
  [[ -z $san ]] || ext+=$'\n'"subjectAltName=$san"
  openssl req -new -key "$PKI/$name.key" -subj "$subject" 2>>"$LOGS/openssl.log" |
    openssl x509 -req -sha256 -days 365 -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" \
      -set_serial "0x$(openssl rand -hex 16)" -extfile <(printf '%s\n' "$ext") -out "$PKI/$name.crt" 2>>"$LOGS/openssl.log"
}

make_certificates() {
  new_ca ca etcdpilot-cluster-ca
  new_ca front-proxy-ca etcdpilot-front-proxy-ca
  # The apiserver is reached as the node address, the first service IP and by in-cluster names.
  new_cert apiserver ca /CN=kube-apiserver serverAuth \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$NODE_IP,IP:$API_SERVICE_IP"
  new_cert admin ca "/O=system:masters/CN=etcdpilot-admin" clientAuth
  new_cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
  # kubectl logs/exec: the apiserver checks the kubelet's serving certificate against the
  # CA, for the node IP (--kubelet-preferred-address-types=InternalIP).
  local n name
  for n in $(seq "$NODES"); do
    name=$(node_name "$n")
    new_cert "kubelet-$name" ca "/O=system:nodes/CN=system:node:$name" serverAuth,clientAuth "DNS:$name,IP:$NODE_IP"
  done
  new_cert controller-manager ca /CN=system:kube-controller-manager clientAuth
  new_cert scheduler ca /CN=system:kube-scheduler clientAuth
  new_cert kube-proxy ca /CN=system:kube-proxy clientAuth
  new_cert coredns ca /CN=system:coredns clientAuth
  new_cert kube-router ca /CN=system:kube-router clientAuth
  new_cert front-proxy-client front-proxy-ca /CN=front-proxy-client clientAuth
  # The registry's TLS door, reached as localhost or 127.0.0.1 from the host. Host tools
  # trust it through SSL_CERT_FILE=$REGISTRY_CA_BUNDLE, never the system store.
  new_ca registry-ca etcdpilot-registry-ca
  new_cert registry registry-ca /CN=localhost serverAuth "DNS:localhost,IP:127.0.0.1"
  { [[ ! -r $SYSTEM_CA_BUNDLE ]] || cat "$SYSTEM_CA_BUNDLE"; cat "$PKI/registry-ca.crt"; } >"$REGISTRY_CA_BUNDLE"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>>"$LOGS/openssl.log"
  openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
}

write_kubeconfig() { # NAME CERT
  cat >"$KCFG/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: etcdpilot
  cluster:
    server: https://$NODE_IP:6443
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$2.crt")
    client-key-data: $(base64 -w0 "$PKI/$2.key")
contexts:
- name: etcdpilot
  context:
    cluster: etcdpilot
    user: $1
current-context: etcdpilot
EOF
}

make_configs() {
  write_kubeconfig admin admin
  write_kubeconfig controller-manager controller-manager
  write_kubeconfig scheduler scheduler
  local n
  for n in $(seq "$NODES"); do
    write_kubeconfig "kubelet-$(node_name "$n")" "kubelet-$(node_name "$n")"
  done
  write_kubeconfig kube-proxy kube-proxy
  write_kubeconfig coredns coredns
  write_kubeconfig kube-router kube-router
  mkdir -p "$(dirname "$KUBECONFIG_OUT")"
  install -m 600 "$ADMIN_KUBECONFIG" "$KUBECONFIG_OUT"
  for n in $(seq "$NODES"); do
    make_node_configs "$n"
  done
  render kube-proxy.yaml.in "$S/kube-proxy.yaml"
  render Corefile.in "$S/coredns/Corefile"
  # Pods with dnsPolicy Default use this instead of the host's resolv.conf (whose server
  # is outside this machine).
  echo "nameserver $DNS_IP" >"$S/resolv.conf"
}

# make_node_configs N: node N's containerd, CNI and kubelet configuration.
make_node_configs() {
  local n=$1 d
  d=$(node_dir "$n")
  render containerd.toml.in "$d/containerd/config.toml" "$n"
  render registry-hosts.toml.in "$d/containerd/certs.d/$REGISTRY/hosts.toml"
  # Public registries are served by the local one, as a disconnected cluster's mirror
  # serves them: quay.io/etcdpilot/etcdpilot:v1 is pulled as $REGISTRY/etcdpilot/etcdpilot:v1,
  # and containerd never contacts the public host (server is the local registry itself, so
  # there is no fallback). The bundle and catalog name public images and install unchanged;
  # operator-sdk's fixed registry.access.redhat.com/ubi9/ubi init image is a local stand-in.
  local mirrored
  for mirrored in $MIRRORED_REGISTRIES; do
    mkdir -p "$d/containerd/certs.d/$mirrored"
    render registry-hosts.toml.in "$d/containerd/certs.d/$mirrored/hosts.toml"
  done
  render cni.conflist.in "$d/cni/net.d/10-etcdpilot.conflist" "$n"
  render kubelet.yaml.in "$d/kubelet/config.yaml" "$n"
}

# --- registry and images

start_registry() {
  start_daemon registry "$CRANE" registry serve --address "$REGISTRY_ADDR" --disk "$S/registry"
  # The TLS door: our own front end (its own module, stdlib only) forwarding to the above.
  (cd "$TEMPLATES/registry-tls" && CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags '-s -w' -o "$S/bin/registry-tls" .)
  start_daemon registry-tls "$S/bin/registry-tls" --listen "$REGISTRY_TLS_ADDR" \
    --backend "http://$REGISTRY_ADDR" --cert "$PKI/registry.crt" --key "$PKI/registry.key"
  wait_for registry 20 http_ok "http://$REGISTRY_ADDR/v2/"
  wait_for registry-tls 20 registry_tls_ok
}
registry_tls_ok() { http_ok --cacert "$PKI/registry-ca.crt" "https://$REGISTRY_TLS_ADDR/v2/"; }

# build_image ARGS...: hack/build-image.sh (crane, no daemon); its chatter goes to a log.
build_image() {
  CRANE=$CRANE "$BUILD_IMAGE" "$@" >>"$LOGS/images.log" 2>&1 || {
    tail -n 20 "$LOGS/images.log" >&2
    return 1
  }
}

build_images() {
  local d=$S/images
  # pause: the pod sandbox image named in containerd's sandbox_image. Its own module.
  mkdir -p "$d/pause"
  (cd "$TEMPLATES/pause" && CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags '-s -w' -o "$d/pause/pause" .)
  build_image -t "$REGISTRY/pause:3.10" -e /pause "$d/pause"

  # busybox: Debian's static busybox with its applet links; the local-path helper pods
  # and tests need a shell.
  local r=$d/busybox applet
  mkdir -p "$r/bin" "$r/etc" "$r/root" "$r/tmp"
  chmod 1777 "$r/tmp"
  cp /bin/busybox "$r/bin/busybox"
  for applet in $(/bin/busybox --list-full); do
    [[ $applet == bin/busybox ]] && continue
    mkdir -p "$r/${applet%/*}"
    ln -s /bin/busybox "$r/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' >"$r/etc/group"
  build_image -t "$REGISTRY/busybox:1.35" -c sh \
    -E PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$r"

  # local-path-provisioner: only talks to the API, no shell needed.
  r=$d/local-path-provisioner
  mkdir -p "$r/usr/bin" "$r/etc" "$r/tmp"
  chmod 1777 "$r/tmp"
  cp "$LOCAL_PATH_PROVISIONER" "$r/usr/bin/local-path-provisioner"
  echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
  build_image -t "$REGISTRY/local-path-provisioner:v0.0.30" \
    -e /usr/bin/local-path-provisioner -E PATH=/usr/bin:/bin "$r"
  rm -rf "$d"
}

# --- control plane

start_etcd() {
  # --unsafe-no-fsync: throwaway data, and fsync latency on a busy CI disk slows the
  # whole control plane.
  start_daemon etcd "$ETCD_BIN/etcd" --name "$NODE_NAME" --data-dir "$S/etcd" \
    --listen-client-urls "$ETCD_CLIENT_URL" --advertise-client-urls "$ETCD_CLIENT_URL" \
    --listen-peer-urls "$ETCD_PEER_URL" --initial-advertise-peer-urls "$ETCD_PEER_URL" \
    --initial-cluster "$NODE_NAME=$ETCD_PEER_URL" --unsafe-no-fsync --log-level warn
  wait_for etcd 30 etcd_healthy
}
etcd_healthy() { [[ $(curl -fsS --max-time 2 "$ETCD_CLIENT_URL/health") == *'"health":"true"'* ]]; }

start_apiserver() {
  # Listens on the node address only (not on the machine's external interface).
  # Aggregation layer on (requestheader/proxy-client flags): OLM's packageserver
  # APIService needs it, and without it namespace deletion hangs on failed discovery.
  start_daemon kube-apiserver "$K8S_BIN/kube-apiserver" \
    --etcd-servers="$ETCD_CLIENT_URL" \
    --bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port=6443 \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" \
    --kubelet-preferred-address-types=InternalIP \
    --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" \
    --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User \
    --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$PKI/front-proxy-client.crt" \
    --proxy-client-key-file="$PKI/front-proxy-client.key" \
    --enable-aggregator-routing=true \
    --profiling=false
}
apiserver_ready() {
  http_ok --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://$NODE_IP:6443/readyz"
}

# A silent node turns NotReady after 20 s rather than Kubernetes' 50 s: the node-loss tests wait
# for it twice. The kubelets renew their leases every 4 s (kubelet.yaml.in), so 20 s is five
# missed renewals, as 50 s is five of the default 10 s.
start_controllers() {
  start_daemon kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --node-monitor-grace-period=20s --node-monitor-period=2s \
    --kubeconfig="$KCFG/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$KCFG/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$KCFG/controller-manager.kubeconfig" \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --use-service-account-credentials=true --service-cluster-ip-range="$SERVICE_CIDR" \
    --bind-address=127.0.0.1 --leader-elect=false --profiling=false
  start_daemon kube-scheduler "$K8S_BIN/kube-scheduler" \
    --kubeconfig="$KCFG/scheduler.kubeconfig" \
    --authentication-kubeconfig="$KCFG/scheduler.kubeconfig" \
    --authorization-kubeconfig="$KCFG/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false --profiling=false
}

# --- node

start_containerd() { # N
  start_daemon "containerd$(node_suffix "$1")" containerd --config "$(node_dir "$1")/containerd/config.toml"
  wait_for "containerd$(node_suffix "$1")" 30 ctr --address "$(node_sock "$1")" version
}

start_kubelet() { # N
  local name d
  name=$(node_name "$1") d=$(node_dir "$1")
  start_daemon "kubelet$(node_suffix "$1")" "$K8S_BIN/kubelet" --config="$d/kubelet/config.yaml" \
    --kubeconfig="$KCFG/kubelet-$name.kubeconfig" --hostname-override="$name" \
    --node-ip="$NODE_IP" --root-dir="$d/kubelet" --node-labels="topology.kubernetes.io/zone=$(node_zone "$1")"
}

start_nodes_containerd() {
  local n
  for n in $(seq "$NODES"); do start_containerd "$n"; done
}

start_node_agents() {
  local n
  for n in $(seq "$NODES"); do start_kubelet "$n"; done
  start_daemon kube-proxy "$K8S_BIN/kube-proxy" --config="$S/kube-proxy.yaml"
}

start_coredns() {
  # CoreDNS runs on the host at the pods' clusterDNS address and reads Services and
  # EndpointSlices as user system:coredns.
  kubectl apply -f "$TEMPLATES/coredns-rbac.yaml" >/dev/null
  start_daemon coredns "$COREDNS" -conf "$S/coredns/Corefile"
}

node_ready() { # [NAME]
  [[ $(kubectl get node "${1:-$NODE_NAME}" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]
}
no_disk_pressure() {
  [[ $(kubectl get nodes -o jsonpath='{.items[*].status.conditions[?(@.type=="DiskPressure")].status}') != *True* ]]
}
nodes_ready() {
  local n
  for n in $(seq "$(node_count)"); do node_ready "$(node_name "$n")" || return 1; done
}
dns_answers() {
  [[ $(/bin/busybox nslookup kubernetes.default.svc.cluster.local "$DNS_IP") == *"Address: $API_SERVICE_IP"* ]]
}

# kube-router's firewall, on the host like CoreDNS, as user system:kube-router: it turns the
# NetworkPolicies into iptables rules and ipsets in the node's FORWARD path (bridged pod
# traffic passes there: bridge-nf-call-iptables). Nothing else of kube-router runs: no
# routing, no service proxy (kube-proxy stays), no CNI (the bridge plugin stays), no health
# or metrics port. Connections from the node's own addresses to pods are always admitted
# (the kubelet's probes; the e2e tests run on the node).
start_network_policies() {
  kubectl apply -f "$TEMPLATES/kube-router-rbac.yaml" >/dev/null
  start_daemon kube-router "$KUBE_ROUTER" --kubeconfig="$KCFG/kube-router.kubeconfig" \
    --hostname-override="$NODE_NAME" --run-firewall=true --run-router=false \
    --run-service-proxy=false --run-loadbalancer=false --enable-cni=false \
    --enable-pod-egress=false --enable-ipv4=true --enable-ipv6=false \
    --service-cluster-ip-range="$SERVICE_CIDR" --health-port=0 --metrics-port=0
  wait_for kube-router 60 network_policies_enforced
}
# network_policies_enforced: the firewall has put its chains in place.
network_policies_enforced() { iptables -S KUBE-ROUTER-FORWARD >/dev/null 2>&1; }

deploy_local_path_provisioner() {
  render local-path-storage.yaml "$S/local-path-storage.yaml"
  kubectl apply -f "$S/local-path-storage.yaml" >/dev/null
  kubectl -n local-path-storage rollout status deploy/local-path-provisioner --timeout=120s >/dev/null
}

wait_ready() {
  wait_for kube-controller-manager 60 http_ok -k https://127.0.0.1:10257/healthz
  wait_for kube-scheduler 60 http_ok -k https://127.0.0.1:10259/healthz
  wait_for kube-proxy 60 http_ok http://127.0.0.1:10256/healthz
  wait_for coredns 60 http_ok "http://$DNS_IP:8181/ready"
  wait_for coredns 30 dns_answers
  wait_for kubelet 120 nodes_ready
  # Pods cannot be created in a namespace until its default ServiceAccount exists.
  wait_for kube-controller-manager 60 kubectl -n default get serviceaccount default
}

do_up() {
  local t0=$SECONDS
  check_cluster_dir
  check_inputs
  step "clean up previous cluster" do_down_quiet
  check_disk
  step "packages" install_packages
  step "host network" setup_host_network
  step "ports free" check_ports
  step "certificates and configs" make_certs_and_configs
  step "etcd" start_etcd
  step "kube-apiserver started" start_apiserver
  step "registry (HTTP and TLS)" start_registry
  step "images (pause, busybox, local-path-provisioner)" build_images
  step "containerd of $NODES node(s)" start_nodes_containerd
  step "kube-apiserver ready" wait_for kube-apiserver 60 apiserver_ready
  step "controller-manager, scheduler, kubelet, kube-proxy, coredns started" start_rest
  step "nodes Ready, DNS answering" wait_ready
  step "local-path-provisioner (default StorageClass)" deploy_local_path_provisioner
  step "kube-router firewall (NetworkPolicy enforcement)" start_network_policies
  log "cluster up in $((SECONDS - t0))s"
  log "KUBECONFIG=$KUBECONFIG_OUT"
  log "registry: http://$REGISTRY_ADDR, and https://$REGISTRY_TLS_ADDR with SSL_CERT_FILE=$REGISTRY_CA_BUNDLE"
}
# (Plain sequences, not `a && b`: errexit does not apply to the left side of &&.)
make_certs_and_configs() {
  make_dirs
  make_cgroup_roots
  make_certificates
  make_configs
}
start_rest() {
  start_controllers
  start_node_agents
  start_coredns
}
do_down_quiet() {
  stop_processes
  unmount_all
  cleanup_network
  remove_state
}

# ---------------------------------------------------------------------------------------
# status

do_status() {
  local bad=0
  check() { # NAME HEALTH-COMMAND...
    local name=$1 state=ok
    shift
    if [[ -f $RUN/$name.pid ]] && ! daemon_alive "$name"; then
      state="DOWN (process not running)"
    elif ! "$@" >/dev/null 2>&1; then
      state="UNHEALTHY ($*)"
    fi
    [[ $state == ok ]] || bad=1
    printf '  %-26s %s\n' "$name" "$state"
  }
  if [[ ! -e $S/$MARKER ]]; then
    echo "no cluster in $S"
    return 1
  fi
  if ! local_addr "$NODE_IP" || ! local_addr "$DNS_IP"; then
    # Never probe 198.19.0.x unless it is on lo: the connection would leave the machine.
    echo "node/DNS addresses are not on lo: cluster is down"
    return 1
  fi
  check registry http_ok "http://$REGISTRY_ADDR/v2/"
  check registry-tls registry_tls_ok
  check etcd etcd_healthy
  check kube-apiserver apiserver_ready
  check kube-controller-manager http_ok -k https://127.0.0.1:10257/healthz
  check kube-scheduler http_ok -k https://127.0.0.1:10259/healthz
  local n
  for n in $(seq "$(node_count)"); do
    check "containerd$(node_suffix "$n")" ctr --address "$(node_sock "$n")" version
    check "kubelet$(node_suffix "$n")" http_ok "http://127.0.0.1:$(kubelet_healthz_port "$n")/healthz"
    check "node $(node_name "$n") Ready" node_ready "$(node_name "$n")"
  done
  check "no node under DiskPressure" no_disk_pressure
  printf '  %-26s %s GiB\n' "disk free" "$(free_gib "$S")"
  check kube-proxy http_ok http://127.0.0.1:10256/healthz
  check coredns http_ok "http://$DNS_IP:8181/ready"
  check local-path-provisioner kubectl -n local-path-storage rollout status deploy/local-path-provisioner --timeout=1s
  check kube-router network_policies_enforced
  echo "KUBECONFIG=$KUBECONFIG_OUT"
  return $bad
}

# ---------------------------------------------------------------------------------------
# node-stop, node-start

# node_runtime_pids N: node N's kubelet, containerd and containerd's shims (a shim names
# its containerd's socket after -address).
node_runtime_pids() {
  local sock p args exe
  sock=$(node_sock "$1")
  for p in $(our_pids); do
    mapfile -d '' args 2>/dev/null <"/proc/$p/cmdline" || continue
    exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
    case ${exe##*/} in
    kubelet) [[ " ${args[*]} " == *" --hostname-override=$(node_name "$1") "* ]] && echo "$p" ;;
    containerd) [[ " ${args[*]} " == *" $(node_dir "$1")/containerd/config.toml "* ]] && echo "$p" ;;
    containerd-shim*) [[ " ${args[*]} " == *" -address $sock "* ]] && echo "$p" ;;
    esac
  done
  return 0
}

do_node_stop() {
  local n pids
  [[ -e $S/$MARKER ]] || die "no cluster in $S"
  n=$(node_number "$1")
  # All at once, as a machine that loses power: the kubelet cannot react to the rest.
  for _ in $(seq 50); do
    pids=$(node_runtime_pids "$n")
    [[ -n $pids ]] || break
    # shellcheck disable=SC2086 # one pid per word
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1
  done
  [[ -z $(node_runtime_pids "$n") ]] || die "could not stop $1: $(node_runtime_pids "$n" | xargs)"
  kill_pod_processes "$n"
  log "$1 stopped: its kubelet, containerd and pod processes are gone; its state is kept"
}

do_node_start() {
  local n
  [[ -e $S/$MARKER ]] || die "no cluster in $S"
  n=$(node_number "$1")
  [[ -z $(node_runtime_pids "$n") ]] || die "$1 is running"
  NODES=$(node_count)
  make_cgroup_roots
  start_containerd "$n"
  start_kubelet "$n"
  wait_for "kubelet$(node_suffix "$n")" 60 http_ok "http://127.0.0.1:$(kubelet_healthz_port "$n")/healthz"
  log "$1 started; the API server sees it Ready within seconds"
}

# ---------------------------------------------------------------------------------------

ACTION=${1:-}
case $ACTION in
up) do_up ;;
down) do_down ;;
status) do_status ;;
node-stop | node-start)
  [[ -n ${2:-} ]] || die "usage: $0 $ACTION NODE"
  "do_${ACTION/-/_}" "$2"
  ;;
*)
  echo "usage: $0 up|down|status|node-stop NODE|node-start NODE" >&2
  exit 2
  ;;
esac
