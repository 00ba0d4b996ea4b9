#!/usr/bin/env bash
# check-clean.sh: assert that `hack/local-cluster.sh down` left nothing of the cluster on
# this machine. Exits non-zero naming every leftover. Uses the same CLUSTER_DIR as the
# cluster script (default /var/lib/etcdpilot-cluster).
set -euo pipefail

S=${CLUSTER_DIR:-/var/lib/etcdpilot-cluster}
export PATH=$PATH:/usr/sbin:/sbin
left=()

# Processes: any of the cluster's programs whose command line mentions the state directory.
for p in /proc/[0-9]*; do
  mapfile -d '' args 2>/dev/null <"$p/cmdline" || continue
  [[ "${args[*]}" == *"$S"* ]] || continue
  exe=$(readlink "$p/exe" 2>/dev/null) || continue
  case ${exe##*/} in
  etcd* | kube-* | kubelet* | containerd* | runc* | coredns* | crane* | local-path-provisioner* | registry-tls*)
    left+=("process ${p#/proc/}: ${args[*]}")
    ;;
  esac
done
# Pod cgroups of node1 (at the root) and the cgroup roots of the other nodes.
for cg in /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/etcdpilot-node*; do
  [[ ! -e $cg ]] || left+=("cgroup $cg")
done

# Mounts under the state directory, or of the kinds the cluster makes elsewhere.
while read -r _ target fstype _; do
  case $target in
  "$S" | "$S"/* | /run/netns/cni-* | /var/run/netns/cni-*) left+=("mount $target ($fstype)") ;;
  esac
done </proc/self/mounts

# Addresses and interfaces.
for a in 198.19.0.1 198.19.0.10; do
  if [[ $(ip -o -4 addr show dev lo) == *" $a/"* ]]; then left+=("address $a on lo"); fi
done
# The nodes' bridges, cni0 (node1), cni1 (node2), ...
while read -r ifname; do
  [[ ! $ifname =~ ^cni[0-9]$ ]] || left+=("interface $ifname")
done < <(ip -o link show type bridge 2>/dev/null | awk -F': ' '{ print $2 }')
# Pod veths (the CNI bridge plugin names them veth + 8 hex digits).
while read -r ifname; do
  [[ ! $ifname =~ ^veth[0-9a-f]{8}$ ]] || left+=("interface $ifname")
done < <(ip -o link show type veth 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1)
# (No `| grep -q`: with pipefail the writer's SIGPIPE would fail a matching check.)
addrs=$(ip -o -4 addr show)
if [[ $addrs == *' 198.18.'* ]]; then left+=("an address in 198.18.0.0/16"); fi
routes=$(ip -4 route show | grep -E '198\.1[89]\.' || true)
if [[ -n $routes ]]; then left+=("routes to 198.18/198.19: $(xargs <<<"$routes")"); fi

# iptables (all tables, both families): our chains and any rule naming our ranges.
for save in iptables-save ip6tables-save; do
  command -v "$save" >/dev/null || continue
  while IFS= read -r line; do
    left+=("$save: $line")
  done < <("$save" 2>/dev/null | grep -E '(KUBE|CNI|ETCDPILOT)-|198\.18\.|198\.19\.' || true)
done

# nftables tables: kube-proxy's own, in case a kube-proxy ran in (or cleaned up for) nftables
# mode, and the guard that keeps pod traffic on this machine.
if command -v nft >/dev/null; then
  tables=$(nft list tables 2>/dev/null || true)
  [[ $tables != *kube-proxy* ]] || left+=("nftables table kube-proxy")
  [[ $tables != *etcdpilot_guard* ]] || left+=("nftables table etcdpilot_guard")
fi

# kube-router's ipsets.
if command -v ipset >/dev/null; then
  while IFS= read -r set; do
    left+=("ipset $set")
  done < <(ipset list -n 2>/dev/null | grep -E '^(inet6:)?(KUBE-|kube-router-)' || true)
fi

# Files.
[[ ! -e $S ]] || left+=("directory $S")
for f in /var/lib/cni/results/* /var/log/containers/* /run/containerd/s/*; do
  [[ ! -e $f && ! -L $f ]] || left+=("file $f")
done

if ((${#left[@]})); then
  echo "check-clean: the local cluster left these behind:" >&2
  printf '  %s\n' "${left[@]}" >&2
  exit 1
fi
echo "check-clean: nothing of the local cluster is left"
