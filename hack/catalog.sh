#!/usr/bin/env bash
# catalog.sh: the release and catalog steps of the Makefile.
#
#   hack/catalog.sh releases          print "VERSION COMMIT" for every release in catalog/releases.yaml
#   hack/catalog.sh release-images    (re)build every release's bundle image and, with
#                                     OPERATOR_IMAGES=true, its operator image, from its commit
#   hack/catalog.sh render            render catalog/etcdpilot-template.yaml into catalog/etcdpilot/
#   hack/catalog.sh check             render into a temporary file and fail unless it equals the
#                                     committed catalog (needs the same images as render)
#   hack/catalog.sh image             build the catalog image CATALOG_REF: OLM_OPM_IMAGE (opm and
#                                     grpc_health_probe) serving catalog/ from /configs
#
# Environment: OPM, CRANE, REGISTRY (the local registry, plain HTTP), PUBLIC_PREFIX (the public
# path of our images, quay.io/etcdpilot/), MAKE_VARS (extra make variables for release builds).
# Images keep their public path in the registry: quay.io/etcdpilot/etcdpilot-bundle:v0.1.0 is
# $REGISTRY/etcdpilot/etcdpilot-bundle:v0.1.0.
set -euo pipefail
cd "$(dirname "$0")/.."

REGISTRY=${REGISTRY:-localhost:5000}
PUBLIC_PREFIX=${PUBLIC_PREFIX:-quay.io/etcdpilot/}
LOCAL_PREFIX=$REGISTRY/${PUBLIC_PREFIX#*/}
template=catalog/etcdpilot-template.yaml
out=catalog/etcdpilot/catalog.yaml

releases() {
  awk '/^- version:/ { v = $3 } /^  commit:/ { print v, $2 }' catalog/releases.yaml
}

# opm reads image signature policy from $HOME/.config/containers/policy.json; give it one
# that accepts our unsigned local images without touching the user's home.
opm_home() {
  local home=${OPM_HOME:-bin/opm-home}
  mkdir -p "$home/.config/containers"
  cp hack/olm/policy.json "$home/.config/containers/policy.json"
  (cd "$home" && pwd)
}

# release_images builds, for every release, its bundle image from the bundle/ directory of
# its commit; with OPERATOR_IMAGES=true also its operator image, by running that commit's own
# `make image` in a temporary worktree (sharing this bin/ so no tool is rebuilt).
release_images() {
  local version commit tmp
  while read -r version commit; do
    git cat-file -e "$commit^{commit}" 2>/dev/null || { echo "release $version: commit $commit is not in this clone" >&2; exit 1; }
    tmp=$(mktemp -d)
    git archive "$commit" bundle | tar -x -C "$tmp"
    CRANE=$CRANE hack/bundle-image.sh "$tmp/bundle" "${LOCAL_PREFIX}etcdpilot-bundle:v$version"
    rm -rf "$tmp"
    if [[ ${OPERATOR_IMAGES:-false} == true ]]; then
      tmp=$(mktemp -d)
      git worktree add -q --detach "$tmp" "$commit"
      # shellcheck disable=SC2086
      # Its own IMAGE_WORK, so that a `make image` of this checkout may run at the same time.
      make -C "$tmp" --no-print-directory image VERSION="$version" LOCALBIN="$PWD/bin" IMAGE_WORK="$tmp/.image-work" \
        REGISTRY="$REGISTRY" ${MAKE_VARS:-} >/dev/null \
        || { git worktree remove --force "$tmp"; echo "release $version: building its operator image failed" >&2; exit 1; }
      git worktree remove --force "$tmp"
      echo "pushed ${LOCAL_PREFIX}etcdpilot:v$version (from $commit)"
    fi
  done < <(releases)
}

# render turns the template into the catalog: opm renders each bundle from its image (pulled
# from the local registry under its public path, then named by its public reference again),
# and the package comes from `opm init` with the icon of docs/icon.svg.
render() {
  local dest=${1:-$out} home tmp
  home=$(opm_home)
  tmp=$(mktemp -d)
  sed "s#image: ${PUBLIC_PREFIX}#image: ${LOCAL_PREFIX}#" "$template" > "$tmp/template.yaml"
  HOME=$home "$OPM" init etcdpilot --default-channel=stable --description=catalog/description.md \
    --icon=docs/icon.svg -o yaml > "$tmp/package.yaml"
  HOME=$home "$OPM" alpha render-template basic "$tmp/template.yaml" --use-http -o yaml > "$tmp/rendered.yaml"
  mkdir -p "$(dirname "$dest")"
  { cat "$tmp/package.yaml"; echo '---'; sed "s#${LOCAL_PREFIX}#${PUBLIC_PREFIX}#g" "$tmp/rendered.yaml"; } > "$dest"
  rm -rf "$tmp"
  if [[ $dest == "$out" ]]; then
    HOME=$home "$OPM" validate catalog
    echo "rendered $out"
  fi
}

# check fails when the committed catalog is not what the template renders to (a release or a
# bundle changed without `make catalog`).
check() {
  local fresh
  fresh=$(mktemp)
  render "$fresh"
  if ! diff -u "$out" "$fresh" > "$fresh.diff"; then
    head -n 40 "$fresh.diff" >&2
    rm -f "$fresh" "$fresh.diff"
    echo "catalog.sh: $out is stale: run make catalog and commit" >&2
    exit 1
  fi
  rm -f "$fresh" "$fresh.diff"
  echo "catalog is up to date"
}

# image puts the catalog in /configs of the opm image that OLM's registry pods run.
image() {
  : "${OLM_OPM_IMAGE:?}" "${CATALOG_REF:?}"
  local root
  root=$(mktemp -d)
  mkdir -p "$root/configs"
  cp -r catalog/. "$root/configs/"
  chmod -R a+rX "$root"
  CRANE=$CRANE hack/build-image.sh -b "$OLM_OPM_IMAGE" -t "$CATALOG_REF" -e /bin/opm -c serve,/configs \
    -l operators.operatorframework.io.index.configs.v1=/configs "$root"
  rm -rf "$root"
}

case ${1:-} in
  releases) releases ;;
  release-images) release_images ;;
  render) render ;;
  check) check ;;
  image) image ;;
  *) echo "usage: $0 releases|release-images|render|check|image" >&2; exit 2 ;;
esac
