#!/usr/bin/env bash
# scorecard.sh (`make scorecard`, `make capabilities`, `make test-e2e-scorecard`): run
# `operator-sdk scorecard` on bundle/ in the local cluster, against the operator installed
# through OLM, and judge the run with hack/capabilities.
#
#   hack/scorecard.sh report   print the results; fail when a built-in test or a test of a
#                              level the CSV claims did not pass
#   hack/scorecard.sh record   the same run must include every test: derive the CSV's
#                              capabilities annotation from it (hack/capabilities record)
#
# The operator: an etcdpilot already installed through OLM at this release (make demo) is
# used as it is; otherwise the script installs it from the catalog (config/olm, as a user
# does) and removes it again at the end (SCORECARD_KEEP_OPERATOR=true keeps it).
# The tests run in SCORECARD_NAMESPACE (restricted pod security) as the ServiceAccount of
# config/scorecard/rbac, whose cluster-wide grants (level 3: cordoning a node; level 4:
# finding the operator's metrics Service, reading /metrics) are removed again at the end. With the Prometheus Operator
# installed, the operator's ServiceMonitor and alert rules (config/prometheus, which the
# bundle leaves to the user) are applied first, as a user who monitors the operator has
# them, so that level 4 finds the operator scraped; an operator installed here takes them
# away again. Output:
# SCORECARD_OUT/scorecard.json (scorecard -o json) and scorecard.xml (JUnit).
#
# Environment: KUBECTL, OPERATOR_SDK, CRANE, SCORECARD_UNTAR_IMAGE, SCORECARD_TESTS_IMAGE (the
# public name of the capability tests' image, as the bundle's config names it) and
# SCORECARD_TESTS_LOCAL (where it was pushed), HEAD_CSV (the CSV this release installs);
# optional SCORECARD_SELECTOR, SCORECARD_WAIT_TIME, SCORECARD_NAMESPACE, SCORECARD_OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:?usage: scorecard.sh report|record}
: "${KUBECTL:?}" "${OPERATOR_SDK:?}" "${CRANE:?}" "${SCORECARD_UNTAR_IMAGE:?}" "${HEAD_CSV:?}"
: "${SCORECARD_TESTS_IMAGE:?}" "${SCORECARD_TESTS_LOCAL:?}"
ns=${SCORECARD_NAMESPACE:-etcdpilot-scorecard}
out=${SCORECARD_OUT:-_output/scorecard}
wait_time=${SCORECARD_WAIT_TIME:-20m}
selector=${SCORECARD_SELECTOR:-}

STEP_PREFIX=scorecard
# shellcheck source=hack/lib/steps.sh
source hack/lib/steps.sh
# shellcheck source=hack/lib/olm-install.sh
source hack/lib/olm-install.sh
ACTION=$mode

# quiet CMD...: run CMD with its output shown only when it fails.
quiet() {
  local o
  o=$("$@" 2>&1) || { printf '%s\n' "$o" >&2; return 1; }
}

