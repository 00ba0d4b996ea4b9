# shellcheck shell=bash
# steps.sh: the step runner that hack/local-cluster.sh and hack/olm.sh share. Source it, then
# set STEP_PREFIX (the log prefix: cluster, olm) and ACTION (up, down, status).
#
#   step NAME FUNCTION [ARGS...]   run one step and print its duration
#   failed_step RC                 on exit: name the step that was running when the script
#                                  failed with RC; returns 1 when no step failed

ACTION=
CURRENT_STEP=

log() { printf '[%s-%s] %s\n' "$STEP_PREFIX" "$ACTION" "$*"; }
die() { printf '[%s-%s] ERROR: %s\n' "$STEP_PREFIX" "$ACTION" "$*" >&2; exit 1; }

step() {
  local name=$1 t0=${EPOCHREALTIME/./}
  shift
  CURRENT_STEP=$name
  "$@"
  CURRENT_STEP=
  local dt=$(((${EPOCHREALTIME/./} - t0) / 100000))
  printf '[%s-%s] %s ... %d.%ds\n' "$STEP_PREFIX" "$ACTION" "$name" $((dt / 10)) $((dt % 10))
}

failed_step() {
  (($1 != 0)) && [[ -n $CURRENT_STEP ]] || return 1
  printf '[%s-%s] %s ... FAILED (exit %d)\n' "$STEP_PREFIX" "$ACTION" "$CURRENT_STEP" "$1" >&2
}
