#!/usr/bin/env bash
# scrape-etcd.sh VERSION OUTDIR: start a 3-member etcd cluster of release VERSION (the
# binaries in bin/etcd-VERSION, or ETCD_DIR) on 127.0.0.1, make it do what the alerting
# rules and the dashboard of internal/monitoring look at, and write each member's /metrics
# to OUTDIR/etcd-VERSION-memberN.prom, for promcheck (hack/tools/prometheus/promcheck) to
# check that every etcd metric they name is one that release exports.
#
# The members run as the operator's would, plain HTTP, with --metrics=extensive (the
# gRPC latency histogram of etcdGRPCRequestsSlow exists only then). Some metric families
# appear only once something has happened; the script makes it happen:
# - etcd_network_peer_sent_failures_total (etcdMembersDown): one member is stopped for a few
#   seconds, so the leader fails to send to it, then started again;
# - etcd_network_peer_round_trip_time_seconds (etcdMemberCommunicationSlow): etcd's peer
#   prober records it 5 s after a peer is first reached, so the script waits for it;
# - etcd_network_peer_sent_bytes_total / received_bytes_total, and the gRPC counters of
#   KV/Txn/Range: puts, gets, a transaction and a failing request.
# Every family the script waits for is checked here, so that a release that stops
# exporting one fails loudly rather than through a missing name in promcheck.
#
# Everything is bounded in time (TIMEOUT seconds in all, 90 by default) and every process
# the script starts is killed on exit, whatever the exit. Ports are free high ports of
# 127.0.0.1; data lives in a temporary directory that is removed.
set -euo pipefail

usage() { echo "usage: $0 VERSION OUTDIR (VERSION like v3.6.16)" >&2; exit 2; }
[ $# -eq 2 ] || usage
version=$1
outdir=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
bindir=${ETCD_DIR:-$root/bin/etcd-$version}
etcd=$bindir/etcd
etcdctl=$bindir/etcdctl
timeout_total=${TIMEOUT:-90}
[ -x "$etcd" ] && [ -x "$etcdctl" ] || { echo "$0: no etcd/etcdctl in $bindir (make tools)" >&2; exit 1; }
mkdir -p "$outdir"

work=$(mktemp -d "${TMPDIR:-/tmp}/scrape-etcd.XXXXXX")
pids=()
watchdog=
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do
    [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do
    [ -n "$p" ] && wait "$p" 2>/dev/null || true
  done
  [ -n "$watchdog" ] && kill "$watchdog" 2>/dev/null || true
  if [ $rc -ne 0 ] && [ -d "$work" ]; then
    for f in "$work"/m*.log; do
      [ -f "$f" ] && { echo "--- last lines of $(basename "$f")" >&2; tail -n 15 "$f" >&2; }
    done
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# The watchdog ends the whole script (through the traps above) after timeout_total.
# Its sleep is killed with it, so that nothing is left holding the script's output open.
(
  trap 'kill "$s" 2>/dev/null; exit 0' TERM
  sleep "$timeout_total" &
  s=$!
  wait "$s"
  echo "$0: $version: gave up after ${timeout_total}s" >&2
  kill -TERM $$
) </dev/null >/dev/null &
watchdog=$!

log() { echo "scrape-etcd $version: $*" >&2; }

# free_port NAME: set variable NAME to a TCP port of 127.0.0.1 that nothing listens on and
# that this script has not handed out yet. (It must not run in a subshell, $(...): the
# ports handed out are remembered in this shell, so that no two members get the same one.)
taken=" "
# PORT_LOW and PORT_SPAN bound the ports: scripts that run at once (make test-monitoring runs
# one per etcd minor) get ranges of their own, so that no two pick a port at the same time.
port_low=${PORT_LOW:-20000} port_span=${PORT_SPAN:-12000}
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((port_low + RANDOM % port_span))
    case $taken in *" $p "*) continue ;; esac
    if ! ss -Htln "sport = :$p" | grep -q .; then
      taken="$taken$p "
      printf -v "$1" '%s' "$p"
      return
    fi
  done
  echo "$0: no free port" >&2
  return 1
}

n=3
declare -a peer client metrics
for i in $(seq 1 $n); do
  free_port "peer[$i]"
  free_port "client[$i]"
  free_port "metrics[$i]"
done
initial=
for i in $(seq 1 $n); do
  initial="${initial:+$initial,}m$i=http://127.0.0.1:${peer[i]}"
