#!/usr/bin/env bash
# scripts/chaos.sh: run mailroom's reliability suite (package chaos/, build tag
# "chaos") against a Consul dev agent and print one summary line per scenario:
#
#   scenario=<name> ok=<bool> key=value ...
#
#   scripts/chaos.sh                      every scenario but the soak
#   scripts/chaos.sh -chaos.soak=10m      the soak too (make test-chaos)
#   scripts/chaos.sh -run 'TestReset'     go test flags pass through
#
# Full output: .cache/chaos/log.txt; the summaries as JSON lines:
# .cache/chaos/results.jsonl; the soak's SVG charts: docs/img/.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$REPO/.cache/chaos
GO=${GO:-go}
mkdir -p "$OUT"
: >"$OUT/results.jsonl"

run=() args=()
for a in "$@"; do
	case $a in
	-chaos.*) args+=("$a") ;;
	*) run+=("$a") ;;
	esac
done

cd "$REPO"
start=$SECONDS
rc=0
"$REPO/scripts/consul.sh" run -- "$GO" test -tags chaos -count=1 -timeout 40m -v ${run[@]+"${run[@]}"} ./chaos \
	-chaos.results="$OUT/results.jsonl" -chaos.plots="$REPO/docs/img" ${args[@]+"${args[@]}"} 2>&1 |
	tee "$OUT/log.txt" | { grep --line-buffered -E '^(scenario=|--- FAIL|FAIL|panic:)' || true; } || rc=$?
# The pipeline's status is go test's (pipefail), or tee's.
echo "chaos: $(grep -c '^scenario=.* ok=true' "$OUT/log.txt" || true) scenarios passed," \
	"$(grep -c '^scenario=.* ok=false' "$OUT/log.txt" || true) failed in $((SECONDS - start)) s; log: $OUT/log.txt"
exit "$rc"
