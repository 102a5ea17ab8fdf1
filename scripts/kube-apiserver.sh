#!/usr/bin/env bash
# scripts/kube-apiserver.sh: a real kube-apiserver (with its own etcd) for
# mailroom's Kubernetes tests.
#
#   scripts/kube-apiserver.sh build           build kube-apiserver v1.31.4 into $KUBE_APISERVER_BIN if missing
#   scripts/kube-apiserver.sh start <dir>     start etcd and kube-apiserver on free loopback ports; state,
#                                             logs, pids, certs and kubeconfig under <dir>; prints KUBECONFIG=...
#   scripts/kube-apiserver.sh stop <dir>      stop both and wait for them
#   scripts/kube-apiserver.sh run -- cmd...   build, start in a temp dir, run cmd with KUBECONFIG,
#                                             MAILROOM_KUBE_DIR and MAILROOM_KUBE_APISERVER_BIN exported,
#                                             stop, exit with cmd's status
#
# KUBE_APISERVER_BIN defaults to <repo>/.cache/bin/kube-apiserver (git-ignored).
# The binary comes from the Go module proxy: a scratch module requires
# k8s.io/kubernetes v1.31.4 and replaces each staging module its go.mod lists
# (=> ./staging/...) with that module's v0.31.4 release. The first build takes
# minutes. etcd is Debian's etcd-server (installed with apt-get when missing,
# see scripts/debian-tool.sh). Outside CI, a failed build or a missing etcd
# makes `run` execute cmd without KUBECONFIG (the tests skip); under CI=true it fails.
#
# The admin kubeconfig (user "admin", group system:masters) is $dir/admin.kubeconfig;
# MAILROOM_KUBE_DIR holds token.csv (static tokens), sa.key/sa.pub (service-account
# keys) and the apiserver's pid, so tests can restart the apiserver:
#   scripts/kube-apiserver.sh restart-apiserver <dir>
set -euo pipefail

readonly K8S_VERSION=1.31.4
readonly STAGING_VERSION=0.31.4
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KUBE_APISERVER_BIN=${KUBE_APISERVER_BIN:-$REPO/.cache/bin/kube-apiserver}
readonly REPO KUBE_APISERVER_BIN

