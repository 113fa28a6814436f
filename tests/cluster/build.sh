#!/usr/bin/env bash
# Builds the real control plane the end-to-end tests run on, from the published Go modules
# pinned in the wrapper modules beside this script, into target/cluster/<KUBE_VERSION>/:
#   kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok (+ kwok-stages.yaml)
# Cached: a binary set is rebuilt only when its wrapper module or this script changes.
# Nothing is downloaded but Go modules from the module proxy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$here/versions.env"

command -v go >/dev/null 2>&1 || {
  echo "error: 'go' not found on PATH: the real control plane (kube-apiserver, etcd, kwok, ...) is built from Go modules; install Go >= 1.26 with access to the Go module proxy" >&2
  exit 1
}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
out="${CLUSTER_BIN_DIR:-$root/target/cluster/$KUBE_VERSION}"
mkdir -p "$out"

# A stamp per wrapper module: the hash of what decides its binaries.
shopt -s nullglob
stamp_of() { cat "$here/$1/go.mod" "$here/$1/go.sum" "$here/$1/"*.go "$here/build.sh" | sha256sum | cut -d' ' -f1; }
fresh() { # module binary...
  local module="$1"; shift
  [[ -f "$out/.stamp-$module" && "$(cat "$out/.stamp-$module")" == "$(stamp_of "$module")" ]] || return 1
  local bin; for bin in "$@"; do [[ -x "$out/$bin" ]] || return 1; done
}
download() { # module
  (cd "$here/$1" && go mod download) || {
    echo "error: the Go modules of tests/cluster/$1 could not be downloaded: is the Go module proxy reachable (GOPROXY=$(go env GOPROXY))?" >&2
    exit 1
  }
}
build() { # module what...
  local module="$1"; shift
  local started=$SECONDS
  echo "building $module -> $out"
  download "$module"
  (cd "$here/$module" && go build -trimpath -o "$out/" "$@")
  stamp_of "$module" > "$out/.stamp-$module"
  echo "built $module in $((SECONDS - started)) s"
}

# /version must say the real version: hack/lib/version.sh sets the same variables.
version_flags() {
  local info date minor pkg flags=""
  info="$(cd "$here/kubernetes-$KUBE_VERSION" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"Info": "\(.*\)",/\1/p')"
  date="$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$info")"
  minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  echo "$flags"
}

k8s_bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
fresh "kubernetes-$KUBE_VERSION" "${k8s_bins[@]}" || {
  download "kubernetes-$KUBE_VERSION" # first: version_flags reads the module's .info
  build "kubernetes-$KUBE_VERSION" -ldflags "-s -w $(version_flags)" tool
}
fresh "etcd-$ETCD_VERSION" etcd || build "etcd-$ETCD_VERSION" -ldflags "-s -w" .
fresh "kwok-$KWOK_VERSION" kwok || build "kwok-$KWOK_VERSION" -ldflags "-s -w" tool

# kwok's stages, from its own module, with the delays our tests want (see kwok-stages.sh).
download "kwok-$KWOK_VERSION"
"$here/kwok-stages.sh" "$(cd "$here/kwok-$KWOK_VERSION" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)" > "$out/kwok-stages.yaml"
echo "control plane $KUBE_VERSION ready in $out"
