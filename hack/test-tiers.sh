#!/usr/bin/env bash
# `make test`: runs test legs side by side rather than one after the other. The live e2e tests
# spend most of their wall time waiting for controllers while the integration tests compute, so on
# 2 cores both together end well before one after the other; the e2e leg, the longest, starts
# first. Each leg writes its own log in $TEST_LOG_DIR (default: a new temporary folder) so that
# their lines never mix: the last leg streams to the terminal as it runs, every other leg is
# printed whole when it has ended (with go test's closing ok/FAIL lines). Exits non-zero when any
# leg failed. Ctrl-C or SIGTERM is passed to every leg (the live harness then stops what it
# started) and the script waits for them.
#
# Usage: hack/test-tiers.sh NAME 'COMMAND' [NAME 'COMMAND']...
set -uo pipefail

(( $# >= 2 && $# % 2 == 0 )) || { echo "usage: $0 NAME 'COMMAND' [NAME 'COMMAND']..." >&2; exit 2; }
dir="${TEST_LOG_DIR:-}"
if [[ -z "$dir" ]]; then dir="$(mktemp -d "${TMPDIR:-/tmp}/capctl-test-logs.XXXXXX")"; else mkdir -p "$dir"; fi

names=() pids=() logs=()
start=$(date +%s)
# Each leg in its own process group (job control), so that a signal reaches all of a leg's
# processes and none of the others'.
set -m
while (( $# )); do
  names+=("$1") logs+=("$dir/$1.log")
  # Created here, before the leg starts, so that tail finds the last leg's log however soon it ends.
  : >"$dir/$1.log"
  bash -c "$2" >>"$dir/$1.log" 2>&1 &
  pids+=($!)
  echo "test-tiers: $1 started (log $dir/$1.log): $2"
  shift 2
done
set +m

last=$(( ${#pids[@]} - 1 ))
# In the background: bash runs a trap only once a foreground command has ended, wait at once.
tail -n +1 -f --pid="${pids[$last]}" "${logs[$last]}" &
tailpid=$!

interrupted=0
stop() {
  interrupted=1
  local p
  for p in "${pids[@]}"; do kill -INT -- "-$p" 2>/dev/null || true; done
}
trap stop INT TERM
wait "$tailpid"

rc=0 summary=()
for i in "${!pids[@]}"; do
  code=0
  # wait returns early when a trapped signal arrives; wait again until the leg has ended.
  while :; do
    wait "${pids[$i]}"; code=$?
    kill -0 "${pids[$i]}" 2>/dev/null || break
  done
  if (( i != last )); then
    echo "== test-tiers: output of ${names[$i]} (${logs[$i]})"
    cat "${logs[$i]}"
  fi
  (( code == 0 )) || rc=1
  summary+=("test-tiers: ${names[$i]} exited ${code}")
done
printf '%s\n' "${summary[@]}"
echo "test-tiers: all legs ended after $(( $(date +%s) - start ))s"
(( interrupted == 0 )) || exit 130
exit $rc
