#!/usr/bin/env bash
# Makes sure a tool a test needs is on PATH: if none of the commands named
# is there, installs the Debian package with apt-get (as root, or through
# sudo). Outside CI a failed install only warns (the tests that need it
# then skip); under CI=true it fails, and so do those tests.
#
# usage: scripts/debian-tool.sh PACKAGE COMMAND [COMMAND...] -- WHAT
#   e.g. scripts/debian-tool.sh chromium chromium chromium-browser -- "the observer's browser test"
set -euo pipefail

pkg=$1
shift
cmds=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	cmds+=("$1")
	shift
done
[ "${1:-}" = "--" ] && shift
what=${1:-"the tests that need it"}

for c in "${cmds[@]}"; do
	if [ -n "$c" ] && command -v "$c" >/dev/null 2>&1; then
		exit 0
	fi
done

fail() {
	if [ "${CI:-}" = "true" ]; then
		echo "scripts/debian-tool.sh: $*" >&2
		exit 1
	fi
	echo "scripts/debian-tool.sh: warning: $* ($what will skip)" >&2
	exit 0
}

command -v apt-get >/dev/null 2>&1 || fail "$pkg is missing and there is no apt-get to install it"
sudo=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null 2>&1 || fail "$pkg is missing and installing it needs root (no sudo)"
	sudo="sudo -n"
fi
echo "scripts/debian-tool.sh: installing $pkg (apt-get) for $what" >&2
if ! ($sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$pkg") >&2; then
	fail "apt-get install $pkg failed"
fi
for c in "${cmds[@]}"; do
	if [ -n "$c" ] && command -v "$c" >/dev/null 2>&1; then
		exit 0
	fi
done
fail "none of ${cmds[*]} is there after apt-get install $pkg"
