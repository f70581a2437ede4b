#!/usr/bin/env bash
# Refresh the browser libraries the chat page uses, as built files under static/vendor/.
#
# Each package is fetched with `npm pack NAME@VERSION` into a scratch folder (nothing is
# installed, no node_modules is kept) and only its built browser files and licence are copied.
# The files are committed: `make run` never needs Node. Change a version below, run this
# script, look at the diff of static/vendor/, and run the chat's browser tests.
#
# Usage: scripts/vendor_browser_libs.sh
set -euo pipefail

MARKDOWN_IT=15.0.3          # MIT
DOMPURIFY=3.5.0             # MPL-2.0 or Apache-2.0
HIGHLIGHT_JS=11.12.0        # BSD-3-Clause (@highlightjs/cdn-assets: the prebuilt browser files)
KATEX=0.19.1                # MIT

REPO="$(cd "$(dirname "$0")/.." && pwd)"
VENDOR="$REPO/static/vendor"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

# unpack NAME VERSION: the package's files, in $SCRATCH/<dir>/package; prints that folder.
unpack() {
  local name="$1" version="$2" folder
  folder="$SCRATCH/$(echo "$name" | tr -d '@' | tr '/' '-')"
  mkdir -p "$folder"
  (cd "$folder" && npm pack --silent "$name@$version" >/dev/null && tar xzf ./*.tgz)
  echo "$folder/package"
}

copy() { # copy SOURCE DEST: one file, its folder made first
  mkdir -p "$(dirname "$2")"
  cp "$1" "$2"
}

rm -rf "$VENDOR"
mkdir -p "$VENDOR"

# markdown-it: the self-contained ES module build, and its types (for the type check only).
src="$(unpack markdown-it "$MARKDOWN_IT")"
copy "$src/dist/browser/markdown-it.esm.min.mjs" "$VENDOR/markdown-it/markdown-it.esm.min.mjs"
copy "$src/dist/markdown-it.d.mts" "$VENDOR/markdown-it/markdown-it.esm.min.d.mts"
copy "$src/LICENSE" "$VENDOR/markdown-it/LICENSE"

# DOMPurify: the ES module build (no minified one is published), and its types.
src="$(unpack dompurify "$DOMPURIFY")"
copy "$src/dist/purify.es.mjs" "$VENDOR/dompurify/purify.es.mjs"
copy "$src/dist/purify.es.d.mts" "$VENDOR/dompurify/purify.es.d.mts"
copy "$src/LICENSE" "$VENDOR/dompurify/LICENSE"

# highlight.js: the ES module build with its common languages (loaded when a page has code).
src="$(unpack @highlightjs/cdn-assets "$HIGHLIGHT_JS")"
copy "$src/es/highlight.min.js" "$VENDOR/highlight.js/highlight.min.js"
copy "$src/LICENSE" "$VENDOR/highlight.js/LICENSE"

# KaTeX: the browser build only (loaded when a page has math). It renders MathML, which the
# browser lays out itself: no stylesheet, no fonts, no inline styles.
src="$(unpack katex "$KATEX")"
copy "$src/dist/katex.min.js" "$VENDOR/katex/katex.min.js"
copy "$src/LICENSE" "$VENDOR/katex/LICENSE"

cat > "$VENDOR/VERSIONS.md" <<NOTE
# Vendored browser libraries

Built files copied from the npm packages by \`scripts/vendor_browser_libs.sh\` (do not edit
them here: change the version in the script and run it again). Each folder keeps the package's
LICENSE. The \`.d.mts\` files are the packages' own types, read only by the type check of the
chat's scripts (\`scripts/check_browser_types.sh\`).

| folder | npm package | version | licence | files |
| --- | --- | --- | --- | --- |
| markdown-it | markdown-it | $MARKDOWN_IT | MIT | dist/browser/markdown-it.esm.min.mjs |
| dompurify | dompurify | $DOMPURIFY | MPL-2.0 OR Apache-2.0 | dist/purify.es.mjs |
| highlight.js | @highlightjs/cdn-assets | $HIGHLIGHT_JS | BSD-3-Clause | es/highlight.min.js |
| katex | katex | $KATEX | MIT | dist/katex.min.js |
NOTE

echo "static/vendor/ refreshed:"
(cd "$VENDOR" && find . -type f | sort | xargs ls -l | awk '{print "  " $5 "\t" $9}')
