#!/usr/bin/env bash
# scripts/scale.sh: mailroom's scale test (package internal/testing/scaletest, build tag
# "scale") against a Consul dev agent. Prints one summary line per cluster size:
#
#   scale nodes=32 converge_ms=… links_per_node_max=… fds_per_node_max=… rss_mb_max=… consul_req_per_s=… detect_ms_max=… hung=0 wrong_incarnation=0
#
#   scripts/scale.sh                              8, 16 and 32 nodes; rewrites docs/SCALE.md
#   scripts/scale.sh -scale.sizes=32              one size (docs untouched unless -scale.doc is given)
#
# Full output: .cache/scale/log.txt; every run's figures: .cache/scale/results.json.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$REPO/.cache/scale
GO=${GO:-go}
mkdir -p "$OUT"

args=("$@")
if [ ${#args[@]} -eq 0 ]; then
	args=(-scale.sizes=8,16,32 -scale.doc="$REPO/docs/SCALE.md")
fi

cd "$REPO"
# Each node is a process with its own sockets: 32 nodes with eager pools hold
# a few thousand descriptors together, and each process needs a few hundred.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
start=$SECONDS
rc=0
"$REPO/scripts/consul.sh" run -- "$GO" test -tags scale -count=1 -timeout 30m -v -run '^TestScale$' ./internal/testing/scaletest \
	-scale.json="$OUT/results.json" "${args[@]}" 2>&1 |
	tee "$OUT/log.txt" | { grep --line-buffered -E '^(scale |--- FAIL|FAIL|panic:)' || true; } || rc=$?
echo "scale: done in $((SECONDS - start)) s (exit $rc); log: $OUT/log.txt"
exit "$rc"
