#!/usr/bin/env bash
# Every plugin's documentation renders, and every role's argument spec matches its defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
for kind in filter lookup callback inventory module; do
  dir=plugins/$kind
  [ "$kind" = module ] && dir=plugins/modules
  for f in "$dir"/*.py; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .py)
    case "$name" in _*) continue ;; esac
    if ! out=$(ansible-doc -t "$kind" "gpucluster.acceptance.$name" 2>&1) || ! grep -q "$name" <<<"$out"; then
      echo "ansible-doc failed for $kind gpucluster.acceptance.$name:"; echo "$out" | head -20; fail=1
    fi
  done
done
for role in roles/*/; do
  [ -d "$role" ] || continue
  name=$(basename "$role")
  if ! ansible-doc -t role "gpucluster.acceptance.$name" >/dev/null 2>&1; then
    echo "ansible-doc -t role gpucluster.acceptance.$name failed"; fail=1
  fi
done
python tools/check_role_specs.py || fail=1
[ "$fail" = 0 ] && echo "docs-check: all plugin and role docs render; specs match defaults"
exit "$fail"
