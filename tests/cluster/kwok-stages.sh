#!/usr/bin/env bash
# Prints the kwok stages the fake kubelets follow, taken from kwok's own module
# (kustomize/stage/ under the directory given as $1), with the delays our tests want:
#   node-initialize, node-heartbeat-with-lease   as shipped
#   pod-ready     a pod on a kwok node turns Running and Ready 1 s after it is scheduled
#   pod-complete  as shipped (Jobs)
#   pod-delete    a deleted pod goes away 1 s after its deletion starts, whatever its
#                 terminationGracePeriodSeconds (as if every container stopped on SIGTERM at
#                 once), so a drain does not wait the default 30 s per pod
set -euo pipefail
stages="$1/kustomize/stage"
# Inserts a `delay:` block in front of the stage's `next:`.
with_delay() { # file delay-yaml-lines
  awk -v delay="$2" '/^  next:/ && !done { print delay; done = 1 } { print }' "$1"
}
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml pod/fast/pod-complete.yaml; do
  echo "---"; grep -v '^---$' "$stages/$f"
done
echo "---"
with_delay "$stages/pod/fast/pod-ready.yaml" "  delay:
    durationMilliseconds: 1000"
echo "---"
with_delay "$stages/pod/fast/pod-delete.yaml" "  delay:
    durationMilliseconds: 1000"
