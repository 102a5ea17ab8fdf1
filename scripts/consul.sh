#!/usr/bin/env bash
# scripts/consul.sh: a local Consul dev agent for mailroom's tests.
#
#   scripts/consul.sh build           build Consul v1.13.9 into $CONSUL_BIN if missing
#   scripts/consul.sh start <dir>     start a dev agent on free loopback ports; state,
#                                     log and pid under <dir>; prints CONSUL_HTTP_ADDR=...
#   scripts/consul.sh stop <dir>      stop the agent started in <dir> and wait for it
#   scripts/consul.sh run -- cmd...   build, start in a temp dir, run cmd with
#                                     CONSUL_HTTP_ADDR and MAILROOM_CONSUL_BIN exported,
#                                     stop the agent, exit with cmd's status
#
# CONSUL_BIN defaults to <repo>/.cache/bin/consul (git-ignored). The first build
# downloads ~3 GB of modules and takes minutes; newer Consul versions do not
# resolve through the module proxy, hence the pinned version.
set -euo pipefail

readonly CONSUL_VERSION=1.13.9
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONSUL_BIN=${CONSUL_BIN:-$REPO/.cache/bin/consul}
readonly REPO CONSUL_BIN

log() { printf 'consul.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

usage() {
	sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# abs_bin prints the absolute path of CONSUL_BIN.
abs_bin() {
	case $CONSUL_BIN in
	/*) printf '%s\n' "$CONSUL_BIN" ;;
	*) printf '%s/%s\n' "$PWD" "$CONSUL_BIN" ;;
	esac
}

# build_in DIR: build Consul in a scratch module in DIR (outside the repo, so
# its 3 GB dependency graph never touches mailroom's go.mod).
build_in() {
	local scratch=$1
	cd "$scratch" || return 1
	cat >go.mod <<-EOF || return 1
		module mailroom.local/consulbuild

		go 1.21
	EOF
	log "go get github.com/hashicorp/consul@v$CONSUL_VERSION"
	GOWORK=off GOFLAGS=-mod=mod go get "github.com/hashicorp/consul@v$CONSUL_VERSION" >&2 || return 1
	log "go build github.com/hashicorp/consul"
	GOWORK=off GOFLAGS=-mod=mod go build -o "$scratch/consul" github.com/hashicorp/consul >&2 || return 1
	cd - >/dev/null || return 1
}

cmd_build() {
	local bin
	bin=$(abs_bin)
	if [[ -x $bin ]]; then
		local have
		have=$("$bin" version 2>/dev/null | head -n1 || true)
		if [[ $have == "Consul v$CONSUL_VERSION" ]]; then
			return 0
		fi
		die "$bin reports '${have:-nothing}', want Consul v$CONSUL_VERSION; remove it or point CONSUL_BIN elsewhere"
	fi
	command -v go >/dev/null || die "go is not on PATH; it is needed to build Consul"

	local scratch
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/mailroom-consul-build.XXXXXX")
	log "building Consul v$CONSUL_VERSION into $bin (first time: several minutes, ~3 GB of modules)"
	if ! (build_in "$scratch"); then
		rm -rf "$scratch"
		die "building Consul v$CONSUL_VERSION failed"
	fi
	mkdir -p "$(dirname "$bin")"
	# Rename into place so a concurrent run never sees a half-written binary.
	cp "$scratch/consul" "$bin.tmp.$$"
	mv -f "$bin.tmp.$$" "$bin"
	rm -rf "$scratch"
	log "built $("$bin" version | head -n1) at $bin"
}

# port_in_use PORT: true when a TCP or UDP socket on this host uses PORT.
port_in_use() {
	local hex f
	hex=$(printf '%04X' "$1")
	for f in /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6; do
		[[ -r $f ]] || continue
		# Column 2 is local_address "IP:PORT" with PORT in hex.
		if awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' "$f"; then
			return 0
		fi
	done
	# No /proc (not Linux): fall back to a TCP connect probe.
	if [[ ! -r /proc/net/tcp ]] && (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
		return 0
	fi
	return 1
}

# free_ports N: print N distinct ports that are free now, below the usual
# ephemeral range (32768+) so outgoing connections do not take them.
free_ports() {
	local n=$1 got=() p tries=0
	while ((${#got[@]} < n)); do
		((tries++ < 1000)) || die "no free ports found"
		p=$((20000 + RANDOM % 12000))
		[[ " ${got[*]} " == *" $p "* ]] && continue
		port_in_use "$p" && continue
		got+=("$p")
	done
	echo "${got[@]}"
}

# http_get PORT PATH: print the body of GET http://127.0.0.1:PORT/PATH using
# bash's /dev/tcp (curl may be missing). Fails if the connection fails.
http_get() {
	timeout 2 bash -c '
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "$2" >&3
		sed "1,/^\r\{0,1\}$/d" <&3
	' http_get "$1" "$2"
}

# pid_alive PID: true while PID runs (a zombie counts as exited).
pid_alive() {
	kill -0 "$1" 2>/dev/null || return 1
	if [[ -r /proc/$1/stat ]]; then
		local state
		state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null || echo X)
		[[ $state != Z && $state != X ]]
	fi
}

# Every test node reaches the agent from 127.0.0.1, so the agent's limit of
# concurrent HTTP connections per client address (default 200) is shared by
# all the packages `go test` runs at once against it: raised to 1000 here.
# What one provider may open is bounded in the provider itself.
#
# start_once DIR: one attempt; prints the HTTP port, or fails if the agent
# died (a port was taken meanwhile) or got no leader in time.
start_once() {
	local dir=$1 bin http serf_lan serf_wan server pid
	bin=$(abs_bin)
	read -r http serf_lan serf_wan server <<<"$(free_ports 4)"
	: >"$dir/consul.log"
	CHECKPOINT_DISABLE=1 nohup "$bin" agent -dev \
		-node mailroom-dev \
		-bind 127.0.0.1 -client 127.0.0.1 \
		-http-port "$http" -dns-port -1 -grpc-port -1 \
		-serf-lan-port "$serf_lan" -serf-wan-port "$serf_wan" -server-port "$server" \
		-log-level warn \
		-hcl 'limits { http_max_conns_per_client = 1000 }' \
		</dev/null >>"$dir/consul.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/consul.pid"
	echo "$http" >"$dir/consul.port"

	local deadline=$((SECONDS + 30)) leader
	while ((SECONDS < deadline)); do
		if ! pid_alive "$pid"; then
			rm -f "$dir/consul.pid"
			return 1
		fi
		leader=$(http_get "$http" /v1/status/leader 2>/dev/null || true)
		if [[ $leader == \"*:*\" ]]; then
			echo "$http"
			return 0
		fi
		sleep 0.1
	done
	log "agent (pid $pid) got no leader within 30s; log: $dir/consul.log"
	cmd_stop "$dir"
	return 1
}

cmd_start() {
	local dir=${1:?usage: consul.sh start <dir>}
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	[[ -x $(abs_bin) ]] || die "no Consul binary at $(abs_bin); run: scripts/consul.sh build"
	if [[ -f $dir/consul.pid ]] && pid_alive "$(cat "$dir/consul.pid")"; then
		die "an agent already runs from $dir (pid $(cat "$dir/consul.pid"))"
	fi
	local attempt port
	for attempt in 1 2 3 4 5; do
		if port=$(start_once "$dir"); then
			log "agent up (pid $(cat "$dir/consul.pid")) on 127.0.0.1:$port; log: $dir/consul.log"
			echo "CONSUL_HTTP_ADDR=127.0.0.1:$port"
			return 0
		fi
		log "attempt $attempt: agent failed to start; log tail:"
		tail -n 5 "$dir/consul.log" >&2 || true
	done
	die "could not start a Consul agent"
}

cmd_stop() {
	local dir=${1:?usage: consul.sh stop <dir>} pid
	[[ -f $dir/consul.pid ]] || return 0
	pid=$(cat "$dir/consul.pid")
	if pid_alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		local deadline=$((SECONDS + 10))
		while pid_alive "$pid" && ((SECONDS < deadline)); do sleep 0.05; done
		if pid_alive "$pid"; then
			log "agent $pid ignored SIGTERM for 10s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
			while pid_alive "$pid"; do sleep 0.05; done
		fi
	fi
	rm -f "$dir/consul.pid"
}

cmd_run() {
	[[ ${1:-} == -- ]] && shift
	(($# > 0)) || die "usage: consul.sh run -- <cmd...>"
	cmd_build
	local dir out
	dir=$(mktemp -d "${TMPDIR:-/tmp}/mailroom-consul.XXXXXX")
	# shellcheck disable=SC2064 # expand now
	trap "cmd_stop '$dir'; rm -rf '$dir'" EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	out=$(cmd_start "$dir")
	export "${out?}"
	MAILROOM_CONSUL_BIN=$(abs_bin)
	export MAILROOM_CONSUL_BIN
	log "running with CONSUL_HTTP_ADDR=$CONSUL_HTTP_ADDR: $*"
	local rc=0
	"$@" || rc=$?
	exit "$rc"
}

main() {
	local sub=${1:-}
	(($# > 0)) && shift
	case $sub in
	build) cmd_build ;;
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	run) cmd_run "$@" ;;
	*) usage ;;
	esac
}

main "$@"
