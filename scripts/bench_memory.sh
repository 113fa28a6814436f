#!/usr/bin/env bash
# Memory of one replica at cluster scale, for sizing the Deployment's requests/limits
# (deploy/base/deployment.yaml) — figures go to BENCHMARKS.md ("memory").
#
# The real control plane of tests/cluster/ (kwok nodes; `make cluster-build` first) with NODES
# nodes, seeded with NAMESPACES x PER_NS Deployments (REPLICAS each, half of them with a user
# PDB), whose pods the real controller-manager and scheduler make (their API rate:
# COMPONENT_QPS, 500 here); the product (release) as the shipped ServiceAccount with the
# cluster-wide settings (pdb.create, enabledByDefault): it caches every Deployment, PDB, node,
# namespace and HPA and creates a default PDB + EvictionAutoScaler for every Deployment
# without one. Reports the product's RSS once all of that is done and every pod is ready, and
# its peak (VmHWM); then waits STEADY (120) seconds and prints what the apiserver's audit log
# saw of the product, until done and in that steady window.
# Knobs: NODES (100), NAMESPACES (100), PER_NS (20), REPLICAS (2); QPS sets --kube-api-qps
# (burst 2x) for a quicker convergence than the default 50 writes/s; HEAPTRACK=1 runs the
# product under heaptrack and prints its allocations by call site: at its peak, and what is
# still live after the steady window; PRODUCT_BIN runs
# another build of the product (to compare side by side); the product runs with the image's
# GLIBC_TUNABLES unless that is set (empty: glibc's defaults).
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${NODES:-100}
NAMESPACES=${NAMESPACES:-100}
PER_NS=${PER_NS:-20}
REPLICAS=${REPLICAS:-2}
QPS=${QPS:-}
command -v python3 >/dev/null || { echo "error: python3 is needed (it writes the seed and reads the audit log)" >&2; exit 1; }

cargo build -q --release --bin eviction-autoscaler -p eviction-autoscaler
cargo build -q --example cluster
PRODUCT_BIN=${PRODUCT_BIN:-target/release/eviction-autoscaler}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    # The product itself too: under heaptrack, PIDS holds heaptrack's.
    for pid in "${PIDS[@]}" ${PRODUCT:-}; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
export HOME=$WORK/home KUBECACHEDIR=$WORK/home/cache

# The seed: namespaces (namespaces.yaml), Deployments, and a user PDB for every other
# Deployment (objects.yaml, and the same in 8 chunks for parallel creation).
python3 - "$WORK" "$NAMESPACES" "$PER_NS" "$REPLICAS" <<'EOF'
import sys
work, namespaces, per_ns, replicas = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
docs = []
open(f"{work}/namespaces.yaml", "w").write("---\n".join(
    f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: team-{n}}}\n" for n in range(namespaces)))
for n in range(namespaces):
    ns = f"team-{n}"
    for d in range(per_ns):
        app = f"app-{d}"
        docs.append(f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {app}, namespace: {ns}}}
spec:
  replicas: {replicas}
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
open(f"{work}/objects.yaml", "w").write("---\n".join(docs))
for i in range(8):
    open(f"{work}/chunk.{i}.yaml", "w").write("---\n".join(docs[i::8]))
EOF

INSTALL=(deploy/base/crd.yaml deploy/base/namespace.yaml deploy/base/serviceaccount.yaml deploy/base/rbac.yaml)
# Room for a surge of every pod, whatever the spread.
pods_per_node=$(((NAMESPACES * PER_NS * REPLICAS * 2 + NODES - 1) / NODES + 10))
NODES=$NODES PODS_PER_NODE=$pods_per_node COMPONENT_QPS=${COMPONENT_QPS:-500} \
    target/debug/examples/cluster >"$WORK/cluster.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 3000); do grep -q "export KUBECONFIG" "$WORK/cluster.out" && break; sleep 0.1; done
grep -q "export KUBECONFIG" "$WORK/cluster.out" || {
    cat "$WORK/cluster.out" >&2
    echo "error: the control plane did not start" >&2
    exit 1
}
cp "$(sed -n 's/^ *export KUBECONFIG=//p' "$WORK/cluster.out")" "$WORK/admin"
PATH=$(dirname "$(sed -n 's/^ *alias kubectl=//p' "$WORK/cluster.out")"):$PATH
seeding=$(date +%s)
for f in "${INSTALL[@]}" "$WORK/namespaces.yaml"; do KUBECONFIG=$WORK/admin kubectl create -f "$f" >/dev/null; done
# One kubectl creates one object at a time: eight of them at once.
CHUNKS=()
for i in $(seq 0 7); do
    KUBECONFIG=$WORK/admin kubectl create -f "$WORK/chunk.$i.yaml" >/dev/null &
    CHUNKS+=($!)
done
for pid in "${CHUNKS[@]}"; do wait "$pid"; done
echo "seeded in $(($(date +%s) - seeding))s" >&2
token=$(KUBECONFIG=$WORK/admin kubectl create token eviction-autoscaler -n eviction-autoscaler --duration=24h)
cp "$WORK/admin" "$WORK/product"
user=$(KUBECONFIG=$WORK/product kubectl config view -o jsonpath='{.users[0].name}')
KUBECONFIG=$WORK/product kubectl config set-credentials "$user" --token="$token" >/dev/null

