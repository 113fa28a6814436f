//! The empty object of each built-in kind, as upstream's field manager compares a created
//! object against it (`scope.Creater.New(kind)`: a zero Go struct, whose non-pointer struct
//! fields are present as `{}` and other non-omitempty fields as zero values).
//!
//! What a creation adds to this object is what the creator owns; containers present here (say a
//! Deployment's `spec.template.spec`) are not new, so the creator's set has no `.` for them.
//! Printed by `runtime.DefaultUnstructuredConverter.ToUnstructured` on the zero values of the
//! k8s.io/api v0.35.4 types; custom resources start from nothing.

use serde_json::{Value, json};

/// The zero object of `kind` (`{}` for kinds without a non-empty zero value).
pub(crate) fn empty_object(kind: &str) -> Value {
    match kind {
        "Pod" => json!({"metadata": {}, "spec": {"containers": null}, "status": {}}),
        "Node" => json!({"metadata": {}, "spec": {}, "status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {"architecture": "", "bootID": "", "containerRuntimeVersion": "", "kernelVersion": "",
                "kubeProxyVersion": "", "kubeletVersion": "", "machineID": "", "operatingSystem": "", "osImage": "",
                "systemUUID": ""}}}),
        "Namespace" => json!({"metadata": {}, "spec": {}, "status": {}}),
        "Event" => {
            json!({"eventTime": null, "firstTimestamp": null, "involvedObject": {}, "lastTimestamp": null,
            "metadata": {}, "reportingComponent": "", "reportingInstance": "", "source": {}})
        }
        "Service" => json!({"metadata": {}, "spec": {}, "status": {"loadBalancer": {}}}),
        "Deployment" => json!({"metadata": {}, "spec": {"selector": null, "strategy": {},
            "template": {"metadata": {}, "spec": {"containers": null}}}, "status": {}}),
        "ReplicaSet" => json!({"metadata": {}, "spec": {"selector": null,
            "template": {"metadata": {}, "spec": {"containers": null}}}, "status": {"replicas": 0}}),
        "DaemonSet" => json!({"metadata": {}, "spec": {"selector": null,
            "template": {"metadata": {}, "spec": {"containers": null}}, "updateStrategy": {}},
            "status": {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}}),
        "StatefulSet" => json!({"metadata": {}, "spec": {"selector": null, "serviceName": "",
            "template": {"metadata": {}, "spec": {"containers": null}}, "updateStrategy": {}},
            "status": {"availableReplicas": 0, "replicas": 0}}),
        "PodDisruptionBudget" => json!({"metadata": {}, "spec": {},
            "status": {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}}),
        "HorizontalPodAutoscaler" => {
            json!({"metadata": {}, "spec": {"maxReplicas": 0, "scaleTargetRef": {"kind": "", "name": ""}},
            "status": {"currentMetrics": null, "desiredReplicas": 0}})
        }
        "Lease" => json!({"metadata": {}, "spec": {}}),
        "Role" | "ClusterRole" => json!({"metadata": {}, "rules": null}),
        "RoleBinding" | "ClusterRoleBinding" => {
            json!({"metadata": {}, "roleRef": {"apiGroup": "", "kind": "", "name": ""}})
        }
        "CustomResourceDefinition" => {
            json!({"metadata": {}, "spec": {"group": "", "names": {"kind": "", "plural": ""},
            "scope": "", "versions": null}, "status": {"acceptedNames": {"kind": "", "plural": ""}, "conditions": null,
            "storedVersions": null}})
        }
        "Scale" => json!({"metadata": {}, "spec": {}, "status": {"replicas": 0}}),
        "ConfigMap"
        | "Secret"
        | "ServiceAccount"
        | "Endpoints"
        | "ValidatingWebhookConfiguration"
        | "MutatingWebhookConfiguration" => json!({"metadata": {}}),
        _ => json!({}),
    }
}
