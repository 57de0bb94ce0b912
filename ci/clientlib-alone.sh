#!/usr/bin/env bash
# Builds and vets clientlib the way a producer's build sees it: without
# go.work, with the envelope module fetched from a module proxy at the
# version clientlib/go.mod requires. The proxy is a directory made here from
# the working copy of envelope/ (the release step tags both modules
# together, so this is the pair a release would publish). Fails when
# clientlib's module graph reaches a server dependency.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=github.com/eventcenter/eventcenter/envelope
ver=$(awk -v m="$mod" '$1 == m { print $2 } $1 == "require" && $2 == m { print $3 }' clientlib/go.mod)
[ -n "$ver" ] || { echo "clientlib/go.mod does not require $mod" >&2; exit 1; }
if grep -q 'eventcenter/eventcenter ' clientlib/go.mod || grep -q '^replace' clientlib/go.mod; then
	echo "clientlib/go.mod must not require the center's module nor replace anything" >&2; exit 1
fi

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
proxy="$work/proxy/$mod/@v"
mkdir -p "$proxy"
printf '%s\n' "$ver" >"$proxy/list"
printf '{"Version":"%s","Time":"2000-01-01T00:00:00Z"}\n' "$ver" >"$proxy/$ver.info"
cp envelope/go.mod "$proxy/$ver.mod"
python3 - "$mod@$ver" "$proxy/$ver.zip" <<'PY'
import os, sys, zipfile
prefix, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for root, dirs, files in os.walk("envelope"):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            z.write(p, prefix + "/" + os.path.relpath(p, "envelope"))
PY

cp -r clientlib "$work/clientlib"
cd "$work/clientlib"
export GOWORK=off GOFLAGS=-mod=mod GONOSUMDB='github.com/eventcenter/*' GONOPROXY= GOPRIVATE=
# A module cache of its own: the envelope version is a fixed pseudo-version,
# so a shared cache would keep serving the envelope of an earlier run. The
# shared cache's downloads stand in for the network where they can.
shared="$(go env GOMODCACHE)/cache/download"
export GOPROXY="file://$work/proxy,file://$shared,$(go env GOPROXY)"
export GOMODCACHE="$work/modcache"
go build ./...
go vet ./...
# The build above recorded envelope's hash in the copy's go.sum; any other
# difference is clientlib's go.mod or go.sum not being tidy.
go mod tidy -diff || { echo "clientlib/go.mod is not tidy: run go mod tidy in clientlib" >&2; exit 1; }
forbidden=$(go list -m all | grep -E 'jackc/pgx|sqlite|rocketmq|testcontainers|chromedp|go-sql-driver' || true)
if [ -n "$forbidden" ]; then
	echo "clientlib's module graph reaches server dependencies:" >&2
	echo "$forbidden" >&2
	exit 1
fi
echo "clientlib builds alone against $mod@$ver; its graph has $(go list -m all | wc -l) modules"
