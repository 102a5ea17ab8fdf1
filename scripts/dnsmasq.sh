#!/usr/bin/env bash
# A real DNS server for the DNS discovery tests (issue 26): Debian's
# dnsmasq, installed through scripts/debian-tool.sh (package dnsmasq-base,
# the binary without the system service) when none is found ($DNSMASQ, PATH,
# /usr/sbin/dnsmasq).
#
# usage: scripts/dnsmasq.sh install
#        scripts/dnsmasq.sh run -- CMD [ARG...]
# `run` starts dnsmasq in the foreground (not as a system service) on a free
# loopback port, UDP and TCP, authoritative for the test domain only
# (--local=/mailroom.test/: no upstream, a name it does not hold is NXDOMAIN),
# with a hosts directory the tests write into: dnsmasq reads a file added or
# changed there through inotify, no restart (--hostsdir). It exports for CMD
#   MAILROOM_DNS_SERVER   127.0.0.1:PORT, the running server
#   MAILROOM_DNS_HOSTSDIR the hosts directory (files of "IP name" lines)
#   MAILROOM_DNSMASQ      the dnsmasq binary, for tests that run their own
#                         (SRV records come from --srv-host, which dnsmasq
#                         2.90 reads only at start: changing them is a restart)
# waits until it answers, runs CMD, stops dnsmasq and removes the directory;
# its exit status is CMD's. Without a dnsmasq (outside CI) CMD runs with
# those unset, so the tests that need them skip; under CI=true a failed
# install fails.
set -euo pipefail
here=$(dirname "$0")

"$here/debian-tool.sh" dnsmasq-base "${DNSMASQ:-}" dnsmasq /usr/sbin/dnsmasq -- "the DNS discovery tests"
[ "${1:-}" = install ] && exit 0
[ "${1:-}" = run ] && [ "${2:-}" = -- ] || { echo "usage: $0 install | run -- CMD..." >&2; exit 2; }
shift 2

bin=${DNSMASQ:-$(command -v dnsmasq || true)}
[ -z "$bin" ] && [ -x /usr/sbin/dnsmasq ] && bin=/usr/sbin/dnsmasq
if [ -z "$bin" ]; then
	exec "$@"
fi

freeport() { python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
dir=$(mktemp -d)
mkdir "$dir/hosts"
pid=
trap '[ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$dir"' EXIT

# dnsmasq answers only what it holds, so a DNS query (an A record it serves,
# by python3's resolver-free socket) tells that it is up.
echo "127.0.0.1 up.mailroom.test" >"$dir/hosts/up"
probe() {
	python3 - "$1" <<-'PY'
		import socket, struct, sys
		q = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\x02up\x08mailroom\x04test\x00" + struct.pack(">HH", 1, 1)
		s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
		s.settimeout(0.5)
		s.sendto(q, ("127.0.0.1", int(sys.argv[1])))
		d = s.recv(512)
		sys.exit(0 if struct.unpack(">H", d[6:8])[0] >= 1 else 1)
	PY
}
for attempt in 1 2 3 4 5; do
	port=$(freeport)
	"$bin" --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --no-poll \
		--bind-interfaces --listen-address=127.0.0.1 --port="$port" --user=root --pid-file= \
		--local=/mailroom.test/ --hostsdir="$dir/hosts" --log-facility="$dir/dnsmasq.log" &
	pid=$!
	for _ in $(seq 1 50); do
		probe "$port" 2>/dev/null && break 2
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
	pid=
	echo "scripts/dnsmasq.sh: attempt $attempt: dnsmasq on port $port did not answer:" >&2
	tail -n 5 "$dir/dnsmasq.log" >&2 || true
done
[ -n "$pid" ] || { echo "scripts/dnsmasq.sh: could not start dnsmasq" >&2; exit 1; }
export MAILROOM_DNS_SERVER="127.0.0.1:$port" MAILROOM_DNS_HOSTSDIR="$dir/hosts" MAILROOM_DNSMASQ="$bin"
echo "scripts/dnsmasq.sh: dnsmasq $("$bin" --version | head -n1 | awk '{print $3}') on $MAILROOM_DNS_SERVER" >&2
set +e
"$@"
rc=$?
exit $rc
