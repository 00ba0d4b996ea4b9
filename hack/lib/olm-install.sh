# shellcheck shell=bash
# olm-install.sh: install etcdpilot the way a user does (config/olm: the CatalogSource, then
# a Subscription with manual approval, whose InstallPlan we approve), and remove it again.
# Shared by hack/demo.sh and hack/scorecard.sh. Source it with KUBECTL set and the repo root
# as the working directory.
#
#   olm_wait_catalog_ready       the CatalogSource's registry pod serves (READY)
#   olm_approve_installplan      approve the InstallPlan OLM proposes for the Subscription
#   olm_wait_csv_succeeded       the Subscription's installed CSV reaches Succeeded
#   olm_installed_csv            print the etcdpilot CSV installed in OLM_OPERATOR_NS, if any
#   olm_uninstall                delete the Subscription and its CSV (CRDs and clusters stay)

OLM_OPERATOR_NS=etcdpilot-system

olm_wait_catalog_ready() {
  local state
  for _ in $(seq 120); do
    state=$("$KUBECTL" -n olm get catalogsource etcdpilot-catalog -o jsonpath='{.status.connectionState.lastObservedState}')
    [[ $state == READY ]] && return 0
    sleep 1
  done
  echo "catalog state: $state" >&2; return 1
}

olm_approve_installplan() {
  local plan
  for _ in $(seq 120); do
    plan=$("$KUBECTL" -n "$OLM_OPERATOR_NS" get subscription etcdpilot -o jsonpath='{.status.installPlanRef.name}')
    [[ -n $plan ]] && break
    sleep 1
  done
  [[ -n $plan ]] || { echo "no InstallPlan" >&2; return 1; }
  "$KUBECTL" -n "$OLM_OPERATOR_NS" patch installplan "$plan" --type merge -p '{"spec":{"approved":true}}'
}

olm_wait_csv_succeeded() {
  local csv
  for _ in $(seq 180); do
    csv=$("$KUBECTL" -n "$OLM_OPERATOR_NS" get subscription etcdpilot -o jsonpath='{.status.installedCSV}')
    if [[ -n $csv ]] && [[ $("$KUBECTL" -n "$OLM_OPERATOR_NS" get csv "$csv" -o jsonpath='{.status.phase}') == Succeeded ]]; then
      echo "$csv Succeeded"; return 0
    fi
    sleep 1
  done
  return 1
}

olm_installed_csv() {
  "$KUBECTL" -n "$OLM_OPERATOR_NS" get subscription etcdpilot -o jsonpath='{.status.installedCSV}' 2>/dev/null || true
}

# olm_install: CatalogSource, Subscription, approval, CSV Succeeded.
olm_install() {
  "$KUBECTL" apply -f config/olm/catalogsource.yaml
  olm_wait_catalog_ready
  "$KUBECTL" apply -f config/olm/subscription.yaml
  olm_approve_installplan
  olm_wait_csv_succeeded
}

olm_uninstall() {
  local csv
  csv=$(olm_installed_csv)
  "$KUBECTL" -n "$OLM_OPERATOR_NS" delete subscription etcdpilot --ignore-not-found --wait=true
  if [[ -n $csv ]]; then
    "$KUBECTL" -n "$OLM_OPERATOR_NS" delete csv "$csv" --ignore-not-found --wait=true
  fi
  "$KUBECTL" -n "$OLM_OPERATOR_NS" wait --for=delete deployment/etcdpilot-controller-manager --timeout=120s 2>/dev/null || true
}
