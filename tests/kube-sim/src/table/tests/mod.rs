use serde_json::{Value, json};

use super::{human_duration, render};

mod custom;

const NOW: &str = "2024-01-01T12:00:00Z";
/// Five minutes before NOW.
const CREATED: &str = "2024-01-01T11:55:00Z";

fn now() -> jiff::Timestamp {
    NOW.parse().unwrap_or_default()
}

fn meta(name: &str) -> Value {
    json!({"name": name, "namespace": "default", "uid": "u-1", "resourceVersion": "7",
        "creationTimestamp": CREATED})
}

/// Column names, with `*` marking priority-1 (wide) columns.
fn column_names(table: &Value) -> Vec<String> {
    table["columnDefinitions"]
        .as_array()
        .map(|columns| {
            columns
                .iter()
                .map(|c| {
                    let wide = if c["priority"] == 1 { "*" } else { "" };
                    format!("{}{wide}", c["name"].as_str().unwrap_or("?"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn cells(table: &Value) -> Vec<Value> {
    table["rows"].as_array().map(|rows| rows.iter().map(|r| r["cells"].clone()).collect()).unwrap_or_default()
}

/// (group, plural, objects, column names, cells per row)
type Case = (&'static str, &'static str, Vec<Value>, Vec<&'static str>, Vec<Value>);

#[test]
fn builtin_resources_columns_and_cells() {
    let ready_pod = json!({"metadata": meta("web-1"),
        "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "nginx"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.5", "containerStatuses": [
            {"name": "app", "ready": true, "restartCount": 0, "state": {"running": {}}}]}});
    let not_ready_pod = json!({"metadata": meta("web-2"),
        "spec": {"containers": [{"name": "app"}, {"name": "side"}],
            "readinessGates": [{"conditionType": "example.com/gate"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.6"}],
            "nominatedNodeName": "node-2",
            "conditions": [{"type": "example.com/gate", "status": "True"}],
            "containerStatuses": [
                {"name": "app", "ready": false, "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"finishedAt": "2024-01-01T11:59:00Z"}}},
                {"name": "side", "ready": true, "restartCount": 1, "state": {"running": {}}}]}});
    let crashing_pod = json!({"metadata": meta("web-3"),
        "spec": {"containers": [{"name": "app"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "app", "ready": false,
            "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
    let terminating_pod = json!({"metadata": {"name": "web-4", "creationTimestamp": CREATED,
            "deletionTimestamp": NOW},
        "spec": {"containers": [{"name": "app"}]}, "status": {"phase": "Running"}});
    let init_pod = json!({"metadata": meta("web-5"),
        "spec": {"initContainers": [{"name": "setup"}], "containers": [{"name": "app"}]},
        "status": {"phase": "Pending", "initContainerStatuses": [{"name": "setup",
            "restartCount": 0, "state": {"running": {}}}]}});
    let cordoned_node = json!({"metadata": {"name": "node-1", "creationTimestamp": "2023-12-30T12:00:00Z",
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "infra"}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                  {"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}],
            "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Debian", "kernelVersion": "6.1",
                "containerRuntimeVersion": "containerd://1.7"}}});
    let bare_node = json!({"metadata": {"name": "node-2"},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
    let deployment = json!({"metadata": meta("web"),
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "app", "image": "nginx:1"},
                                                 {"name": "log", "image": "busybox"}]}}},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});

    let cases: Vec<Case> = vec![
        (
            "",
            "pods",
            vec![ready_pod, not_ready_pod, crashing_pod, terminating_pod, init_pod],
            vec![
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP*",
                "Node*",
                "Nominated Node*",
                "Readiness Gates*",
            ],
            vec![
                json!(["web-1", "1/1", "Running", "0", "5m", "10.0.0.5", "node-1", "<none>", "<none>"]),
                json!([
                    "web-2",
                    "1/2",
                    "Running",
                    "3 (60s ago)",
                    "5m",
                    "10.0.0.6",
                    "<none>",
                    "node-2",
                    "1/1"
                ]),
                json!([
                    "web-3",
                    "0/1",
                    "CrashLoopBackOff",
                    "0",
                    "5m",
                    "<none>",
                    "<none>",
                    "<none>",
                    "<none>"
                ]),
                json!(["web-4", "0/1", "Terminating", "0", "5m", "<none>", "<none>", "<none>", "<none>"]),
                json!(["web-5", "0/1", "Init:0/1", "0", "5m", "<none>", "<none>", "<none>", "<none>"]),
            ],
        ),
        (
            "",
            "nodes",
            vec![cordoned_node, bare_node],
            vec![
                "Name",
                "Status",
                "Roles",
                "Age",
                "Version",
                "Internal-IP*",
                "External-IP*",
                "OS-Image*",
                "Kernel-Version*",
                "Container-Runtime*",
            ],
            vec![
                json!([
                    "node-1",
                    "Ready,SchedulingDisabled",
                    "control-plane,infra",
                    "2d",
                    "v1.33.0",
                    "172.18.0.2",
                    "<none>",
                    "Debian",
                    "6.1",
                    "containerd://1.7"
                ]),
                json!([
                    "node-2",
                    "NotReady",
                    "<none>",
                    "<unknown>",
                    "",
                    "<none>",
                    "<none>",
                    "<unknown>",
                    "<unknown>",
                    "<unknown>"
                ]),
            ],
        ),
        (
            "apps",
            "deployments",
            vec![deployment],
            vec!["Name", "Ready", "Up-to-date", "Available", "Age", "Containers*", "Images*", "Selector*"],
            vec![json!(["web", "2/3", 3, 2, "5m", "app,log", "nginx:1,busybox", "app=web"])],
        ),
        (
            "apps",
            "replicasets",
            vec![json!({"metadata": meta("web-abc"), "spec": {"replicas": 2,
             "selector": {"matchLabels": {"app": "web", "pod-template-hash": "abc"}},
             "template": {"spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
             "status": {"replicas": 2, "readyReplicas": 1}})],
            vec!["Name", "Desired", "Current", "Ready", "Age", "Containers*", "Images*", "Selector*"],
            vec![json!(["web-abc", 2, 2, 1, "5m", "app", "nginx", "app=web,pod-template-hash=abc"])],
        ),
        (
            "apps",
            "daemonsets",
            vec![json!({"metadata": meta("agent"), "spec": {
             "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["agent"]}]},
             "template": {"spec": {"nodeSelector": {"os": "linux"},
                 "containers": [{"name": "a", "image": "agent:1"}]}}},
             "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                 "updatedNumberScheduled": 3, "numberAvailable": 2}})],
            vec![
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Up-to-date",
                "Available",
                "Node Selector",
                "Age",
                "Containers*",
                "Images*",
                "Selector*",
            ],
            vec![json!(["agent", 3, 3, 2, 3, 2, "os=linux", "5m", "a", "agent:1", "app in (agent)"])],
        ),
        (
            "apps",
            "statefulsets",
            vec![json!({"metadata": meta("db"), "spec": {"replicas": 3,
             "template": {"spec": {"containers": [{"name": "pg", "image": "postgres"}]}}},
             "status": {"readyReplicas": 3}})],
            vec!["Name", "Ready", "Age", "Containers*", "Images*"],
            vec![json!(["db", "3/3", "5m", "pg", "postgres"])],
        ),
        (
            "policy",
            "poddisruptionbudgets",
            vec![
                json!({"metadata": meta("web-pdb"), "spec": {"minAvailable": 1}, "status": {"disruptionsAllowed": 1}}),
                json!({"metadata": meta("db-pdb"), "spec": {"maxUnavailable": "50%"}, "status": {}}),
            ],
            vec!["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"],
            vec![json!(["web-pdb", "1", "N/A", 1, "5m"]), json!(["db-pdb", "N/A", "50%", 0, "5m"])],
        ),
        (
            "",
            "namespaces",
            vec![json!({"metadata": meta("team-a"), "status": {"phase": "Active"}})],
            vec!["Name", "Status", "Age"],
            vec![json!(["team-a", "Active", "5m"])],
        ),
        (
            "",
            "events",
            vec![json!({"metadata": meta("web-1.17a"), "type": "Normal", "reason": "Evicted",
             "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{app}"},
             "source": {"component": "kubelet", "host": "node-1"}, "message": " evicted \n",
             "firstTimestamp": "2024-01-01T11:00:00Z", "lastTimestamp": "2024-01-01T11:58:00Z", "count": 4})],
            vec![
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject*",
                "Source*",
                "Message",
                "First Seen*",
                "Count*",
                "Name*",
            ],
            vec![json!([
                "2m",
                "Normal",
                "Evicted",
                "pod/web-1",
                "spec.containers{app}",
                "kubelet, node-1",
                "evicted",
                "60m",
                4,
                "web-1.17a"
            ])],
        ),
        (
            "coordination.k8s.io",
            "leases",
            vec![json!({"metadata": meta("leader"), "spec": {"holderIdentity": "pod-a"}})],
            vec!["Name", "Holder", "Age"],
            vec![json!(["leader", "pod-a", "5m"])],
        ),
        (
            "",
            "services",
            vec![
                json!({"metadata": meta("web"), "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10",
                 "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "protocol": "TCP"}], "selector": {"app": "web"}}}),
                json!({"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.11"],
                 "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}}),
            ],
            vec!["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector*"],
            vec![
                json!(["web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP,443/TCP", "5m", "app=web"]),
                json!(["lb", "LoadBalancer", "10.96.0.11", "<pending>", "80:30080/TCP", "5m", "<none>"]),
            ],
        ),
        (
            "",
            "configmaps",
            vec![json!({"metadata": meta("cfg"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}})],
            vec!["Name", "Data", "Age"],
            vec![json!(["cfg", 3, "5m"])],
        ),
        (
            "",
            "secrets",
            vec![
                json!({"metadata": meta("tls"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
            ],
            vec!["Name", "Type", "Data", "Age"],
            vec![json!(["tls", "kubernetes.io/tls", 2, "5m"])],
        ),
        (
            "autoscaling",
            "horizontalpodautoscalers",
            vec![json!({"metadata": meta("web"),
             "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]},
             "status": {"currentReplicas": 2, "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45}}}]}})],
            vec!["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"],
            vec![json!(["web", "Deployment/web", "cpu: 45%/80%", "<unset>", 5, 2, "5m"])],
        ),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            vec![json!({"metadata": meta("widgets.example.com")})],
            vec!["Name", "Created At"],
            vec![json!(["widgets.example.com", "2024-01-01T11:55:00Z"])],
        ),
        (
            "example.com",
            "gadgets",
            vec![json!({"metadata": meta("g1")})],
            vec!["Name", "Age"],
            vec![json!(["g1", "5m"])],
        ),
    ];
    for (group, plural, objects, want_columns, want_cells) in cases {
        let table = render(group, plural, None, json!({"resourceVersion": "9"}), &objects, "Metadata", now());
        assert_eq!(table["kind"], "Table", "{plural}");
        assert_eq!(table["apiVersion"], "meta.k8s.io/v1", "{plural}");
        assert_eq!(table["metadata"], json!({"resourceVersion": "9"}), "{plural}");
        assert_eq!(column_names(&table), want_columns, "{plural} columns");
        assert_eq!(cells(&table), want_cells, "{plural} cells");
    }
}

#[test]
fn name_column_has_name_format_and_age_is_string() {
    let table = render("", "pods", None, json!({}), &[], "Metadata", now());
    assert_eq!(table["columnDefinitions"][0]["format"], "name");
    assert_eq!(table["columnDefinitions"][0]["type"], "string");
    assert_eq!(table["columnDefinitions"][3]["type"], "string");
    assert_eq!(table["columnDefinitions"][4]["name"], "Age");
    assert_eq!(table["rows"], json!([]));
}

#[test]
fn finished_pods_carry_completed_condition() {
    let pod = json!({"metadata": meta("job-1"), "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Succeeded", "containerStatuses": [{"name": "c", "ready": false,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
    let table = render("", "pods", None, json!({}), &[pod], "None", now());
    assert_eq!(table["rows"][0]["cells"][2], "Completed");
    assert_eq!(table["rows"][0]["conditions"][0]["reason"], "Succeeded");
}

#[test]
fn include_object_modes() {
    let object =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cfg"), "data": {"a": "b"}});
    let objects = [object.clone()];
    let row =
        |mode: &str| render("", "configmaps", None, json!({}), &objects, mode, now())["rows"][0].clone();
    assert_eq!(row("None").get("object"), None);
    let partial =
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta("cfg")});
    assert_eq!(row("Metadata")["object"], partial);
    assert_eq!(row("")["object"], partial);
    assert_eq!(row("Object")["object"], object);
}

#[test]
fn human_duration_matches_kubectl() {
    let cases: &[(i64, &str)] = &[
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (185, "3m5s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 25 * 60, "3h25m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (50 * 3600, "2d2h"),
        (8 * 86400, "8d"),
        (729 * 86400, "729d"),
        (730 * 86400, "2y"),
        (800 * 86400, "2y70d"),
        (9 * 365 * 86400, "9y"),
    ];
    for (seconds, want) in cases {
        assert_eq!(human_duration(jiff::SignedDuration::from_secs(*seconds)), *want, "{seconds}s");
    }
}

#[test]
fn hpa_metric_kinds_and_service_accounts() {
    let hpa = json!({"metadata": meta("multi"),
        "spec": {"scaleTargetRef": {"kind": "StatefulSet", "name": "db"}, "minReplicas": 2, "maxReplicas": 9,
            "metrics": [
                {"type": "Resource", "resource": {"name": "memory",
                    "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"},
                    "target": {"type": "AverageValue", "averageValue": "10"}}},
                {"type": "External", "external": {"metric": {"name": "queue"},
                    "target": {"type": "Value", "value": "30"}}}]},
        "status": {"currentReplicas": 3, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "300Mi"}}}]}});
    let table = render("autoscaling", "horizontalpodautoscalers", None, json!({}), &[hpa], "None", now());
    assert_eq!(
        cells(&table),
        [json!([
            "multi",
            "StatefulSet/db",
            "memory: 300Mi/500Mi, <unknown>/10 + 1 more...",
            "2",
            9,
            3,
            "5m"
        ])]
    );
    assert_eq!(table["columnDefinitions"][4]["type"], "string");

    let sa = json!({"metadata": meta("default"), "secrets": [{"name": "tok"}]});
    let table = render("", "serviceaccounts", None, json!({}), &[sa], "None", now());
    assert_eq!(column_names(&table), ["Name", "Secrets", "Age"]);
    assert_eq!(cells(&table), [json!(["default", 1, "5m"])]);
}
