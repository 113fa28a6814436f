#!/bin/sh
# Regenerates types.json (the field tree of every built-in kind kube-sim serves) from the Go
# types of k8s.io/api, k8s.io/apimachinery and k8s.io/apiextensions-apiserver (versions in
# gen/go.mod). Needs Go and the module cache or proxy; the crate embeds the committed output.
set -eu
cd "$(dirname "$0")/gen"
go run . ../types.json