log() { printf 'kube-apiserver.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

usage() {
	sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

abs_bin() {
	case $KUBE_APISERVER_BIN in
	/*) printf '%s\n' "$KUBE_APISERVER_BIN" ;;
	*) printf '%s/%s\n' "$PWD" "$KUBE_APISERVER_BIN" ;;
	esac
}

# build_in DIR: build kube-apiserver in a scratch module in DIR, outside the
# repo, so its dependency graph never touches mailroom's go.mod.
build_in() {
	local scratch=$1 kmod
	cd "$scratch" || return 1
	export GOWORK=off GOFLAGS=-mod=mod
	log "go mod download k8s.io/kubernetes@v$K8S_VERSION (its go.mod)"
	kmod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
	[[ -n $kmod && -r $kmod ]] || { log "no go.mod for k8s.io/kubernetes@v$K8S_VERSION"; return 1; }
	{
		printf 'module mailroom.local/kubeapiserverbuild\n\ngo 1.22.0\n\n'
		printf 'require k8s.io/kubernetes v%s\n\n' "$K8S_VERSION"
		# Each "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x v0.31.4".
		awk -v v="v$STAGING_VERSION" '$2 == "=>" && $3 ~ /^\.\/staging\// { printf "replace %s => %s %s\n", $1, $1, v }' "$kmod"
	} >go.mod || return 1
	local n
	n=$(grep -c '^replace ' go.mod)
	((n >= 30)) || { log "found only $n staging modules in $kmod"; return 1; }
	cat >main.go <<-'GO' || return 1
		// Command kube-apiserver is k8s.io/kubernetes/cmd/kube-apiserver's main,
		// built outside the kubernetes repository for mailroom's tests.
		package main

		import (
			"os"

			"k8s.io/component-base/cli"
			_ "k8s.io/component-base/logs/json/register"
			_ "k8s.io/component-base/metrics/prometheus/clientgo"
			_ "k8s.io/component-base/metrics/prometheus/version"
			"k8s.io/kubernetes/cmd/kube-apiserver/app"
		)

		func main() {
			os.Exit(cli.Run(app.NewAPIServerCommand()))
		}
	GO
	log "go mod tidy ($n staging modules replaced by v$STAGING_VERSION)"
	go mod tidy >&2 || return 1
	log "go build k8s.io/kubernetes/cmd/kube-apiserver"
	local pkg=k8s.io/component-base/version
	go build -trimpath -ldflags "-s -w -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=31 -X $pkg.gitTreeState=clean" \
		-o "$scratch/kube-apiserver" . >&2 || return 1
	cd - >/dev/null || return 1
}

cmd_build() {
	local bin
	bin=$(abs_bin)
	if [[ -x $bin ]]; then
		local have
		have=$("$bin" --version 2>/dev/null | head -n1 || true)
		if [[ $have == "Kubernetes v$K8S_VERSION" ]]; then
			return 0
		fi
		die "$bin reports '${have:-nothing}', want Kubernetes v$K8S_VERSION; remove it or point KUBE_APISERVER_BIN elsewhere"
	fi
	command -v go >/dev/null || die "go is not on PATH; it is needed to build kube-apiserver"
	local scratch start=$SECONDS
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/mailroom-kube-build.XXXXXX")
	log "building kube-apiserver v$K8S_VERSION into $bin (first time: several minutes)"
	if ! (build_in "$scratch"); then
		rm -rf "$scratch"
		die "building kube-apiserver v$K8S_VERSION failed"
	fi
	mkdir -p "$(dirname "$bin")"
	cp "$scratch/kube-apiserver" "$bin.tmp.$$"
	mv -f "$bin.tmp.$$" "$bin"
	rm -rf "$scratch"
	log "built $("$bin" --version | head -n1) at $bin in $((SECONDS - start))s"
}

# port_in_use PORT: true when a TCP socket on this host uses PORT.
port_in_use() {
	local hex f
	hex=$(printf '%04X' "$1")
	for f in /proc/net/tcp /proc/net/tcp6; do
		[[ -r $f ]] || continue
		if awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' "$f"; then
			return 0
		fi
	done
	return 1
}

# free_ports N: N distinct free ports below the ephemeral range.
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

pid_alive() {
	kill -0 "$1" 2>/dev/null || return 1
	if [[ -r /proc/$1/stat ]]; then
		local state
		state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null || echo X)
		[[ $state != Z && $state != X ]]
	fi
}

# stop_pid FILE: stop the process whose pid FILE holds and wait for it.
stop_pid() {
	local f=$1 pid
	[[ -f $f ]] || return 0
	pid=$(cat "$f")
	if pid_alive "$pid"; then
		kill -CONT "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
		local deadline=$((SECONDS + 15))
		while pid_alive "$pid" && ((SECONDS < deadline)); do sleep 0.05; done
		if pid_alive "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
			while pid_alive "$pid"; do sleep 0.05; done
		fi
	fi
	rm -f "$f"
}

start_etcd() {
	local dir=$1 client peer pid
	command -v etcd >/dev/null || die "etcd is missing (scripts/debian-tool.sh etcd-server etcd)"
	read -r client peer <<<"$(free_ports 2)"
	rm -rf "$dir/etcd"
	ETCD_UNSUPPORTED_ARCH=${ETCD_UNSUPPORTED_ARCH:-} nohup etcd --name mailroom-test --data-dir "$dir/etcd" \
		--listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
		--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "mailroom-test=http://127.0.0.1:$peer" --log-level warn \
		</dev/null >"$dir/etcd.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/etcd.pid"
	echo "http://127.0.0.1:$client" >"$dir/etcd.url"
	local deadline=$((SECONDS + 30))
	while ((SECONDS < deadline)); do
		pid_alive "$pid" || return 1
		if curl -fsS "http://127.0.0.1:$client/health" 2>/dev/null | grep -q '"health":"true"'; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# start_apiserver DIR: start kube-apiserver against DIR's etcd on the port
# in DIR/apiserver.port (drawn on the first start, kept on restarts).
start_apiserver() {
	local dir=$1 port pid
	if [[ ! -f $dir/apiserver.port ]]; then
		free_ports 1 >"$dir/apiserver.port"
	fi
	port=$(cat "$dir/apiserver.port")
	# ServiceAccount admission is off: there is no controller-manager to
	# create each namespace's default service account.
	nohup "$(abs_bin)" \
		--etcd-servers "$(cat "$dir/etcd.url")" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$port" \
		--cert-dir "$dir/certs" \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$dir/sa.pub" --service-account-signing-key-file "$dir/sa.key" \
		--token-auth-file "$dir/token.csv" \
		--authorization-mode RBAC \
		--service-cluster-ip-range 10.96.0.0/24 \
		--disable-admission-plugins ServiceAccount \
		--enable-priority-and-fairness=false \
		--v 0 \
		</dev/null >>"$dir/apiserver.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/apiserver.pid"
	local deadline=$((SECONDS + 60)) token
	token=$(cut -d, -f1 "$dir/token.csv")
	while ((SECONDS < deadline)); do
		pid_alive "$pid" || return 1
		if [[ $(curl -ksS -H "Authorization: Bearer $token" "https://127.0.0.1:$port/readyz" 2>/dev/null) == ok ]]; then
			return 0
		fi
		sleep 0.1
	done
	log "kube-apiserver (pid $pid) not ready within 60s; log: $dir/apiserver.log"
	return 1
}

cmd_start() {
	local dir=${1:?usage: kube-apiserver.sh start <dir>}
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	[[ -x $(abs_bin) ]] || die "no kube-apiserver at $(abs_bin); run: scripts/kube-apiserver.sh build"
	command -v openssl >/dev/null || die "openssl is needed for the service-account keys"
	command -v curl >/dev/null || die "curl is needed to probe etcd and the apiserver"
	openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
	openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
	local token
	token=$(openssl rand -hex 24)
	echo "$token,admin,admin,system:masters" >"$dir/token.csv"
	local attempt ok=
	for attempt in 1 2 3; do
		if start_etcd "$dir"; then ok=1; break; fi
		log "attempt $attempt: etcd failed to start; log tail:"
		tail -n 5 "$dir/etcd.log" >&2 || true
		stop_pid "$dir/etcd.pid"
	done
	[[ -n $ok ]] || die "could not start etcd"
	ok=
	for attempt in 1 2 3; do
		if start_apiserver "$dir"; then ok=1; break; fi
		log "attempt $attempt: kube-apiserver failed to start; log tail:"
		tail -n 5 "$dir/apiserver.log" >&2 || true
		stop_pid "$dir/apiserver.pid"
		rm -f "$dir/apiserver.port"
	done
	[[ -n $ok ]] || { stop_pid "$dir/etcd.pid"; die "could not start kube-apiserver"; }
	cat >"$dir/admin.kubeconfig" <<-KC
		apiVersion: v1
		kind: Config
		clusters:
		- name: test
		  cluster:
		    server: https://127.0.0.1:$(cat "$dir/apiserver.port")
		    certificate-authority: $dir/certs/apiserver.crt
		users:
		- name: admin
		  user:
		    token: $token
		contexts:
		- name: test
		  context: {cluster: test, user: admin, namespace: default}
		current-context: test
	KC
	log "etcd (pid $(cat "$dir/etcd.pid")) and kube-apiserver (pid $(cat "$dir/apiserver.pid")) up on https://127.0.0.1:$(cat "$dir/apiserver.port")"
	echo "KUBECONFIG=$dir/admin.kubeconfig"
}

cmd_restart_apiserver() {
	local dir=${1:?usage: kube-apiserver.sh restart-apiserver <dir>}
	stop_pid "$dir/apiserver.pid"
	start_apiserver "$dir" || die "kube-apiserver did not come back"
}

cmd_stop() {
	local dir=${1:?usage: kube-apiserver.sh stop <dir>}
	stop_pid "$dir/apiserver.pid"
	stop_pid "$dir/etcd.pid"
}

# can_run: whether the prerequisites are there; outside CI a missing one
# only warns (the tests skip), under CI=true it fails.
can_run() {
	if ! (cmd_build) || ! "$REPO/scripts/debian-tool.sh" etcd-server etcd -- "the Kubernetes tests" || ! command -v etcd >/dev/null; then
		[[ ${CI:-} == true ]] && die "kube-apiserver or etcd is missing"
		log "warning: kube-apiserver or etcd is missing; the Kubernetes tests will skip"
		return 1
	fi
}

cmd_run() {
	[[ ${1:-} == -- ]] && shift
	(($# > 0)) || die "usage: kube-apiserver.sh run -- <cmd...>"
	if ! can_run; then
		exec "$@"
	fi
	local dir out
	dir=$(mktemp -d "${TMPDIR:-/tmp}/mailroom-kube.XXXXXX")
	# shellcheck disable=SC2064 # expand now
	trap "cmd_stop '$dir'; rm -rf '$dir'" EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	out=$(cmd_start "$dir")
	export "${out?}"
	MAILROOM_KUBE_DIR=$dir MAILROOM_KUBE_APISERVER_BIN=$(abs_bin) MAILROOM_KUBE_SCRIPT="$REPO/scripts/kube-apiserver.sh"
	export MAILROOM_KUBE_DIR MAILROOM_KUBE_APISERVER_BIN MAILROOM_KUBE_SCRIPT
	log "running with KUBECONFIG=$KUBECONFIG: $*"
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
	restart-apiserver) cmd_restart_apiserver "$@" ;;
	run) cmd_run "$@" ;;
	*) usage ;;
	esac
}

main "$@"
