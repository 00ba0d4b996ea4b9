#!/usr/bin/env bash
# latency.sh: add network latency between given pods (or any hosts on a Linux bridge of this
# machine) for a bounded time, without sch_netem, which our kernel lacks. iptables sends the
# packets to an NFQUEUE queue and nfdelay (hack/tools/nfdelay) holds each one for the delay.
#
#   hack/latency.sh add <queue-num> <delay> <duration> <ip> <ip>...
#   hack/latency.sh remove <queue-num>
#   hack/latency.sh status <queue-num>
#
# add     start nfdelay on <queue-num> (delay and duration in Go syntax: 200ms, 10m), wait
#         until it has bound the queue, then send to it every packet whose source AND
#         destination are both among the given IPv4 addresses (two or more, exact addresses)
#         as it is forwarded. Each direction is delayed once, so a round trip grows by twice
#         <delay>. Nothing else is touched: one rule per ordered pair of distinct addresses,
#         in chain ETCDPILOT-LATENCY-<queue-num> of the mangle table, jumped to from FORWARD.
#         Fails (and undoes what it did) if that chain already exists: run remove first.
# remove  delete the rules and the chain, then stop nfdelay (which accepts every packet it
#         still holds). Succeeds when there is nothing to remove; safe to run any number of
#         times.
# status  print the rules with their counters and whether nfdelay runs.
#
# Bounded: nfdelay exits by itself after <duration> even if remove never runs. The rules use
# --queue-bypass, so once nothing is bound to the queue they let every packet through
# undelayed; remove must still run to delete them.
#
# Bridged traffic (pods on one bridge, e.g. cni0) reaches iptables only with br_netfilter
# loaded and net.bridge.bridge-nf-call-iptables=1. The local cluster sets both (kube-proxy
# needs them for Service traffic); add sets them if not, and remove puts back a 0 it found
# once no other latency chain is left.
#
# Configured through the environment:
#   NFDELAY      path of the nfdelay binary (add only; the Makefile builds it into bin/)
#   LATENCY_DIR  nfdelay's pid file and log (default /tmp/etcdpilot-latency-<queue-num>)
#   IPTABLES     iptables command (default iptables)
set -euo pipefail

# iptables and sysctl live in the sbin directories, which a minimal PATH may lack.
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin
IPTABLES=${IPTABLES:-iptables}
readonly CHAIN_PREFIX=ETCDPILOT-LATENCY-
readonly BR_SYSCTL=/proc/sys/net/bridge/bridge-nf-call-iptables

die() { echo "latency.sh: $*" >&2; exit 1; }
log() { echo "latency.sh: $*" >&2; }
fail() { log "$*"; return 1; } # in add, after its ERR trap is set: undo and exit
ipt() { "$IPTABLES" -w -t mangle "$@"; }

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
  exit 2
}

