#!/usr/bin/env bash
# build-image.sh: assemble a single-layer linux/amd64 OCI image from a root filesystem
# directory and push it to a registry, with no container daemon (go-containerregistry's crane).
#
#   hack/build-image.sh -t REF [-e ENTRYPOINT] [-c CMD] [-u USER] [-w WORKDIR] [-E KEY=VAL]... [-l KEY=VAL]... [-b BASE] ROOTFS
#
# -b puts the layer on top of image BASE (in the same registry) instead of an empty base; the
# image keeps BASE's configuration unless overridden. -E sets an environment variable, -l an image label (OLM reads bundle and catalog metadata
# from labels).
#
# ENTRYPOINT and CMD are comma-separated argv lists, as crane mutate takes them.
# Every file is stored owned by 0:0; a non-root USER can read and execute them, and a
# directory it must write to needs mode 1777 (like /tmp) in ROOTFS.
# CRANE names the crane binary (default: crane on PATH). The registry is reached over plain
# HTTP (--insecure), which is what the local registry on localhost:5000 speaks.
set -euo pipefail

crane=${CRANE:-crane}
ref= entrypoint= cmd= user= workdir=
envs=()
labels=()
base=
while getopts "t:e:c:u:w:E:l:b:" opt; do
  case $opt in
    t) ref=$OPTARG ;;
    e) entrypoint=$OPTARG ;;
    c) cmd=$OPTARG ;;
    u) user=$OPTARG ;;
    w) workdir=$OPTARG ;;
    E) envs+=(--env "$OPTARG") ;;
    l) labels+=(--label "$OPTARG") ;;
    b) base=$OPTARG ;;
    *) echo "usage: $0 -t REF [-e ENTRYPOINT] [-c CMD] [-u USER] [-w WORKDIR] [-E K=V]... [-l K=V]... [-b BASE] ROOTFS" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
rootfs=${1:?rootfs directory required}
[[ -n $ref ]] || { echo "build-image.sh: -t REF is required" >&2; exit 2; }
[[ -d $rootfs ]] || { echo "build-image.sh: $rootfs is not a directory" >&2; exit 2; }

layer=$(mktemp --suffix=.tar)
# Reproducible layer: fixed owner, sorted entries, fixed mtime.
tar --owner=0 --group=0 --numeric-owner --sort=name --mtime='2020-01-01 00:00:00Z' \
  -C "$rootfs" -cf "$layer" .

# crane logs every blob it pushes to stderr: keep that for failures only.
log=$(mktemp)
trap 'rm -f "$layer" "$log"' EXIT
crane_quiet() { "$crane" "$@" >/dev/null 2>"$log" || { cat "$log" >&2; return 1; }; }
if [[ -n $base ]]; then
  crane_quiet append --insecure -b "$base" -f "$layer" -t "$ref"
else
  crane_quiet append --insecure --oci-empty-base -f "$layer" -t "$ref"
fi
args=(--insecure --set-platform linux/amd64 -t "$ref")
[[ -n $entrypoint ]] && args+=(--entrypoint "$entrypoint")
[[ -n $cmd ]] && args+=(--cmd "$cmd")
[[ -n $user ]] && args+=(--user "$user")
[[ -n $workdir ]] && args+=(--workdir "$workdir")
crane_quiet mutate "${args[@]}" "${envs[@]}" "${labels[@]}" "$ref"
echo "pushed $ref"