target/release/eviction-autoscaler certs --out "$WORK/certs" --dns localhost --ip 127.0.0.1 >/dev/null
LIMITS=()
[[ -n $QPS ]] && LIMITS=(--kube-api-qps "$QPS" --kube-api-burst $((QPS * 2)))
WRAP=()
[[ -n ${HEAPTRACK:-} ]] && WRAP=(heaptrack -o "$WORK/heap")
# The allocator settings the image sets (deploy/Dockerfile); GLIBC_TUNABLES= (empty) runs with
# glibc's defaults instead.
TUNABLES=${GLIBC_TUNABLES-$(sed -n 's/^ENV GLIBC_TUNABLES=//p' deploy/Dockerfile)}
KUBECONFIG=$WORK/product POD_NAMESPACE=eviction-autoscaler GLIBC_TUNABLES=$TUNABLES \
    "${WRAP[@]}" "$PRODUCT_BIN" run "${LIMITS[@]}" \
    --webhook-addr 127.0.0.1:0 --health-addr 127.0.0.1:18481 \
    --tls-cert-file "$WORK/certs/tls.crt" --tls-key-file "$WORK/certs/tls.key" \
    --pdb-create=true --enabled-by-default=true 2>"$WORK/product.log" &
PIDS+=($!)
sleep 1
PRODUCT=$(pgrep -n -x eviction-autosc) # the product itself, also under heaptrack

deployments=$((NAMESPACES * PER_NS))
want_ready=$((deployments * REPLICAS))
started=$(date +%s)
while :; do
    owned=$(KUBECONFIG=$WORK/admin kubectl get pdb -A --no-headers \
        -o custom-columns=OWNER:.metadata.annotations.ownedBy 2>/dev/null | grep -c EvictionAutoScaler || true)
    # An EAS is done once its first status is written.
    eas=$(KUBECONFIG=$WORK/admin kubectl get evictionautoscalers -A --no-headers \
        -o custom-columns=BASELINE:.status.minReplicas 2>/dev/null | grep -vc none || true)
    ready=$(KUBECONFIG=$WORK/admin kubectl get deployments -A --no-headers \
        -o custom-columns=READY:.status.readyReplicas 2>/dev/null | awk '$1 != "<none>" {n += $1} END {print n + 0}')
    [[ $owned -ge $((deployments / 2)) && $eas -ge $deployments && $ready -ge $want_ready ]] && break
    (($(date +%s) - started < 3600)) || { echo "error: not done after 60 min ($owned PDBs, $eas EAS, $ready pods ready)" >&2; exit 1; }
    sleep 10
done
done_after=$(($(date +%s) - started))
sleep 5 # settle: the last Events and statuses
rss=$(awk '/VmRSS/ {print $2}' "/proc/$PRODUCT/status")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$PRODUCT/status")
cat <<EOF

memory ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores): $NODES nodes, $NAMESPACES namespaces, $deployments Deployments
($REPLICAS replicas each, $ready of $want_ready pods ready), $((deployments / 2)) user PDBs; the product (release, cluster-wide) created
$owned default PDBs and $eas EvictionAutoScalers (status written) in ${done_after}s${QPS:+ at $QPS writes/s};
GLIBC_TUNABLES=${TUNABLES:-"" (glibc defaults)}.
| product RSS when done | $((rss / 1024)) MiB |
| product peak RSS (VmHWM) | $((hwm / 1024)) MiB |
| of it file-backed (RssFile: the binary's pages) | $(awk '/RssFile/ {print int($2 / 1024)}' "/proc/$PRODUCT/status") MiB |
EOF

# What the apiserver saw of the product: the convergence, then STEADY seconds of steady state.
steady=${STEADY:-120}
steady_from=$(date -u +%Y-%m-%dT%H:%M:%S)
sleep "$steady"
rss=$(awk '/VmRSS/ {print $2}' "/proc/$PRODUCT/status")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$PRODUCT/status")
echo "| product RSS after ${steady}s more of steady state | $((rss / 1024)) MiB (peak $((hwm / 1024)) MiB) |"
python3 - "$(sed -n 's/^Audit log (JSON lines): //p' "$WORK/cluster.out")" "$steady_from" "$steady" <<'EOF'
import collections, json, sys
path, steady_from, steady = sys.argv[1], sys.argv[2], int(sys.argv[3])
user = "system:serviceaccount:eviction-autoscaler:eviction-autoscaler"
seen, start = {}, None
for line in open(path):
    e = json.loads(line)
    if e["user"]["username"] != user or e["auditID"] in seen:
        continue
    ref = e.get("objectRef", {})
    resource = ref.get("resource", e["requestURI"]) + ("/" + ref["subresource"] if ref.get("subresource") else "")
    at = e["requestReceivedTimestamp"][:19]
    start = start or at
    seen[e["auditID"]] = (at, e["verb"], resource)
def table(title, events, seconds):
    counts = collections.Counter((verb, resource) for _, verb, resource in events)
    print(f"\n{title}: {len(events)} requests" + (f", {len(events) / seconds:.1f}/s" if seconds else ""))
    print("| verb | resource | requests | per second |\n|---|---|---|---|")
    for (verb, resource), n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"| {verb} | {resource} | {n} | {n / seconds:.2f} |" if seconds else f"| {verb} | {resource} | {n} | |")
events = sorted(seen.values())
converging = [e for e in events if e[0] < steady_from]
table("the product's requests until done (audit log)", converging, None)
table(f"the product's requests in the {steady} s after", [e for e in events if e[0] >= steady_from], steady)
EOF

if [[ -n ${HEAPTRACK:-} ]]; then
    # Killed, not stopped: what it holds is then never freed, so heaptrack's "leaks" are what
    # was live at the end of the steady window (a clean exit would free it all).
    kill -KILL "$PRODUCT"
    for _ in $(seq 100); do kill -0 "$PRODUCT" 2>/dev/null || break; sleep 0.2; done
    sleep 2
    heaptrack_print --print-peaks 1 --print-allocators 0 --print-temporary 0 --print-leaks 1 \
        --peak-limit 25 --sub-peak-limit 4 "$WORK"/heap.*
fi
