#!/usr/bin/env bash
# Builds kube-apiserver, kubectl and etcd from Go modules (no binary downloads) into a
# per-version cache folder, and prints that folder. Skips the build when the binaries exist.
#
#   hack/envtest-assets.sh [DIR]      DIR defaults to $HOME/.cache/statusfold/k8s/$K8S_VERSION
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces its staging modules with
# ./staging/... paths), so we generate a tiny module that requires it and replaces every staging
# module with its published v0.X.Y release, then build all three binaries in one `go build`.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
STAGING_VERSION="v0${K8S_VERSION#v1}"
DIR="${1:-${HOME}/.cache/statusfold/k8s/${K8S_VERSION}}"

log() { printf '[envtest-assets %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ -x "${DIR}/kube-apiserver" && -x "${DIR}/etcd" && -x "${DIR}/kubectl" ]]; then
  echo "${DIR}"
  exit 0
fi

mkdir -p "${DIR}"
WORK="$(mktemp -d "${DIR}/.build.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT
cd "${WORK}"

log "building kube-apiserver, kubectl ${K8S_VERSION} and etcd into ${DIR}"
log "from empty Go caches this takes about 9 minutes on 2 cores; later runs reuse ${DIR}"

log "reading k8s.io/kubernetes@${K8S_VERSION} go.mod"
gomod="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "${gomod}" ]] || { log "could not download k8s.io/kubernetes@${K8S_VERSION}"; exit 1; }

{
  echo "module statusfold.local/envtest-assets"
  echo
  echo "go 1.26"
  echo
  echo "require k8s.io/kubernetes ${K8S_VERSION}"
  echo
  # Every `k8s.io/X => ./staging/src/k8s.io/X` becomes `k8s.io/X => k8s.io/X v0.N.M`.
  grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ => \./staging/' "${gomod}" \
    | awk '{print $1}' \
    | grep -v -E '^k8s\.io/(sample-cli-plugin|sample-controller)$' \
    | while read -r m; do echo "replace ${m} => ${m} ${STAGING_VERSION}"; done
} > go.mod

cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
mkdir -p cmd/etcd
cat > cmd/etcd/main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO

log "resolving modules (go mod tidy)"
go mod tidy -e >/dev/null 2>&1 || true
# tools.go is behind a build tag, so make sure the commands' packages are required.
GOFLAGS=-mod=mod go get "k8s.io/kubernetes@${K8S_VERSION}" >/dev/null 2>&1
etcd_version="$(GOFLAGS=-mod=mod go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
log "etcd from go.etcd.io/etcd/server/v3 ${etcd_version} (the version k8s.io/kubernetes ${K8S_VERSION} requires)"

ldflags="-s -w"
ldflags+=" -X k8s.io/component-base/version.gitVersion=${K8S_VERSION}"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$(echo "${K8S_VERSION}" | cut -d. -f2)"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION}"

log "compiling (go build prints nothing while it works: a line every minute says it still runs)"
start=$(date +%s)
( while sleep 60; do log "still compiling… $(( $(date +%s) - start ))s"; done ) &
ticker=$!
trap 'kill ${ticker} 2>/dev/null || true; rm -rf "${WORK}"' EXIT
mkdir -p out
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "${ldflags}" -o out/ \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl ./cmd/etcd
kill ${ticker} 2>/dev/null || true
for b in kube-apiserver kubectl etcd; do mv "out/${b}" "${DIR}/${b}.tmp" && mv "${DIR}/${b}.tmp" "${DIR}/${b}"; done
log "done in $(( $(date +%s) - start ))s: $(ls "${DIR}" | tr '\n' ' ')"
echo "${DIR}"