check_queue() {
  if [[ ! $1 =~ ^[0-9]{1,5}$ ]] || ((10#$1 > 65535)); then die "queue number '$1' is not 0-65535"; fi
}

check_duration() { # what value
  [[ $2 =~ ^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$ ]] || die "$1 '$2' is not a duration such as 200ms or 10m"
}

# A plain IPv4 host address: four decimal octets, no prefix length, not 0.0.0.0 or a
# broadcast or multicast address.
check_ip() {
  local ip=$1 o
  [[ $ip =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] || die "'$ip' is not an IPv4 address"
  for o in "${BASH_REMATCH[@]:1}"; do
    [[ $o == 0 || $o != 0* ]] || die "'$ip': leading zeros are ambiguous"
    ((o <= 255)) || die "'$ip' is not an IPv4 address"
  done
  ((BASH_REMATCH[1] != 0 && BASH_REMATCH[1] < 224)) || die "'$ip' is not a unicast host address"
  [[ $ip != 255.255.255.255 ]] || die "'$ip' is not a host address"
}

chain_exists() { ipt -S "$1" >/dev/null 2>&1; }

# The pid of our nfdelay for this queue, if it runs: from its pid file (written once it has
# bound the queue) or the one we started, and only if that process is nfdelay --queue <q>.
running_pid() { # dir queue
  local f pid args
  for f in "$1/nfdelay.pid" "$1/nfdelay.started"; do
    [[ -s $f ]] || continue
    pid=$(<"$f")
    [[ $pid =~ ^[0-9]+$ ]] || continue
    args=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || continue
    [[ $args == *nfdelay* && " $args " == *" --queue $2 "* ]] || continue
    echo "$pid"
    return 0
  done
  return 1
}

ensure_bridge_netfilter() { # dir
  if [[ ! -e $BR_SYSCTL ]]; then
    modprobe br_netfilter 2>/dev/null || true
    [[ -e $BR_SYSCTL ]] || die "br_netfilter is not available: bridged traffic would not reach iptables"
  fi
  if [[ $(<"$BR_SYSCTL") != 1 ]]; then
    cat "$BR_SYSCTL" >"$1/bridge-nf-call-iptables.orig"
    echo 1 >"$BR_SYSCTL"
    log "set net.bridge.bridge-nf-call-iptables=1 (was $(<"$1/bridge-nf-call-iptables.orig"))"
  fi
}

restore_bridge_netfilter() { # dir
  local orig=$1/bridge-nf-call-iptables.orig
  [[ -f $orig ]] || return 0
  # (No `| grep -q`: with pipefail the writer's SIGPIPE would fail a matching check.)
  if [[ $'\n'$(ipt -S 2>/dev/null) == *$'\n'"-N $CHAIN_PREFIX"* ]]; then
    log "another latency chain is active: leaving net.bridge.bridge-nf-call-iptables=1"
  else
    cat "$orig" >"$BR_SYSCTL"
    log "restored net.bridge.bridge-nf-call-iptables=$(<"$orig")"
  fi
  rm -f "$orig"
}

cmd_add() {
  (($# >= 5)) || usage
  local queue=$1 delay=$2 duration=$3
  shift 3
  check_queue "$queue"
  check_duration delay "$delay"
  check_duration duration "$duration"
  local ips=() ip seen=" "
  for ip in "$@"; do
    check_ip "$ip"
    [[ $seen != *" $ip "* ]] || continue
    seen+="$ip "
    ips+=("$ip")
  done
  ((${#ips[@]} >= 2)) || die "need at least two distinct addresses"
  [[ -n ${NFDELAY:-} && -x $NFDELAY ]] || die "NFDELAY must name the nfdelay binary (make builds it into bin/)"
  command -v "$IPTABLES" >/dev/null || die "$IPTABLES not found"

  local chain=$CHAIN_PREFIX$queue dir=${LATENCY_DIR:-/tmp/etcdpilot-latency-$queue}
  chain_exists "$chain" && die "chain $chain already exists (mangle): run '$0 remove $queue' first"
  mkdir -p "$dir"
  local pid
  if pid=$(running_pid "$dir" "$queue"); then
    die "nfdelay for queue $queue already runs (pid $pid): run '$0 remove $queue' first"
  fi
  rm -f "$dir/nfdelay.pid" "$dir/nfdelay.started"
  ensure_bridge_netfilter "$dir"

  # From here on, any failure undoes everything.
  trap 'log "add failed; removing what it made"; cmd_remove "$queue" >/dev/null || true' ERR
  set -E
  # In its own session, so the caller's signals to its process group do not reach it; it
  # stops by itself after $duration.
  setsid "$NFDELAY" --queue "$queue" --delay "$delay" --for "$duration" --pid-file "$dir/nfdelay.pid" \
    </dev/null >"$dir/nfdelay.log" 2>&1 &
  echo $! >"$dir/nfdelay.started"
  local started=$! i
  for ((i = 0; i < 300; i++)); do
    [[ -s $dir/nfdelay.pid ]] && break
    if ! kill -0 "$started" 2>/dev/null; then
      cat "$dir/nfdelay.log" >&2 || true
      fail "nfdelay exited before binding queue $queue"
    fi
    sleep 0.1
  done
  [[ -s $dir/nfdelay.pid ]] || fail "nfdelay did not bind queue $queue within 30s"

  # The chain is complete before FORWARD jumps to it.
  ipt -N "$chain"
  local src dst
  for src in "${ips[@]}"; do
    for dst in "${ips[@]}"; do
      [[ $src != "$dst" ]] || continue
      ipt -A "$chain" -s "$src/32" -d "$dst/32" -m comment --comment "etcdpilot latency $delay" \
        -j NFQUEUE --queue-num "$queue" --queue-bypass
    done
  done
  ipt -I FORWARD 1 -j "$chain"
  trap - ERR
  echo "latency: $delay each way between ${ips[*]} on queue $queue for at most $duration (nfdelay pid $(<"$dir/nfdelay.pid"), log $dir/nfdelay.log)"
}

cmd_remove() {
  (($# == 1)) || usage
  local queue=$1
  check_queue "$queue"
  local chain=$CHAIN_PREFIX$queue dir=${LATENCY_DIR:-/tmp/etcdpilot-latency-$queue} stopped=0
  # Rules first, so no new packet is queued; then nfdelay accepts what it holds and exits.
  if command -v "$IPTABLES" >/dev/null; then
    while ipt -C FORWARD -j "$chain" 2>/dev/null; do
      ipt -D FORWARD -j "$chain"
    done
    if chain_exists "$chain"; then
      ipt -F "$chain"
      ipt -X "$chain"
    fi
  fi
  local pid i
  if pid=$(running_pid "$dir" "$queue"); then
    stopped=1
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "nfdelay (pid $pid) did not stop within 10s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$dir/nfdelay.pid" "$dir/nfdelay.started"
  [[ ! -d $dir ]] || restore_bridge_netfilter "$dir"
  # The summary of the nfdelay we stopped.
  if ((stopped)) && [[ -f $dir/nfdelay.log ]]; then
    grep -h '^nfdelay: queue ' "$dir/nfdelay.log" | tail -n 1 || true
  fi
}

cmd_status() {
  (($# == 1)) || usage
  local queue=$1
  check_queue "$queue"
  local chain=$CHAIN_PREFIX$queue dir=${LATENCY_DIR:-/tmp/etcdpilot-latency-$queue} pid
  if chain_exists "$chain"; then
    ipt -L "$chain" -n -v -x
  else
    echo "no chain $chain"
  fi
  if pid=$(running_pid "$dir" "$queue"); then
    echo "nfdelay runs (pid $pid)"
  else
    echo "nfdelay does not run"
  fi
}

(($# >= 1)) || usage
cmd=$1
shift
case $cmd in
  add) cmd_add "$@" ;;
  remove) cmd_remove "$@" ;;
  status) cmd_status "$@" ;;
  *) usage ;;
esac
