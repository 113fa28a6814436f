#!/usr/bin/env bash
# Builds the real control plane the end-to-end tests run on, from the published Go modules
# pinned in the wrapper modules beside this script, into target/cluster/<version>/:
#   kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok (+ kwok-stages.yaml)
# and, beside KUBE_VERSION's only (the chart's and monitoring tests run there): helm (Helm 4),
# helm3 (Helm 3), promtool and crds/ (cert-manager's and prometheus-operator's CRDs, from their modules).
#
#   build.sh [--core] [version]
#     version: KUBE_VERSION (the default) or OLDEST_KUBE_VERSION, from versions.env;
#              `make cluster-build` builds both.
#     --core:  the control plane alone, without Helm and the CRDs (what `make demo` needs).
#
# Each version's directory is complete on its own (etcd and kwok too: the Go build cache makes
# the second copy cheap), so a test points at one directory and nothing else.
# Cached: a binary set is rebuilt only when its wrapper module or this script changes.
# Nothing is downloaded but Go modules from the module proxy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$here/versions.env"

core=false
if [[ "${1:-}" == "--core" ]]; then core=true; shift; fi
# Only the versions gen-modules.sh wrote a module for can be built.
version="${1:-$KUBE_VERSION}"
if [[ "$version" != "$KUBE_VERSION" && "$version" != "$OLDEST_KUBE_VERSION" ]]; then
  echo "error: cannot build Kubernetes '$version': tests/cluster/versions.env names KUBE_VERSION=$KUBE_VERSION and OLDEST_KUBE_VERSION=$OLDEST_KUBE_VERSION (usage: $0 [--core] [$KUBE_VERSION|$OLDEST_KUBE_VERSION])" >&2
  exit 2
fi

command -v go >/dev/null 2>&1 || {
  echo "error: 'go' not found on PATH: the real control plane (kube-apiserver, etcd, kwok, ...) is built from Go modules; install Go >= 1.26 with access to the Go module proxy" >&2
  exit 1
}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
out="$root/target/cluster/$version"
# $CLUSTER_BIN_DIR stands for KUBE_VERSION's directory only, as in the harness (tests/support/
# cluster.rs): `make cluster-build` builds both versions, and one directory cannot hold both.
if [[ "$version" == "$KUBE_VERSION" && -n "${CLUSTER_BIN_DIR:-}" ]]; then out="$CLUSTER_BIN_DIR"; fi
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
  info="$(cd "$here/kubernetes-$version" && go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"Info": "\(.*\)",/\1/p')"
  date="$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$info")"
  minor="${version#v1.}"; minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  echo "$flags"
}

k8s_bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
fresh "kubernetes-$version" "${k8s_bins[@]}" || {
  download "kubernetes-$version" # first: version_flags reads the module's .info
  build "kubernetes-$version" -ldflags "-s -w $(version_flags)" tool
}
fresh "etcd-$ETCD_VERSION" etcd || build "etcd-$ETCD_VERSION" -ldflags "-s -w" .
fresh "kwok-$KWOK_VERSION" kwok || build "kwok-$KWOK_VERSION" -ldflags "-s -w" tool

if [[ "$version" == "$KUBE_VERSION" && "$core" == false ]]; then
  # Helm: `helm version` must say the real version (Helm's Makefile sets the same variable).
  build_helm() { # version binary
    local module="helm-$1" major="${1%%.*}" started=$SECONDS
    fresh "$module" "$2" && return
    echo "building $module -> $out/$2"
    download "$module"
    (cd "$here/$module" && go build -trimpath -o "$out/$2" \
      -ldflags "-s -w -X helm.sh/helm/$major/internal/version.version=$1" "helm.sh/helm/$major/cmd/helm")
    stamp_of "$module" > "$out/.stamp-$module"
    echo "built $module in $((SECONDS - started)) s"
  }
  build_helm "$HELM_VERSION" helm
  build_helm "$HELM3_VERSION" helm3
  # CRDs of the chart's optional objects, as their projects publish them (checked against the
  # Go checksum database like every module).
  module_dir() { (cd "$here" && go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)",/\1/p'); }
  # promtool: `promtool --version` must say the release (its module's VERSION file, 3.16.0 for
  # v0.316.0), as Prometheus' release build sets it. Its rule and query commands need no
  # service discovery: Prometheus' own build tag leaves out the cloud SDKs (287 s → 130 s cold).
  prometheus_release="$(cat "$(module_dir "github.com/prometheus/prometheus@$PROMETHEUS_VERSION")/VERSION")"
  fresh "prometheus-$PROMETHEUS_VERSION" promtool || build "prometheus-$PROMETHEUS_VERSION" -tags remove_all_sd \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$prometheus_release" tool
  mkdir -p "$out/crds"
  cert_manager="$(module_dir "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION")"
  cp "$cert_manager/deploy/crds/cert-manager.io_certificates.yaml" "$cert_manager/deploy/crds/cert-manager.io_issuers.yaml" "$out/crds/"
  prometheus="$(module_dir "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION")"
  cp "$prometheus/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" \
    "$prometheus/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml" "$out/crds/"
  chmod u+w "$out/crds/"*
fi

# kwok's stages, from its own module, with the delays our tests want (see kwok-stages.sh).
download "kwok-$KWOK_VERSION"
"$here/kwok-stages.sh" "$(cd "$here/kwok-$KWOK_VERSION" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)" > "$out/kwok-stages.yaml"
echo "control plane $version ready in $out"
