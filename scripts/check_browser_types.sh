#!/usr/bin/env bash
# Type-check the chat's browser scripts (static/orkestrel/*.js) with a pinned TypeScript.
#
# The files marked `// @ts-check` are checked against their JSDoc types; nothing is emitted and
# nothing is committed but this script and scripts/browser/tsconfig.json. TypeScript is
# installed once into a scratch folder outside the checkout (no node_modules in the tree);
# `make run` never needs Node. tests/web/ui/test_browser_types.py runs this when Node is here.
#
# Usage: scripts/check_browser_types.sh
set -euo pipefail

TYPESCRIPT=5.9.3
REPO="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="${ORKESTREL_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/orkestrel/typescript-$TYPESCRIPT}"
TSC="$TOOLS/node_modules/.bin/tsc"

if [ ! -x "$TSC" ]; then
  mkdir -p "$TOOLS"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS" "typescript@$TYPESCRIPT" >&2
fi
exec "$TSC" -p "$REPO/scripts/browser/tsconfig.json"
