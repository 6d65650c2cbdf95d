#!/usr/bin/env bash
# Builds tlsbench as one static binary (no C library, no dynamic loader):
# the binary of the image (Dockerfile) and of the kube test that runs the
# manifests' command line. Usage: scripts/build-static.sh OUT [VERSION]
set -euo pipefail
out=${1:?usage: build-static.sh OUT [VERSION]}
ldflags="-s -w"
if [ -n "${2:-}" ]; then
  ldflags+=" -X github.com/tlsbench/tlsbench/internal/cli.Version=$2"
fi
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out" ./cmd/tlsbench
