#!/usr/bin/env bash
# Benchmark of POST /validate-eviction over TLS with keep-alive: the product's webhook against a
# floor (minimal axum + rustls server answering a constant allow without parsing) and against
# the practical limit of a production server (Debian's nginx answering the same constant allow
# with `return`, same certificate, as many workers as cores), side by side in one run, driven
# by external load generators:
#   * wrk -t1 -c16 (closed loop)          -> throughput, product / floor and product / nginx
#   * bench_client (webhook/examples/bench_client.rs) at a fixed 1,000 req/s to EACH server at
#     once, interleaved (10 threads, each with one connection per server, visiting them in turn;
#     open loop, coordinated-omission corrected, microsecond samples), so both meet the same
#     machine noise at the same moments
#                                         -> end-to-end p99 of both, and the product's own
#                                            handler p99 from its duration histogram (/metrics)
# Targets (issue 5): closed loop >= 0.9 x floor; handler p99 < 100 us; end-to-end p99 <= 1.1 x floor.
# Knobs: DURATION (wrk, default 8s), ROUNDS (default 5), RATE_SECONDS (open loop, default 10),
# OPEN_ROUNDS (default 5),
# PORT_BASE (default 18440). Results go to stdout; record them in BENCHMARKS.md ("webhook").
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-8s}
RATE_SECONDS=${RATE_SECONDS:-10}
OPEN_ROUNDS=${OPEN_ROUNDS:-5}
ROUNDS=${ROUNDS:-5}
PORT_BASE=${PORT_BASE:-18440}
PRODUCT_ADDR=127.0.0.1:$((PORT_BASE + 3))
FLOOR_ADDR=127.0.0.1:$((PORT_BASE + 4))
HEALTH_ADDR=127.0.0.1:$((PORT_BASE + 5))
NGINX_ADDR=127.0.0.1:$((PORT_BASE + 6))

missing=()
for tool in wrk curl awk nginx; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "installing ${missing[*]} (Debian packages)" >&2
        apt-get update -qq >/dev/null && apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "error: missing ${missing[*]}; install them (Debian: apt-get install -y wrk curl gawk nginx)" >&2
        exit 1
    fi
fi

cargo build -q --release -p eviction-autoscaler-webhook --examples
BIN=target/release/examples/bench_server
CLIENT=target/release/examples/bench_client
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

"$BIN" certs "$WORK"
"$BIN" product "$PRODUCT_ADDR" "$HEALTH_ADDR" "$WORK/tls.crt" "$WORK/tls.key" &
PRODUCT_PID=$!
PIDS+=($!)
"$BIN" floor "$FLOOR_ADDR" "$WORK/tls.crt" "$WORK/tls.key" &
FLOOR_PID=$!
PIDS+=($!)
# nginx: the floor's constant answer from a `return`, which never reads the request (nginx
# discards the body); TLS 1.2/1.3 with the same certificate; no log on the request path.
mkdir -p "$WORK/nginx"
cat >"$WORK/nginx/nginx.conf" <<NGINX
worker_processes $(nproc);
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $WORK/nginx/body;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    server {
        listen $NGINX_ADDR ssl;
        ssl_certificate $WORK/tls.crt;
        ssl_certificate_key $WORK/tls.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        location = /validate-eviction {
            default_type application/json;
            return 200 '$("$BIN" constant-allow)';
        }
    }
}
NGINX
nginx -p "$WORK/nginx" -e "$WORK/nginx/error.log" -c "$WORK/nginx/nginx.conf" &
NGINX_PID=$!
PIDS+=($!)

