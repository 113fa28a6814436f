"""Reads every kind a running kube-sim holds with the official Kubernetes Python client:
list, read by name and one watch event each. The client's models reject a missing required
field (a Node's nodeInfo.bootID, say), so an object kube-sim fills less than a real cluster
fails here. Prints one line per kind; any exception ends the run with its traceback."""

import sys

from kubernetes import client, config, watch


def main() -> None:
    config.load_kube_config()
    core, apps = client.CoreV1Api(), client.AppsV1Api()
    policy, autoscaling = client.PolicyV1Api(), client.AutoscalingV2Api()
    coordination = client.CoordinationV1Api()
    kinds = [
        ("Node", core.list_node, lambda o: core.read_node(o.metadata.name)),
        ("Namespace", core.list_namespace, lambda o: core.read_namespace(o.metadata.name)),
        ("Pod", core.list_pod_for_all_namespaces, lambda o: core.read_namespaced_pod(o.metadata.name, o.metadata.namespace)),
        ("ServiceAccount", core.list_service_account_for_all_namespaces,
         lambda o: core.read_namespaced_service_account(o.metadata.name, o.metadata.namespace)),
        ("Event", core.list_event_for_all_namespaces, lambda o: core.read_namespaced_event(o.metadata.name, o.metadata.namespace)),
        ("ReplicaSet", apps.list_replica_set_for_all_namespaces,
         lambda o: apps.read_namespaced_replica_set(o.metadata.name, o.metadata.namespace)),
        ("Deployment", apps.list_deployment_for_all_namespaces,
         lambda o: apps.read_namespaced_deployment(o.metadata.name, o.metadata.namespace)),
        ("PodDisruptionBudget", policy.list_pod_disruption_budget_for_all_namespaces,
         lambda o: policy.read_namespaced_pod_disruption_budget(o.metadata.name, o.metadata.namespace)),
        ("HorizontalPodAutoscaler", autoscaling.list_horizontal_pod_autoscaler_for_all_namespaces,
         lambda o: autoscaling.read_namespaced_horizontal_pod_autoscaler(o.metadata.name, o.metadata.namespace)),
        ("Lease", coordination.list_lease_for_all_namespaces,
         lambda o: coordination.read_namespaced_lease(o.metadata.name, o.metadata.namespace)),
    ]
    for kind, list_all, read in kinds:
        items = list_all().items
        if not items:
            sys.exit(f"no {kind} to read")
        read(items[0])
        stream = watch.Watch().stream(list_all, timeout_seconds=5)
        event = next(stream)
        if event["object"].metadata.name is None:
            sys.exit(f"watch {kind}: an event without a name: {event}")
        print(f"ok {kind}: {len(items)} listed, read, watched", flush=True)


if __name__ == "__main__":
    main()
