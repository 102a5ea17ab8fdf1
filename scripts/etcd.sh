#!/usr/bin/env bash
# A real etcd for the tests (issue 26): Debian's etcd-server package,
# installed through scripts/debian-tool.sh when no etcd is on PATH (or $ETCD).
#
# usage: scripts/etcd.sh install
#        scripts/etcd.sh run -- CMD [ARG...]
# `run` starts etcd on free loopback ports in a temporary data directory,
# exports ETCD_ENDPOINTS=http://127.0.0.1:PORT for CMD, waits until etcd
# answers, runs CMD, stops etcd and removes the directory; its exit status
# is CMD's. Without an etcd (outside CI) CMD runs with ETCD_ENDPOINTS unset,
# so the tests that need it skip.
set -euo pipefail
here=$(dirname "$0")

"$here/debian-tool.sh" etcd-server etcd "${ETCD:-}" -- "the etcd discovery tests"
[ "${1:-}" = install ] && exit 0
[ "${1:-}" = run ] && [ "${2:-}" = -- ] || { echo "usage: $0 install | run -- CMD..." >&2; exit 2; }
shift 2

bin=${ETCD:-$(command -v etcd || true)}
if [ -z "$bin" ]; then
	exec "$@"
fi

freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
client=$(freeport)
peer=$(freeport)
dir=$(mktemp -d)
"$bin" --name mailroom-test --data-dir "$dir/data" \
	--listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
	--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
	--initial-cluster "mailroom-test=http://127.0.0.1:$peer" >"$dir/etcd.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT

for _ in $(seq 1 100); do
	if curl -fsS "http://127.0.0.1:$client/health" >/dev/null 2>&1; then
		break
	fi
	kill -0 "$pid" 2>/dev/null || { echo "scripts/etcd.sh: etcd exited:" >&2; cat "$dir/etcd.log" >&2; exit 1; }
	sleep 0.1
done
curl -fsS "http://127.0.0.1:$client/health" >/dev/null || { echo "scripts/etcd.sh: etcd not healthy in 10 s" >&2; cat "$dir/etcd.log" >&2; exit 1; }
export ETCD_ENDPOINTS="http://127.0.0.1:$client"
set +e
"$@"
rc=$?
exit $rc