BODY=webhook/tests/data/eviction-v1.json
post() { curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/ca.crt" -H 'Content-Type: application/json' \
    --data-binary "@$BODY" "https://localhost:${1##*:}/validate-eviction" || true; }
for _ in $(seq 100); do
    [[ $(post "$PRODUCT_ADDR") == 200 && $(post "$FLOOR_ADDR") == 200 && $(post "$NGINX_ADDR") == 200 ]] && break
    sleep 0.1
done
[[ $(post "$PRODUCT_ADDR") == 200 ]] || { echo "error: product server did not come up" >&2; exit 1; }
[[ $(post "$FLOOR_ADDR") == 200 ]] || { echo "error: floor server did not come up" >&2; exit 1; }
[[ $(post "$NGINX_ADDR") == 200 ]] || { echo "error: nginx did not come up: $(cat "$WORK/nginx/error.log")" >&2; exit 1; }
# nginx's CPU is its workers'.
NGINX_WORKERS=$(pgrep -P "$NGINX_PID" | tr '\n' ' ')

cat >"$WORK/post.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [==[$(cat "$BODY")]==]
EOF

cpu_ticks() { for pid in "$@"; do cat "/proc/$pid/stat"; done | awk '{t += $14 + $15} END {print t}'; }
TICK=$(getconf CLK_TCK)
closed_loop() { # addr "pid..." -> "requests/s server-CPU-microseconds-per-request"
    local before after
    # shellcheck disable=SC2086 # a list of pids
    before=$(cpu_ticks $2)
    wrk -t1 -c16 -d"$DURATION" -s "$WORK/post.lua" "https://${1}/validate-eviction" >"$WORK/wrk.txt"
    # shellcheck disable=SC2086
    after=$(cpu_ticks $2)
    awk -v ticks=$((after - before)) -v tick="$TICK" '
        / requests in / {n = $1} /^Requests\/sec:/ {rps = $2}
        END {printf "%s %.1f\n", rps, (n > 0 ? ticks / tick * 1e6 / n : 0)}' "$WORK/wrk.txt"
}
open_loop() { # addr... -> the p99 of each, in that order, in us
    local urls=()
    for addr in "$@"; do urls+=(--url "https://${addr}/validate-eviction"); done
    "$CLIENT" "${urls[@]}" \
        --ca "$WORK/ca.crt" --body "$BODY" --rate 1000 --connections 10 --duration "${RATE_SECONDS}s" \
        --warmup 1s --server-name localhost >"$WORK/client.txt" ||
        { echo "error: bench_client failed (see above)" >&2; exit 1; }
    awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^p99_us=/) printf "%s ", substr($i, 8) } END { print "" }' \
        "$WORK/client.txt"
}
buckets() { # the eviction duration histogram buckets: "le count" lines
    curl -s "http://${HEALTH_ADDR}/metrics" |
        awk -F'[{}]' '/^eviction_autoscaler_webhook_request_duration_seconds_bucket/ && /path="\/validate-eviction"/ {
            match($2, /le="[^"]+"/); le = substr($2, RSTART + 4, RLENGTH - 5); split($3, v, " "); print le, v[1] }'
}
p99_us() { # before-file after-file -> p99 of the difference, in microseconds (linear within a bucket)
    awk 'NR == FNR { before[$1] = $2; next }
         { le[++n] = $1; cum[n] = $2 - before[$1] }
         END {
             total = cum[n]; if (total <= 0) { print "n/a"; exit }
             target = 0.99 * total; lower = 0; prev = 0
             for (i = 1; i <= n; i++) {
                 if (cum[i] >= target) {
                     if (le[i] == "+Inf") { printf ">%.0f", lower * 1e6; exit }
                     frac = (target - prev) / (cum[i] - prev)
                     printf "%.1f", (lower + (le[i] - lower) * frac) * 1e6; exit
                 }
                 prev = cum[i]; lower = le[i]
             }
         }' "$1" "$2"
}

echo "warming up" >&2
DURATION=2s closed_loop "$FLOOR_ADDR" "$FLOOR_PID" >/dev/null
DURATION=2s closed_loop "$PRODUCT_ADDR" "$PRODUCT_PID" >/dev/null
DURATION=2s closed_loop "$NGINX_ADDR" "$NGINX_WORKERS" >/dev/null

declare -a floor_rps product_rps nginx_rps
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
declare -a pair_ratios nginx_ratios floor_cpu product_cpu nginx_cpu
# Rotate which server goes first, so drift in background load does not favour one of them.
for round in $(seq "$ROUNDS"); do
    case $((round % 3)) in
    1) order=(floor product nginx) ;;
    2) order=(product nginx floor) ;;
    0) order=(nginx floor product) ;;
    esac
    for server in "${order[@]}"; do
        case $server in
        floor) read -r f fc < <(closed_loop "$FLOOR_ADDR" "$FLOOR_PID") ;;
        product) read -r p pc < <(closed_loop "$PRODUCT_ADDR" "$PRODUCT_PID") ;;
        nginx) read -r n nc < <(closed_loop "$NGINX_ADDR" "$NGINX_WORKERS") ;;
        esac
    done
    floor_rps+=("$f"); product_rps+=("$p"); nginx_rps+=("$n")
    pair_ratios+=("$(ratio "$p" "$f")"); nginx_ratios+=("$(ratio "$p" "$n")")
    floor_cpu+=("$fc"); product_cpu+=("$pc"); nginx_cpu+=("$nc")
    echo "closed loop round $round: floor $f req/s ($fc us CPU/req), product $p req/s ($pc us CPU/req), nginx $n req/s ($nc us CPU/req), product/floor ${pair_ratios[-1]}, product/nginx ${nginx_ratios[-1]}" >&2
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
floor_med=$(median "${floor_rps[@]}")
product_med=$(median "${product_rps[@]}")
nginx_med=$(median "${nginx_rps[@]}")
floor_cpu_med=$(median "${floor_cpu[@]}")
product_cpu_med=$(median "${product_cpu[@]}")
nginx_cpu_med=$(median "${nginx_cpu[@]}")
ratio_med=$(median "${pair_ratios[@]}")
nginx_ratio_med=$(median "${nginx_ratios[@]}")

