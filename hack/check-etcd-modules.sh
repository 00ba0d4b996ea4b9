#!/usr/bin/env bash
# Checks that each older-patch etcd module (hack/tools/etcd-vX.Y.Z) selects the same version
# as its minor's module (hack/tools/etcd-vX.Y) of every module both use, etcd's own
# (go.etcd.io/etcd/...) excepted. Then the two builds share every compiled package but
# etcd's, and a fresh machine compiles gRPC, OpenTelemetry and golang.org/x once per minor.
# To align a module after a bump: go get each listed module@version in the patch module, then
# go mod tidy.
set -euo pipefail
cd "$(dirname "$0")/tools"
# mods DIR: "module version" of every module DIR's build selects, etcd's own left out.
mods() { (cd "$1" && go list -m all) | awk 'NR > 1 && $1 !~ /^go\.etcd\.io\/etcd\// { print $1, $2 }' | sort; }
rc=0
for patch in etcd-v*.*.*/; do
  patch=${patch%/}
  minor=${patch%.*}
  [[ -f $minor/go.mod ]] || { echo "$patch: no module $minor for its minor" >&2; rc=1; continue; }
  minor_mods=$(mods "$minor") || { echo "$minor: go list -m all failed" >&2; rc=1; continue; }
  patch_mods=$(mods "$patch") || { echo "$patch: go list -m all failed" >&2; rc=1; continue; }
  diffs=$(join <(echo "$minor_mods") <(echo "$patch_mods") | awk '$2 != $3 { print "  " $1 ": " $3 " (" m ": " $2 ")" }' m="$minor")
  if [[ -n $diffs ]]; then
    echo "$patch selects other versions than $minor of modules both use:" >&2
    echo "$diffs" >&2
    rc=1
  fi
done
exit "$rc"
