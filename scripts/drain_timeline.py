#!/usr/bin/env python3
"""Where a blocked drain's time goes, from the real control plane's audit log.

Usage: scripts/drain_timeline.py AUDIT_LOG NAMESPACE
(the drain bench keeps the log with E2E_KEEP_DIRS=1; its path is printed as "control plane
files kept in DIR": DIR/audit.log).

For every Deployment in NAMESPACE whose pod's first eviction met a closed budget — refused
(429), or held by the webhook and let through on that first request — the time from the
drain's cordon (the last node PATCH by a person before the first eviction) to that eviction's
arrival, its refusal, and each step that lets it through: the product's surge (its first PATCH of the
Deployment; it may come before the refusal, on the cordon), the ReplicaSet scaled, the surge pod bound by the scheduler, marked Ready (its
status patched by kwok), the PDB's status showing a disruption allowed (the disruption
controller), the eviction that was finally let through, and the evicted pod deleted (kubectl
drain waits for that). Prints the median, 90th
percentile and maximum of each, in seconds.
"""
import collections
import datetime
import json
import sys


def at(event, stamp="requestReceivedTimestamp"):
    return datetime.datetime.fromisoformat(event[stamp].replace("Z", "+00:00"))


# A first eviction that took this long at the apiserver was held by the webhook.
HELD_AT_LEAST = datetime.timedelta(milliseconds=100)


def owner(pod, deployments):
    """The Deployment a pod belongs to, by name: <deployment>-<template hash>-<suffix>."""
    base = pod.rsplit("-", 2)[0]
    return base if base in deployments else None


def main(path, namespace):
    try:
        events = [json.loads(line) for line in open(path)]
    except (OSError, ValueError) as e:
        sys.exit(f"error: cannot read {path} as an audit log (JSON lines): {e}")
    events = [e for e in events if e.get("stage") == "ResponseComplete"]
    events.sort(key=at)
    deployments = {
        e["objectRef"]["name"]
        for e in events
        if e.get("objectRef", {}).get("resource") == "deployments"
        and e["objectRef"].get("namespace") == namespace
        and e["verb"] == "create"
        and e["objectRef"].get("name")
    }
    steps = collections.defaultdict(dict)  # deployment -> step -> first time
    first_pod = {}  # deployment -> the pod whose first eviction met a closed budget

    def first(deployment, step, when):
        steps[deployment].setdefault(step, when)

    for e in events:
        ref = e.get("objectRef", {})
        if ref.get("namespace") != namespace:
            continue
        name, resource, sub = ref.get("name", ""), ref.get("resource"), ref.get("subresource")
        code = e.get("responseStatus", {}).get("code")
        when = at(e)
        if resource == "pods" and sub == "eviction":
            d = owner(name, deployments)
            if d is None:
                continue
            done = at(e, "stageTimestamp")
            held = code == 201 and done - when >= HELD_AT_LEAST
            if d not in first_pod and (code == 429 or held):
                first_pod[d] = name
                first(d, "eviction arrives", when)
                if code == 429:
                    first(d, "refused", done)
            if code == 201 and first_pod.get(d) == name:
                first(d, "let through", done)
        elif resource == "pods" and e["verb"] == "delete" and sub is None and code == 200:
            d = owner(name, deployments)
            if d and first_pod.get(d) == name and "let through" in steps[d]:
                steps[d]["evicted pod gone"] = when  # the last delete: kwok's, grace 0
        elif resource == "deployments" and e["verb"] == "patch" and "eviction-autoscaler" in e["user"]["username"]:
            # The product's first PATCH of the Deployment (it writes only surges and reverts).
            first(name, "surge written", when)
        elif resource == "replicasets" and e["verb"] in ("update", "patch") and sub is None:
            d = name.rsplit("-", 1)[0]
            if "surge written" in steps.get(d, {}):
                first(d, "ReplicaSet scaled", when)
        elif resource == "pods" and sub == "binding":
            d = owner(name, deployments)
            if d and "surge written" in steps.get(d, {}) and name != first_pod.get(d):
                first(d, "surge pod bound", when)
        elif resource == "pods" and sub == "status" and e["verb"] == "patch":
            d = owner(name, deployments)
            if d and "surge pod bound" in steps.get(d, {}) and name != first_pod.get(d):
                first(d, "surge pod Ready", when)
        elif resource == "poddisruptionbudgets" and sub == "status" and code == 200:
            allowed = (e.get("requestObject") or {}).get("status", {}).get("disruptionsAllowed", 0)
            if allowed > 0 and "surge pod Ready" in steps.get(name, {}):
                first(name, "PDB allows", when)

    evictions = [at(e) for e in events if e.get("objectRef", {}).get("subresource") == "eviction"
                 and e["objectRef"].get("namespace") == namespace]
    if not evictions:
        sys.exit(f"error: {path} has no eviction in namespace {namespace} (not a drain's audit log?)")
    cordon = max(at(e) for e in events if e.get("objectRef", {}).get("resource") == "nodes"
                 and e["verb"] == "patch" and not e["user"]["username"].startswith("system:")
                 and at(e) < evictions[0])
    order = ["eviction arrives", "refused", "surge written", "ReplicaSet scaled", "surge pod bound", "surge pod Ready",
             "PDB allows", "let through", "evicted pod gone"]
    timed = [s for s in steps.values() if "eviction arrives" in s]
    refused = sum("refused" in s for s in timed)
    print(f"{len(timed)} Deployments whose first eviction met a closed budget (namespace {namespace}): "
          f"{refused} refused, {len(timed) - refused} held and let through on that request")
    print("| from the cordon to | n | median | p90 | max |\n|---|---|---|---|---|")
    for step in order:
        gaps = sorted((s[step] - cordon).total_seconds() for s in timed if step in s)
        if not gaps:
            print(f"| {step} | 0 | | | |")
            continue
        pick = lambda q: gaps[min(len(gaps) - 1, int(q * len(gaps)))]
        print(f"| {step} | {len(gaps)} | {pick(0.5):.2f} s | {pick(0.9):.2f} s | {gaps[-1]:.2f} s |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
