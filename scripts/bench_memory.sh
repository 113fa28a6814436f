#!/usr/bin/env bash
# Memory of one replica at cluster scale, for sizing the Deployment's requests/limits
# (deploy/base/deployment.yaml) — figures go to BENCHMARKS.md ("memory").
#
# kube-sim (release) with NODES nodes seeded with NAMESPACES x PER_NS Deployments (2 replicas
# each, half of them with a user PDB), the product (release) as the shipped ServiceAccount with
# the cluster-wide settings (pdb.create, enabledByDefault): it caches every Deployment, PDB,
# node, namespace and HPA and creates a default PDB + EvictionAutoScaler for every Deployment
# without one. Reports the product's RSS once all of that is done, and its peak (VmHWM).
# Knobs: NODES (100), NAMESPACES (100), PER_NS (20); QPS sets --kube-api-qps (burst 2x) for a
# quicker convergence than the default 50 writes/s; HEAPTRACK=1 runs the product under
# heaptrack and prints its allocations by call site when done.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${NODES:-100}
NAMESPACES=${NAMESPACES:-100}
PER_NS=${PER_NS:-20}
QPS=${QPS:-}
command -v kubectl >/dev/null || { echo "error: kubectl is needed on the PATH" >&2; exit 1; }

cargo build -q --release --bin eviction-autoscaler -p eviction-autoscaler
cargo build -q --release --bin kube-sim -p kube-sim
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
export HOME=$WORK/home KUBECACHEDIR=$WORK/home/cache

# The seed: namespaces, Deployments, and a user PDB for every other Deployment.
python3 - "$WORK/seed.yaml" "$NAMESPACES" "$PER_NS" <<'EOF'
import sys
path, namespaces, per_ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
docs = []
for n in range(namespaces):
    ns = f"team-{n}"
    docs.append(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n")
    for d in range(per_ns):
        app = f"app-{d}"
        docs.append(f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {app}, namespace: {ns}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: {app}}}}}
  template:
    metadata: {{labels: {{app: {app}}}}}
    spec: {{containers: [{{name: main, image: x}}]}}
""")
        if d % 2:
            docs.append(f"""apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {app}, namespace: {ns}}}
spec: {{maxUnavailable: 1, selector: {{matchLabels: {{app: {app}}}}}}}
""")
open(path, "w").write("---\n".join(docs))
EOF

target/release/kube-sim --kubeconfig "$WORK/admin" --nodes "$NODES" --seed "$WORK/seed.yaml" \
    --seed deploy/base/crd.yaml --seed deploy/base/namespace.yaml --seed deploy/base/serviceaccount.yaml \
    --seed deploy/base/rbac.yaml \
    --service-account-kubeconfig "eviction-autoscaler/eviction-autoscaler=$WORK/product" >"$WORK/sim.out" &
PIDS+=($!)
for _ in $(seq 600); do grep -q "kube-sim ready" "$WORK/sim.out" && break; sleep 0.1; done
grep -q "kube-sim ready" "$WORK/sim.out" || { echo "error: kube-sim did not start" >&2; exit 1; }

target/release/eviction-autoscaler certs --out "$WORK/certs" --dns localhost --ip 127.0.0.1 >/dev/null
LIMITS=()
[[ -n $QPS ]] && LIMITS=(--kube-api-qps "$QPS" --kube-api-burst $((QPS * 2)))
WRAP=()
[[ -n ${HEAPTRACK:-} ]] && WRAP=(heaptrack -o "$WORK/heap")
KUBECONFIG=$WORK/product POD_NAMESPACE=eviction-autoscaler "${WRAP[@]}" target/release/eviction-autoscaler run "${LIMITS[@]}" \
    --webhook-addr 127.0.0.1:0 --health-addr 127.0.0.1:18481 \
    --tls-cert-file "$WORK/certs/tls.crt" --tls-key-file "$WORK/certs/tls.key" \
    --pdb-create=true --enabled-by-default=true 2>"$WORK/product.log" &
PIDS+=($!)
sleep 1
PRODUCT=$(pgrep -n -x eviction-autosc) # the product itself, also under heaptrack

deployments=$((NAMESPACES * PER_NS))
started=$(date +%s)
while :; do
    owned=$(KUBECONFIG=$WORK/admin kubectl get pdb -A --no-headers \
        -o custom-columns=OWNER:.metadata.annotations.ownedBy 2>/dev/null | grep -c EvictionAutoScaler || true)
    # An EAS is done once its first status is written.
    eas=$(KUBECONFIG=$WORK/admin kubectl get evictionautoscalers -A --no-headers \
        -o custom-columns=BASELINE:.status.minReplicas 2>/dev/null | grep -vc none || true)
    [[ $owned -ge $((deployments / 2)) && $eas -ge $deployments ]] && break
    (($(date +%s) - started < 3600)) || { echo "error: not done after 60 min ($owned PDBs, $eas EAS)" >&2; exit 1; }
    sleep 10
done
done_after=$(($(date +%s) - started))
sleep 5 # settle: the last Events and statuses
rss=$(awk '/VmRSS/ {print $2}' "/proc/$PRODUCT/status")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$PRODUCT/status")
cat <<EOF

memory ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores): $NODES nodes, $NAMESPACES namespaces, $deployments Deployments
(2 replicas each), $((deployments / 2)) user PDBs; the product (release, cluster-wide) created
$owned default PDBs and $eas EvictionAutoScalers (status written) in ${done_after}s${QPS:+ at $QPS writes/s}.
| product RSS when done | $((rss / 1024)) MiB |
| product peak RSS (VmHWM) | $((hwm / 1024)) MiB |
EOF

if [[ -n ${HEAPTRACK:-} ]]; then
    kill -INT "$PRODUCT"
    for _ in $(seq 100); do kill -0 "$PRODUCT" 2>/dev/null || break; sleep 0.2; done
    sleep 2
    heaptrack_print --print-peaks 1 --print-allocators 0 --print-temporary 0 --print-leaks 0 \
        --peak-limit 25 --sub-peak-limit 4 "$WORK"/heap.*
fi
