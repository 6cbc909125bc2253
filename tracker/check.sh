#!/bin/sh
# CI rebuild check for the browser tracker (ANALYTICS.md §3.2, TRK-04, WA-05).
# Rebuilds tracker/dist/tracker.js from tracker/src/rastro.js with the pinned terser into a
# temporary file and fails when it differs from the committed dist or is over 2,560 bytes gzipped
# (WA-05's budget, which replaced TRK-04's 4,096 when the WhatsApp taps came in).
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT INT TERM
npm ci --prefix tracker
RASTRO_TRACKER_OUT="$tmp" npm run --prefix tracker build
if ! cmp -s "$tmp" tracker/dist/tracker.js; then
  echo "tracker/dist/tracker.js differs from a rebuild of tracker/src/rastro.js;" >&2
  echo "run 'npm run --prefix tracker build' and commit the result" >&2
  exit 1
fi
gz=$(gzip -9c tracker/dist/tracker.js | wc -c)
echo "tracker/dist/tracker.js is up to date: $(wc -c < tracker/dist/tracker.js) bytes, $gz bytes gzip -9"
if [ "$gz" -gt 2560 ]; then
  echo "tracker/dist/tracker.js is over 2,560 bytes after gzip -9 (WA-05)" >&2
  exit 1
fi
