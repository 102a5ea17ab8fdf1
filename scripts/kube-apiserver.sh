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

main() {
	local sub=${1:-}
	(($# > 0)) && shift
	case $sub in
	build) cmd_build ;;
	*) usage ;;
	esac
}

main "$@"
