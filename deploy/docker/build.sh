#!/bin/sh
# build.sh builds a static eventcenter binary (or another main package of
# this module) with the version stamped in. It is THE build command: the
# container image (deploy/docker/Dockerfile) and CI (ci/deploy.sh) both run
# this script, so what CI proves is what the image ships.
#
# Usage: deploy/docker/build.sh [OUTPUT [PACKAGE]]
#   OUTPUT   default /out/eventcenter
#   PACKAGE  default ./cmd/eventcenter
# Environment: VERSION and COMMIT (defaults from git when it is there,
# else "dev" and "unknown"); GOOS/GOARCH pass through to go build.
set -eu

cd "$(dirname "$0")/../.."

out=${1:-/out/eventcenter}
pkg=${2:-./cmd/eventcenter}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
v=github.com/eventcenter/eventcenter/internal/version

CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $v.Version=$VERSION -X $v.Commit=$COMMIT" -o "$out" "$pkg"
