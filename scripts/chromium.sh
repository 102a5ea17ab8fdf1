#!/usr/bin/env bash
# Makes sure headless Chromium is there for the observer's browser test
# (observer/browser_test.go): if no chromium is on PATH (or $CHROMIUM),
# installs Debian's `chromium` package (scripts/debian-tool.sh). Outside CI
# a failed install only warns (the browser test then skips); under CI=true
# it fails, and so does the test.
set -euo pipefail
exec "$(dirname "$0")/debian-tool.sh" chromium chromium "${CHROMIUM:-}" chromium-browser google-chrome -- "the observer's browser test"
