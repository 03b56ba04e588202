#!/usr/bin/env bash
# Builds KubeStellar's controller-manager from the Go module proxy (no binary downloads) into a
# per-version cache folder beside the control-plane binaries, and prints that folder. Skips the
# build when the binary exists. test/kscompat runs it beside statusfold.
#
#   hack/kubestellar-assets.sh [DIR]   DIR defaults to $HOME/.cache/statusfold/kubestellar/$KUBESTELLAR_VERSION
#
# github.com/kubestellar/kubestellar replaces a few k8s.io staging modules in its go.mod, which
# `go install pkg@version` refuses, so we generate a tiny module that requires it, copy its
# `replace` lines, and build cmd/controller-manager there. The checksum database does not know
# github.com/kubestellar/kubeflex v0.9.3, hence GONOSUMDB.
set -euo pipefail

KUBESTELLAR_VERSION="${KUBESTELLAR_VERSION:-v0.30.0}"
DIR="${1:-${HOME}/.cache/statusfold/kubestellar/${KUBESTELLAR_VERSION}}"
MODULE=github.com/kubestellar/kubestellar

log() { printf '[kubestellar-assets %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ -x "${DIR}/controller-manager" ]]; then
  echo "${DIR}"
  exit 0
fi

export GONOSUMDB="${GONOSUMDB:+${GONOSUMDB},}github.com/kubestellar"
mkdir -p "${DIR}"
WORK="$(mktemp -d "${DIR}/.build.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT
cd "${WORK}"

log "building KubeStellar ${KUBESTELLAR_VERSION} controller-manager into ${DIR}"
log "from empty Go caches this takes about 5 minutes on 2 cores; later runs reuse ${DIR}"

gomod="$(go mod download -json "${MODULE}@${KUBESTELLAR_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "${gomod}" ]] || { log "could not download ${MODULE}@${KUBESTELLAR_VERSION}"; exit 1; }

{
  echo "module statusfold.local/kubestellar-assets"
  echo
  echo "go 1.25.0"
  echo
  echo "require ${MODULE} ${KUBESTELLAR_VERSION}"
  echo
  # KubeStellar's own replace block, verbatim.
  awk '/^replace \(/{p=1} p{print} p&&/^\)/{p=0}' "${gomod}"
  grep -E '^replace [^(]' "${gomod}" || true
} > go.mod

start=$(date +%s)
( while sleep 60; do log "still compiling… $(( $(date +%s) - start ))s"; done ) &
ticker=$!
trap 'kill ${ticker} 2>/dev/null || true; rm -rf "${WORK}"' EXIT
mkdir -p out
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o out/controller-manager \
  "${MODULE}/cmd/controller-manager"
kill ${ticker} 2>/dev/null || true
mv out/controller-manager "${DIR}/controller-manager.tmp" && mv "${DIR}/controller-manager.tmp" "${DIR}/controller-manager"
log "done in $(( $(date +%s) - start ))s"
echo "${DIR}"
