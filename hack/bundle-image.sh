#!/usr/bin/env bash
# bundle-image.sh: build an OLM bundle image (registry+v1) from a bundle directory and push
# it, with no container daemon. The image holds /manifests, /metadata and /tests/scorecard,
# as bundle.Dockerfile lays them out, and carries every annotation of
# metadata/annotations.yaml as a label (the annotations file is authoritative; OLM and opm
# read the labels).
#
#   CRANE=bin/crane hack/bundle-image.sh BUNDLE_DIR REF
set -euo pipefail
bundle=${1:?bundle directory required}
ref=${2:?image reference required}
here=$(cd "$(dirname "$0")" && pwd)

for d in manifests metadata; do
  [[ -d $bundle/$d ]] || { echo "bundle-image.sh: $bundle/$d is missing (run make bundle)" >&2; exit 1; }
done

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
cp -r "$bundle/manifests" "$bundle/metadata" "$root/"
if [[ -d $bundle/tests/scorecard ]]; then
  mkdir -p "$root/tests" && cp -r "$bundle/tests/scorecard" "$root/tests/"
fi
chmod -R a+rX "$root"

labels=()
while IFS= read -r kv; do
  labels+=(-l "$kv")
done < <(awk '/^annotations:/ { on = 1; next }
  on && /^[[:space:]]+[^#[:space:]][^:]*:/ {
    line = $0; sub(/^[[:space:]]+/, "", line)
    key = line; sub(/:.*/, "", key)
    val = line; sub(/^[^:]*:[[:space:]]*/, "", val); gsub(/^["\x27]|["\x27]$/, "", val)
    print key "=" val
  }' "$bundle/metadata/annotations.yaml")
(( ${#labels[@]} > 0 )) || { echo "bundle-image.sh: no annotations in $bundle/metadata/annotations.yaml" >&2; exit 1; }

"$here/build-image.sh" -t "$ref" "${labels[@]}" "$root"
