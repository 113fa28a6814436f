"""Reads every kind a running kube-sim holds with the official Kubernetes Python client:
list, read by name and one watch event each. The client's models reject a missing required
field (a Node's nodeInfo.bootID, say), so an object kube-sim fills less than a real cluster
fails here. Prints one line per kind; any exception ends the run with its traceback."""

import functools
import sys

from kubernetes import client, config, watch


def main() -> None:
    config.load_kube_config()
    core, apps = client.CoreV1Api(), client.AppsV1Api()
    policy, autoscaling = client.PolicyV1Api(), client.AutoscalingV2Api()
    coordination, events = client.CoordinationV1Api(), client.EventsV1Api()
    admission, rbac = client.AdmissionregistrationV1Api(), client.RbacAuthorizationV1Api()
    extensions = client.ApiextensionsV1Api()

    def namespaced(read):
        return lambda o: read(o.metadata.name, o.metadata.namespace)

    def cluster_scoped(read):
        return lambda o: read(o.metadata.name)

    # (group/Kind as clients.rs names it, list in all namespaces, read one)
    kinds = [
        ("/Node", core.list_node, cluster_scoped(core.read_node)),
        ("/Namespace", core.list_namespace, cluster_scoped(core.read_namespace)),
        ("/Pod", core.list_pod_for_all_namespaces, namespaced(core.read_namespaced_pod)),
        ("/Event", core.list_event_for_all_namespaces, namespaced(core.read_namespaced_event)),
        ("/Service", core.list_service_for_all_namespaces, namespaced(core.read_namespaced_service)),
        ("/Endpoints", core.list_endpoints_for_all_namespaces, namespaced(core.read_namespaced_endpoints)),
        ("/ConfigMap", core.list_config_map_for_all_namespaces, namespaced(core.read_namespaced_config_map)),
        ("/Secret", core.list_secret_for_all_namespaces, namespaced(core.read_namespaced_secret)),
        ("/ServiceAccount", core.list_service_account_for_all_namespaces,
         namespaced(core.read_namespaced_service_account)),
        ("apps/Deployment", apps.list_deployment_for_all_namespaces, namespaced(apps.read_namespaced_deployment)),
        ("apps/ReplicaSet", apps.list_replica_set_for_all_namespaces, namespaced(apps.read_namespaced_replica_set)),
        ("apps/DaemonSet", apps.list_daemon_set_for_all_namespaces, namespaced(apps.read_namespaced_daemon_set)),
        ("apps/StatefulSet", apps.list_stateful_set_for_all_namespaces,
         namespaced(apps.read_namespaced_stateful_set)),
        ("apps/ControllerRevision", apps.list_controller_revision_for_all_namespaces,
         namespaced(apps.read_namespaced_controller_revision)),
        ("policy/PodDisruptionBudget", policy.list_pod_disruption_budget_for_all_namespaces,
         namespaced(policy.read_namespaced_pod_disruption_budget)),
        ("autoscaling/HorizontalPodAutoscaler", autoscaling.list_horizontal_pod_autoscaler_for_all_namespaces,
         namespaced(autoscaling.read_namespaced_horizontal_pod_autoscaler)),
        ("coordination.k8s.io/Lease", coordination.list_lease_for_all_namespaces,
         namespaced(coordination.read_namespaced_lease)),
        # Only the Event written through events.k8s.io: the client's model requires `eventTime`,
        # which core Events lack there on a real cluster too (its known bug).
        ("events.k8s.io/Event", functools.partial(events.list_event_for_all_namespaces,
                                                  field_selector="metadata.name=web.2"),
         namespaced(events.read_namespaced_event)),
        ("admissionregistration.k8s.io/ValidatingWebhookConfiguration",
         admission.list_validating_webhook_configuration,
         cluster_scoped(admission.read_validating_webhook_configuration)),
        ("admissionregistration.k8s.io/MutatingWebhookConfiguration",
         admission.list_mutating_webhook_configuration,
         cluster_scoped(admission.read_mutating_webhook_configuration)),
        ("rbac.authorization.k8s.io/Role", rbac.list_role_for_all_namespaces, namespaced(rbac.read_namespaced_role)),
        ("rbac.authorization.k8s.io/RoleBinding", rbac.list_role_binding_for_all_namespaces,
         namespaced(rbac.read_namespaced_role_binding)),
        ("rbac.authorization.k8s.io/ClusterRole", rbac.list_cluster_role, cluster_scoped(rbac.read_cluster_role)),
        ("rbac.authorization.k8s.io/ClusterRoleBinding", rbac.list_cluster_role_binding,
         cluster_scoped(rbac.read_cluster_role_binding)),
        ("apiextensions.k8s.io/CustomResourceDefinition", extensions.list_custom_resource_definition,
         cluster_scoped(extensions.read_custom_resource_definition)),
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