done
endpoints=
for i in $(seq 1 $n); do
  endpoints="${endpoints:+$endpoints,}http://127.0.0.1:${client[i]}"
done

start_member() {
  local i=$1 state=$2
  "$etcd" --name "m$i" --data-dir "$work/m$i.etcd" \
    --listen-peer-urls "http://127.0.0.1:${peer[i]}" --initial-advertise-peer-urls "http://127.0.0.1:${peer[i]}" \
    --listen-client-urls "http://127.0.0.1:${client[i]}" --advertise-client-urls "http://127.0.0.1:${client[i]}" \
    --listen-metrics-urls "http://127.0.0.1:${metrics[i]}" --metrics extensive \
    --initial-cluster "$initial" --initial-cluster-state "$state" --initial-cluster-token "scrape-$$" \
    --heartbeat-interval 100 --election-timeout 1000 --log-level warn \
    >>"$work/m$i.log" 2>&1 &
  pids[i]=$!
}

metrics_of() { curl -fsS --max-time 5 "http://127.0.0.1:${metrics[$1]}/metrics"; }

# wait_until SECONDS WHAT COMMAND...: run COMMAND every half second until it succeeds.
wait_until() {
  local limit=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { log "timed out after ${limit}s waiting for $what"; return 1; }
    sleep 0.5
  done
}

ctl() { timeout 10 "$etcdctl" --endpoints "$endpoints" --dial-timeout 3s --command-timeout 5s "$@"; }
member_ctl() { local i=$1; shift; timeout 10 "$etcdctl" --endpoints "http://127.0.0.1:${client[i]}" --dial-timeout 3s --command-timeout 5s "$@"; }

# has_family I NAME: member I exports a sample of family NAME (a histogram's _bucket counts).
# (The scrape is read whole first: grep -q would end curl's pipe early, which pipefail fails.)
has_family() {
  local m
  m=$(metrics_of "$1") || return 1
  grep -Eq "^$2(_bucket)?(\{| )" <<<"$m"
}
# any_has_family NAME: some member exports NAME.
any_has_family() {
  local i
  for i in $(seq 1 $n); do has_family "$i" "$1" && return 0; done
  return 1
}

started=$SECONDS
for i in $(seq 1 $n); do start_member "$i" new; done
for i in $(seq 1 $n); do
  wait_until 30 "member m$i to be healthy" member_ctl "$i" endpoint health
done
log "cluster up in $((SECONDS - started))s"

# Traffic: puts, gets, a transaction (both branches), a delete, and requests that fail.
for k in $(seq 1 20); do ctl put "/scrape/key$k" "value$k" >/dev/null; done
ctl get --prefix /scrape/ >/dev/null
ctl get --consistency=s /scrape/key1 >/dev/null
printf 'value("/scrape/key1") = "value1"\n\nput /scrape/txn ok\n\nput /scrape/txn failed\n\n' | ctl txn >/dev/null
printf 'value("/scrape/key1") = "other"\n\nput /scrape/txn ok\n\nput /scrape/txn failed\n\n' | ctl txn >/dev/null
ctl del /scrape/key20 >/dev/null
# A read at a compacted revision fails (OutOfRange): a request that etcd answers with an error.
ctl compact 5 >/dev/null
if ctl get --rev 2 /scrape/key1 >/dev/null 2>&1; then
  log "expected a read at a compacted revision to fail"
  exit 1
fi

# One member down for a few seconds: the leader fails to send to it
# (etcd_network_peer_sent_failures_total), then it comes back.
log "stopping m3 for a few seconds"
kill -TERM "${pids[3]}"
wait "${pids[3]}" 2>/dev/null || true
pids[3]=
ctl put /scrape/while-m3-down yes >/dev/null
wait_until 15 "a member to report send failures" any_has_family etcd_network_peer_sent_failures_total
start_member 3 existing
wait_until 30 "m3 to be healthy again" member_ctl 3 endpoint health
ctl put /scrape/after-m3-back yes >/dev/null

# The peer prober records round trips 5 s after it first reaches a peer (m3 restarted too).
for i in $(seq 1 $n); do
  wait_until 20 "m$i to record peer round trips" has_family "$i" etcd_network_peer_round_trip_time_seconds
done

for i in $(seq 1 $n); do
  out="$outdir/etcd-$version-member$i.prom"
  metrics_of "$i" >"$out.tmp"
  mv "$out.tmp" "$out"
done
log "wrote $outdir/etcd-$version-member{1..$n}.prom in $((SECONDS - started))s"
