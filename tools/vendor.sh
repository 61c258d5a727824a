#!/usr/bin/env bash
# Install the book's JavaScript from the npm registry (pinned by tools/vendor/package-lock.json)
# and copy it into book/_static/vendor, so the HTML serves MathJax 3 and the widget manager
# itself instead of loading them from a CDN. Idempotent; called by `make book`.
set -euo pipefail
cd "$(dirname "$0")"
dest=../book/_static/vendor
stamp=$dest/.installed-$(sha1sum vendor/package-lock.json | cut -c1-12)
[ -f "$stamp" ] && exit 0
(cd vendor && npm ci --no-audit --no-fund --loglevel=error)
rm -rf "$dest" && mkdir -p "$dest/html-manager"
cp -r vendor/node_modules/mathjax/es5 "$dest/mathjax"
cp vendor/node_modules/requirejs/require.js "$dest/require.js"
find vendor/node_modules/@jupyter-widgets/html-manager/dist -maxdepth 1 -type f ! -name '*.map' -exec cp {} "$dest/html-manager/" \;
# The widget manager calls the MathJax 2 API (MathJax.Hub.Queue); the book loads MathJax 3.
# Make that call use MathJax 3's typesetPromise when MathJax.Hub is absent.
python3 - "$dest/html-manager" <<'PY'
import pathlib, sys
old = 'MathJax.Hub.Queue(["Typeset",MathJax.Hub,e])'
new = '(MathJax.Hub?MathJax.Hub.Queue(["Typeset",MathJax.Hub,e]):MathJax.typesetPromise&&MathJax.typesetPromise([e]))'
for path in pathlib.Path(sys.argv[1]).glob("*.js"):
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(old, new), encoding="utf-8")
if old in pathlib.Path(sys.argv[1], "embed-amd.js").read_text(encoding="utf-8").replace(new, ""):
    sys.exit("vendor.sh: the MathJax 2 call in embed-amd.js was not patched")
PY
touch "$stamp"
echo "vendored MathJax 3 and the widget manager into book/_static/vendor"
