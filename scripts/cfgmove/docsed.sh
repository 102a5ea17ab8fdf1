#!/bin/sh
# Run from the repository root after cfgmove (see main.go).
# Doc comments and Markdown: remote.Config.<moved field> -> remote.Config.<Limits|Liveness>.<field>.
# Skips CHANGELOG.md (its old entries name the fields as they were) and scripts/cfgmove.
git ls-files '*.go' '*.md' | grep -v -e '^CHANGELOG.md$' -e '^scripts/cfgmove/' | xargs sed -i -E \
  -e 's/\bConfig\.(HeartbeatInterval|HeartbeatMisses|LinkIdleTimeout|ForgetNodesAfter)\b/Config.Liveness.\1/g' \
  -e 's/\bConfig\.(MaxFrameSize|MaxHandshakes|MaxHandshakesPerIP|MaxInflightPerPeer|MaxInflightBytesPerPeer|MaxMessageSize|ReadBudgetBytes|MaxLinksPerPeer|MaxAnnounceBytes|MaxWatchesPerPeer|MaxNodes)\b/Config.Limits.\1/g'