# Open loop: both servers at once, interleaved; which one a thread visits first alternates
# between rounds. The product's histogram only moves for its own requests, so one snapshot
# before the first round and one after the last give the handler p99 over all of them.
declare -a floor_e2e product_e2e nginx_e2e e2e_ratios nginx_e2e_ratios
buckets >"$WORK/before"
for round in $(seq "$OPEN_ROUNDS"); do
    case $((round % 3)) in
    1) read -r f p n < <(open_loop "$FLOOR_ADDR" "$PRODUCT_ADDR" "$NGINX_ADDR") ;;
    2) read -r p n f < <(open_loop "$PRODUCT_ADDR" "$NGINX_ADDR" "$FLOOR_ADDR") ;;
    0) read -r n f p < <(open_loop "$NGINX_ADDR" "$FLOOR_ADDR" "$PRODUCT_ADDR") ;;
    esac
    floor_e2e+=("$f"); product_e2e+=("$p"); nginx_e2e+=("$n")
    e2e_ratios+=("$(ratio "$p" "$f")"); nginx_e2e_ratios+=("$(ratio "$p" "$n")")
    echo "open loop round $round: end-to-end p99 floor $f us, product $p us, nginx $n us, product/floor ${e2e_ratios[-1]}, product/nginx ${nginx_e2e_ratios[-1]}" >&2
done
buckets >"$WORK/after"
floor_p99=$(median "${floor_e2e[@]}")
product_p99=$(median "${product_e2e[@]}")
nginx_p99=$(median "${nginx_e2e[@]}")
e2e_ratio_med=$(median "${e2e_ratios[@]}")
nginx_e2e_ratio_med=$(median "${nginx_e2e_ratios[@]}")
handler_p99=$(p99_us "$WORK/before" "$WORK/after")

cores=$(nproc)
cat <<EOF

webhook benchmark ($(date -u +%Y-%m-%dT%H:%MZ), $cores cores, $ROUNDS closed-loop rounds of $DURATION, $OPEN_ROUNDS open-loop rounds of ${RATE_SECONDS}s; medians)
| measure                                                     | floor        | nginx        | product      | product/floor | product/nginx | target (floor) |
|-------------------------------------------------------------|--------------|--------------|--------------|---------------|---------------|----------------|
| closed loop, wrk -t1 -c16 (median req/s)                    | $(printf '%-12s' "$floor_med") | $(printf '%-12s' "$nginx_med") | $(printf '%-12s' "$product_med") | $(printf '%-13s' "$ratio_med") | $(printf '%-13s' "$nginx_ratio_med") | >= 0.90        |
| server CPU per request, closed loop (us)                    | $(printf '%-12s' "$floor_cpu_med") | $(printf '%-12s' "$nginx_cpu_med") | $(printf '%-12s' "$product_cpu_med") | $(printf '%-13s' "$(ratio "$floor_cpu_med" "$product_cpu_med")") | $(printf '%-13s' "$(ratio "$nginx_cpu_med" "$product_cpu_med")") | (other/product) |
| end-to-end p99 at 1,000 req/s (µs, open loop, CO-corrected) | $(printf '%-12s' "$floor_p99") | $(printf '%-12s' "$nginx_p99") | $(printf '%-12s' "$product_p99") | $(printf '%-13s' "$e2e_ratio_med") | $(printf '%-13s' "$nginx_e2e_ratio_med") | <= 1.10        |
| handler p99 at 1,000 req/s (us, /metrics)                   | -            | -            | $(printf '%-12s' "$handler_p99") | -             | -             | < 100          |
closed-loop rounds: floor ${floor_rps[*]}; nginx ${nginx_rps[*]}; product ${product_rps[*]}; per-round product/floor ${pair_ratios[*]}; product/nginx ${nginx_ratios[*]}
open-loop p99 rounds (us): floor ${floor_e2e[*]}; nginx ${nginx_e2e[*]}; product ${product_e2e[*]}; per-round product/floor ${e2e_ratios[*]}; product/nginx ${nginx_e2e_ratios[*]}
(the product/floor and product/nginx ratios are medians of the per-round ratios)
load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)
EOF