installed_here=false monitoring_here=false
work=$(mktemp -d)
cleanup() {
  local rc=$?
  trap - EXIT
  failed_step "$rc" || true
  "$KUBECTL" delete namespace "$ns" --ignore-not-found --wait=true --timeout=180s >/dev/null || rc=1
  "$KUBECTL" delete clusterrolebinding,clusterrole -l app.kubernetes.io/part-of=etcdpilot-scorecard --ignore-not-found >/dev/null || rc=1
  if [[ $installed_here == true && ${SCORECARD_KEEP_OPERATOR:-false} != true ]]; then
    if [[ $monitoring_here == true ]]; then
      "$KUBECTL" delete -k config/prometheus --ignore-not-found >/dev/null || rc=1
    fi
    step uninstall-operator quiet olm_uninstall || rc=1
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

# The operator through OLM: reuse this release when installed, refuse anything else.
ensure_operator() {
  local csv
  csv=$(olm_installed_csv)
  if [[ -n $csv ]]; then
    [[ $csv == "$HEAD_CSV" ]] || die "OLM has $csv installed in $OLM_OPERATOR_NS, not $HEAD_CSV: remove it (kubectl -n $OLM_OPERATOR_NS delete subscription etcdpilot; kubectl -n $OLM_OPERATOR_NS delete csv $csv)"
    olm_wait_csv_succeeded >/dev/null || die "$csv is installed but not Succeeded"
    log "using the installed $csv"
    return
  fi
  if "$KUBECTL" -n "$OLM_OPERATOR_NS" get deployment etcdpilot-controller-manager >/dev/null 2>&1; then
    die "an etcdpilot operator not installed by OLM runs in $OLM_OPERATOR_NS (make deploy?): remove it with make undeploy"
  fi
  installed_here=true
  quiet olm_install
}

# The operator's ServiceMonitor and alert rules, where the Prometheus Operator's CRDs exist.
operator_monitoring() {
  if ! "$KUBECTL" get crd servicemonitors.monitoring.coreos.com prometheusrules.monitoring.coreos.com >/dev/null 2>&1; then
    log "the Prometheus Operator is not installed: level 4 will say so"
    return
  fi
  quiet "$KUBECTL" apply --server-side --force-conflicts -k config/prometheus
  monitoring_here=true
}

# The bundle scorecard reads, with the capability tests' image pinned to the digest just
# pushed: the tag is reused across builds and the test pods pull IfNotPresent, so a node
# could otherwise run an older build under the same tag.
bundle_copy() {
  local digest
  digest=$("$CRANE" digest --insecure "$SCORECARD_TESTS_LOCAL") || die "$SCORECARD_TESTS_LOCAL is not in the registry (make scorecard-image)"
  cp -r bundle "$work/bundle"
  sed -i "s|image: $SCORECARD_TESTS_IMAGE\$|image: ${SCORECARD_TESTS_IMAGE%:*}@$digest|" "$work/bundle/tests/scorecard/config.yaml"
  grep -q "@$digest" "$work/bundle/tests/scorecard/config.yaml" || die "bundle/tests/scorecard/config.yaml does not name $SCORECARD_TESTS_IMAGE (make bundle)"
}

# config/scorecard/rbac names the namespace etcdpilot-scorecard, for its ClusterRoleBindings'
# subject; an overlay with namespace $ns moves the namespaced objects and the subjects there.
test_namespace() {
  "$KUBECTL" delete namespace "$ns" --ignore-not-found --wait=true --timeout=180s
  "$KUBECTL" create namespace "$ns"
  "$KUBECTL" label namespace "$ns" pod-security.kubernetes.io/enforce=restricted
  mkdir -p "$work/rbac"
  printf 'namespace: %s\nresources:\n- %s\n' "$ns" "$(realpath --relative-to="$work/rbac" config/scorecard/rbac)" >"$work/rbac/kustomization.yaml"
  "$KUBECTL" apply -k "$work/rbac"
}

run_scorecard() {
  local args=(scorecard "$work/bundle" -n "$ns" -u "$SCORECARD_UNTAR_IMAGE" --pod-security restricted -w "$wait_time" -o json)
  [[ -n $selector ]] && args+=(-l "$selector")
  log "operator-sdk ${args[*]}"
  # scorecard exits 1 when a test fails; hack/capabilities judges the run.
  "$OPERATOR_SDK" "${args[@]}" >"$out/scorecard.json" 2>"$out/scorecard.log" || true
  [[ -s $out/scorecard.json ]] || { cat "$out/scorecard.log" >&2; die "scorecard wrote no results"; }
}

mkdir -p "$out"
step operator ensure_operator
step monitoring operator_monitoring
step bundle bundle_copy
step namespace quiet test_namespace
step scorecard run_scorecard
go run ./hack/capabilities "$mode" -run "$out/scorecard.json" -xunit "$out/scorecard.xml" -selector "$selector"
log "results: $out/scorecard.json, $out/scorecard.xml"
