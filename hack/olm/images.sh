#!/usr/bin/env bash
# images.sh: build and push every image OLM v0 and operator-sdk pull at run time, so that
# nothing is ever pulled from outside this machine. Daemon-less (hack/build-image.sh,
# crane); each image is one layer over an empty base, built on Debian's static busybox.
#
#   hack/olm/images.sh
#
# Configured through the environment (hack/olm/olm.mk sets all of these):
#   CRANE, BUILD_IMAGE                 crane and hack/build-image.sh
#   BUSYBOX                            a static busybox binary (Debian's busybox-static)
#   OLM_BIN                            directory holding olm catalog package-server copy-content cpb
#   OPM, GRPC_HEALTH_PROBE, SCORECARD_TEST   those binaries
#   WORK                               scratch directory for the root filesystems
#   BUSYBOX_IMAGE OLM_IMAGE OLM_OPM_IMAGE SCORECARD_UNTAR_IMAGE SCORECARD_TEST_IMAGE UBI9_SHIM_IMAGE
#                                      the references to push
#
# Up-to-date images are skipped in milliseconds: every image carries a label with a hash of
# its inputs (this script, the image's settings, and the path, size and mtime of every file
# copied in). An image is rebuilt only when the registry lacks it or holds other inputs, so
# a fresh cluster (whose registry starts empty) and a rebuilt binary both lead to a push.
set -euo pipefail

: "${CRANE:?}" "${BUILD_IMAGE:?}" "${BUSYBOX:?}" "${OLM_BIN:?}" "${OPM:?}" "${GRPC_HEALTH_PROBE:?}"
: "${SCORECARD_TEST:?}" "${WORK:?}" "${BUSYBOX_IMAGE:?}" "${OLM_IMAGE:?}" "${OLM_OPM_IMAGE:?}"
: "${SCORECARD_UNTAR_IMAGE:?}" "${SCORECARD_TEST_IMAGE:?}" "${UBI9_SHIM_IMAGE:?}"

readonly INPUTS_LABEL=io.etcdpilot.build.inputs
readonly PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
readonly OLM_BINARIES=(olm catalog package-server copy-content cpb)
SELF_HASH=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-64)
readonly SELF_HASH

log() { printf '[olm-images] %s\n' "$*"; }

# inputs_key FILE... -- SETTING...: hash of the files' identity and the image settings.
inputs_key() {
  local f
  {
    echo "$SELF_HASH"
    while (($#)) && [[ $1 != -- ]]; do
      f=$1
      shift
      stat -L -c '%n %s %Y' "$f"
    done
    shift || true
    printf '%s\n' "$@"
  } | sha256sum | cut -c1-16
}

# up_to_date REF KEY: the registry holds REF built from these inputs.
up_to_date() {
  local labels
  labels=$("$CRANE" config --insecure "$1" 2>/dev/null) || return 1
  [[ $labels == *"\"$INPUTS_LABEL\":\"$2\""* ]]
}

# busybox_root DIR: a minimal userland: busybox and its applet links, /tmp (1777),
# /etc/passwd and /etc/group with root, a non-root 1001 (the UID OLM's workloads and the
# scorecard images run as) and nobody.
busybox_root() {
  local r=$1 applet
  rm -rf "$r"
  mkdir -p "$r/bin" "$r/etc" "$r/root" "$r/tmp"
  chmod 1777 "$r/tmp"
  cp "$BUSYBOX" "$r/bin/busybox"
  for applet in $("$BUSYBOX" --list-full); do
    [[ $applet == bin/busybox ]] && continue
    mkdir -p "$r/${applet%/*}"
    ln -s /bin/busybox "$r/$applet"
  done
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'default:x:1001:0:default:/tmp:/bin/sh' \
    'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$r/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' >"$r/etc/group"
}

# image NAME REF FILES... -- BUILD-IMAGE-ARGS...: build REF from a busybox root plus
# FILES (each "SOURCE:DEST"; a DEST ending in / is an empty directory), unless it is up to date.
image() {
  local name=$1 ref=$2
  shift 2
  local files=() sources=()
  while (($#)) && [[ $1 != -- ]]; do
    files+=("$1")
    [[ ${1%%:*} == '' ]] || sources+=("${1%%:*}")
    shift
  done
  shift
  local key
  key=$(inputs_key "$BUSYBOX" "${sources[@]}" -- "$ref" "${files[@]}" "$@")
  if up_to_date "$ref" "$key"; then
    log "$name: $ref is up to date"
    return 0
  fi
  local r=$WORK/$name f src dest
  busybox_root "$r"
  for f in "${files[@]}"; do
    src=${f%%:*} dest=${f#*:}
    if [[ $dest == */ ]]; then
      mkdir -p "$r/$dest"
    else
      mkdir -p "$(dirname "$r/$dest")"
      cp "$src" "$r/$dest"
    fi
  done
  CRANE=$CRANE "$BUILD_IMAGE" -t "$ref" -E "$PATH_ENV" -l "$INPUTS_LABEL=$key" "$@" "$r" >/dev/null
  rm -rf "$r"
  log "$name: pushed $ref"
}

mkdir -p "$WORK"

# A shell image for tests and helper pods (also scorecard's --storage-image).
image busybox "$BUSYBOX_IMAGE" -- -c sh

# OLM's own image: olm-operator, catalog-operator, packageserver, and the "util" image of
# bundle unpack Jobs (`/bin/cp -Rv /bin/cpb /util/cpb`, hence busybox's cp) and of
# extractContent catalogs (copy-content).
olm_files=()
for b in "${OLM_BINARIES[@]}"; do olm_files+=("$OLM_BIN/$b:/bin/$b"); done
image olm "$OLM_IMAGE" "${olm_files[@]}" -- -e /bin/olm -u 1001

# opm: catalog registry pods (`opm serve`, exec probes run grpc_health_probe), the
# `extract` container of bundle unpack Jobs, and the index image of `operator-sdk run
# bundle`, which needs the configs label AND an existing (empty) /configs directory.
image opm "$OLM_OPM_IMAGE" "$OPM:/bin/opm" "$GRPC_HEALTH_PROBE:/bin/grpc_health_probe" ":/configs/" -- \
  -e /bin/opm -c serve,/configs -u 1001 -l operators.operatorframework.io.index.configs.v1=/configs

# scorecard: the untar init container runs `tar xvzf ...` as its command (no entrypoint)
# and must run as non-root for --pod-security restricted.
image scorecard-untar "$SCORECARD_UNTAR_IMAGE" -- -u 1001
image scorecard-test "$SCORECARD_TEST_IMAGE" "$SCORECARD_TEST:/usr/local/bin/scorecard-test" -- \
  -e /usr/local/bin/scorecard-test -u 1001

# `operator-sdk run bundle-upgrade` has no --decompression-image flag: its registry pod's
# init container is always registry.access.redhat.com/ubi9/ubi:9.7 (`sh -c 'cat | gzip -d'`).
# The cluster's containerd resolves that registry to this image (see hack/olm.sh); the
# label gives it an image ID of its own.
image ubi9-shim "$UBI9_SHIM_IMAGE" -- -c sh -l org.opencontainers.image.description=busybox-standing-in-for-ubi9
