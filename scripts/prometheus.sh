#!/usr/bin/env bash
# Makes sure a Prometheus server is there for the metrics package's scrape
# test (metrics/prometheus_test.go, which runs the scrape configuration of
# docs/METRICS.md): if no prometheus is on PATH (or $PROMETHEUS), installs
# Debian's `prometheus` package (scripts/debian-tool.sh); the test starts
# its own server and stops it. Outside CI a failed install only warns (the
# test then skips); under CI=true it fails, and so does the test.
set -euo pipefail
exec "$(dirname "$0")/debian-tool.sh" prometheus prometheus "${PROMETHEUS:-}" -- "the metrics scrape test"
