#!/usr/bin/env bash
# Build the upstream oracles (tools/upstream/cmd/kube-oracle, cmd/kueue-oracle; see
# serve/serve.go) into tools/upstream/bin/.
# Needs Go (go.mod's version or newer) and the Go module proxy (the first build downloads
# k8s.io/kubernetes v1.35.4, sigs.k8s.io/kueue v0.17.0 and sigs.k8s.io/karpenter v1.13.0
# with their dependencies, about 0.7 GB of module cache). Exit status 3 when Go is absent.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v go >/dev/null 2>&1; then
  echo "tools/upstream/build.sh: go not found on PATH; install Go to build the upstream oracle" >&2
  exit 3
fi
mkdir -p bin
GOFLAGS="${GOFLAGS:-} -mod=readonly" go build -trimpath -o bin/ ./cmd/kube-oracle ./cmd/kueue-oracle
echo "built tools/upstream/bin/kube-oracle and kueue-oracle ($(go version | cut -d' ' -f3))"
