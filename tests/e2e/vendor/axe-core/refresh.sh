#!/usr/bin/env bash
# Replace the vendored axe-core with the given version (default: the one in README.md) from npm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="${1:-$(sed -n 's/.*\*\*\([0-9][0-9.]*\)\*\*.*/\1/p' "$here/README.md" | head -1)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "axe-core@$version" >/dev/null && tar xzf "axe-core-$version.tgz")
cp "$work/package/axe.min.js" "$work/package/LICENSE" "$work/package/LICENSE-3RD-PARTY.txt" "$here/"
sed -i "s/\*\*[0-9][0-9.]*\*\*/**$version**/" "$here/README.md"
head -c 20 "$here/axe.min.js"; echo
