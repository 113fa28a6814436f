//! `eviction-autoscaler audit` end to end: the real binary (and as a kubectl plugin), the real
//! control plane, real kubectl. A cluster holding a PDB of each kind a drain meets: the audit
//! names each one's class and whether our surge opens it, prints JSON in the shape of its
//! committed schema, exits 1, writes nothing, and says which permission it lacks; the running
//! product's metrics count the same classes and reasons; once the causes it named are fixed it
//! exits 0 and a real `kubectl drain` of every node completes.

use e2e_support as support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::metrics::metric_sum;
use support::{ClusterShape, Env, deployment, namespace, pdb, wait_for};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const SCHEMA: &str = include_str!("../controller/src/audit/audit-report.schema.json");
/// The audit's User-Agent: `eviction-autoscaler-audit/<version>`, not the product's.
const AUDIT_AGENT: &str = "eviction-autoscaler-audit/";

/// Runs `eviction-autoscaler audit <args>` with `kubeconfig`: (exit code, stdout, stderr).
async fn audit(env: &Env, kubeconfig: &Path, args: &[&str]) -> (i32, String, String) {
    let mut command = std::process::Command::new(BIN);
    command.arg("audit").args(args).env("KUBECONFIG", kubeconfig).env("HOME", env.dir.path());
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("the audit task finishes")
        .expect("run eviction-autoscaler audit");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code().expect("an exit code"), text(&output.stdout), text(&output.stderr))
}

/// `-o json`, checked against the committed schema.
async fn audit_json(env: &Env) -> (i32, Value) {
    let (code, out, err) = audit(env, &env.kubeconfig(), &["-A", "-o", "json"]).await;
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("JSON ({e}):\n{out}\n{err}"));
    let schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let problems: Vec<String> =
        validator.iter_errors(&doc).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(problems.is_empty(), "the output matches the schema: {problems:#?}\n{out}");
    (code, doc)
}

/// `namespace/name` → (class, surge reason or `opens`/`-`).
fn verdicts(doc: &Value) -> Vec<(String, String, String)> {
    doc["pdbs"]
        .as_array()
        .expect("pdbs")
        .iter()
        .map(|p| {
            let surge = match (p["surgeOpens"].as_bool(), p["whyNot"]["reason"].as_str()) {
                (Some(true), _) => "opens".to_owned(),
                (_, Some(reason)) => reason.to_owned(),
                _ => "-".to_owned(),
            };
            (
                format!("{}/{}", p["namespace"].as_str().unwrap(), p["name"].as_str().unwrap()),
                p["class"].as_str().unwrap().to_owned(),
                surge,
            )
        })
        .collect()
}

/// The product's `pdbs{class}` and `drain_blockers{reason}` gauges count what the audit's `doc`
/// says. It watches no pods, so pods without a controller count as `not_a_deployment`, the
/// audit's `no_owner`; the Lease holder recomputes them every 30 s.
async fn census_agrees_with(env: &Env, doc: &Value) {
    let mut classes: BTreeMap<String, f64> = BTreeMap::new();
    let mut reasons: BTreeMap<String, f64> = BTreeMap::new();
    for (_, class, surge) in verdicts(doc) {
        *classes.entry(class).or_default() += 1.0;
        if !matches!(surge.as_str(), "opens" | "-") {
            let reason = if surge == "no_owner" { "not_a_deployment".to_owned() } else { surge };
            *reasons.entry(reason).or_default() += 1.0;
        }
    }
    assert!(reasons.contains_key("not_a_deployment") && reasons.len() >= 8, "{reasons:?}");
    let counted = |text: &str, metric: &str, label: &str, of: &BTreeMap<String, f64>| {
        of.iter().all(|(value, count)| metric_sum(text, metric, &[&format!("{label}=\"{value}\"")]) == *count)
            && metric_sum(text, metric, &[]) == of.values().sum::<f64>()
    };
    let text =
        wait_for("the census gauges to count what the audit found", Duration::from_secs(45), || async {
            let text = env.metrics().await;
            (counted(&text, "eviction_autoscaler_pdbs", "class", &classes)
                && counted(&text, "eviction_autoscaler_drain_blockers", "reason", &reasons))
            .then_some(text)
        })
        .await;
    assert_eq!(metric_sum(&text, "eviction_autoscaler_leader", &[]), 1.0, "the Lease holder reports them");
}

/// StatefulSet `name` with one replica. The harness runs no StatefulSet controller, so its pod
/// is created here as that controller makes it: `<name>-0`, controlled by the StatefulSet.
async fn stateful_set(env: &Env, namespace: &str, name: &str) {
    let labels = json!({"app": name});
    let set = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1, "serviceName": name, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels},
                         "spec": {"containers": [{"name": "app", "image": "registry.example/db:1"}]}}
        }
    });
    env.apply(&set.to_string()).await;
    let uid =
        env.get(&["statefulset", "-n", namespace, name]).await.expect("the StatefulSet")["metadata"]["uid"]
            .clone();
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{name}-0"), "namespace": namespace, "labels": labels,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name,
                                          "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "app", "image": "registry.example/db:1"}]}
    });
    env.apply(&pod.to_string()).await;
    wait_for("the StatefulSet's pod Ready", Duration::from_secs(60), || async {
        let pod = env.get(&["pod", "-n", namespace, &format!("{name}-0")]).await?;
        let ready = pod["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        ready.then_some(())
    })
    .await;
}

/// Patches Deployment `namespace/name` with `patch` (its strategy).
async fn set_strategy(env: &Env, namespace: &str, name: &str, patch: &str) {
    env.kubectl_ok(&["patch", "deployment", "-n", namespace, name, "-p", patch]).await;
}

/// A ServiceAccount `auditor` allowed get and list on `resources` (`(group, resource)`).
async fn auditor(env: &Env, resources: &[(&str, &str)]) -> std::path::PathBuf {
    let rules: Vec<Value> = resources
        .iter()
        .map(|(g, r)| json!({"apiGroups": [g], "resources": [r], "verbs": ["get", "list"]}))
        .collect();
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "auditor", "namespace": "default"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "auditor"}, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "auditor"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "auditor"},
         "subjects": [{"kind": "ServiceAccount", "name": "auditor", "namespace": "default"}]}
    ]});
    env.apply(&objects.to_string()).await;
    let path = env.dir.path().join("auditor-kubeconfig");
    env.cluster.write_service_account_kubeconfig("default", "auditor", &path);
    path
}

/// Every kind the audit reads, as (API group, resource).
const READS: [(&str, &str); 9] = [
    ("", "configmaps"),
    ("", "namespaces"),
    ("", "nodes"),
    ("", "pods"),
    ("", "events"),
    ("policy", "poddisruptionbudgets"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("autoscaling", "horizontalpodautoscalers"),
];

/// The Deployments, each named for its case: `(namespace, name, replicas)`.
const DEPLOYMENTS: [(&str, &str, i32); 11] = [
    ("apps", "single", 1),
    ("apps", "recreate", 1),
    ("apps", "twin", 2),
    ("apps", "wide", 2),
    ("apps", "pair", 2),
    ("apps", "optout", 1),
    ("apps", "scales", 2),
    ("apps", "capped", 1),
    ("apps", "left", 1),
    ("apps", "right", 1),
    ("legacy", "quiet", 1),
];

/// The cases beyond one Deployment, one PDB: a bare pod under a PDB, a PDB over two
/// Deployments, an HPA at its maximum, a Deployment opted out of surges.
async fn odd_cases(env: &Env) {
    let lonely = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "lonely", "namespace": "apps", "labels": {"app": "lonely"}},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}
    });
    env.apply(&lonely.to_string()).await;
    env.apply(&pdb("apps", "lonely", "lonely", json!({"maxUnavailable": 1}))).await;
    let both = json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "both", "namespace": "apps"},
        "spec": {"minAvailable": 2, "selector": {"matchExpressions": [
            {"key": "app", "operator": "In", "values": ["left", "right"]}]}}
    });
    env.apply(&both.to_string()).await;
    let hpa = json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "capped", "namespace": "apps"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "capped"},
                 "minReplicas": 1, "maxReplicas": 1}
    });
    env.apply(&hpa.to_string()).await;
    annotate_optout(env, "eviction-autoscaler.azure.com/surge=false").await;
    wait_for("the bare pod Ready", Duration::from_secs(60), || async {
        let pod = env.get(&["pod", "-n", "apps", "lonely"]).await?;
        let conditions = pod["status"]["conditions"].as_array()?.clone();
        conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == "True").then_some(())
    })
    .await;
}

/// Sets (`key=value`) or removes (`key-`) an annotation of Deployment `apps/optout`.
async fn annotate_optout(env: &Env, change: &str) {
    env.kubectl_ok(&["annotate", "deployment", "-n", "apps", "optout", change]).await;
}

/// What the audit told the operator to change for [`odd_cases`], one change each.
async fn fix_odd_cases(env: &Env) {
    env.kubectl_ok(&["delete", "pdb", "-n", "apps", "lonely", "both"]).await;
    env.kubectl_ok(&["delete", "pod", "-n", "apps", "lonely"]).await;
    env.kubectl_ok(&["patch", "hpa", "-n", "apps", "capped", "-p", r#"{"spec":{"maxReplicas":3}}"#]).await;
    annotate_optout(env, "eviction-autoscaler.azure.com/surge-").await;
    env.kubectl_ok(&["patch", "pdb", "-n", "apps", "scales", "-p", r#"{"spec":{"maxUnavailable":1}}"#]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_names_each_blocker_and_its_fix_and_passes_once_they_are_fixed() {
    let mut env = Env::start(BIN, ClusterShape { nodes: 2, pods_per_node: 110 }).await;
    env.apply(&namespace("apps", &[("eviction-autoscaler.azure.com/enable", "true")])).await;
    env.apply(&namespace("legacy", &[])).await;
    for (ns, name, replicas) in DEPLOYMENTS {
        env.apply(&deployment(ns, name, replicas, &[])).await;
    }
    set_strategy(
        &env,
        "apps",
        "recreate",
        r#"{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}"#,
    )
    .await;
    stateful_set(&env, "apps", "db").await;
    let min1 = || json!({"minAvailable": 1});
    for (ns, name, app) in [
        ("apps", "single", "single"),
        ("apps", "recreate", "recreate"),
        ("apps", "twin-a", "twin"),
        ("apps", "twin-b", "twin"),
        ("apps", "db", "db"),
        ("apps", "pair", "pair"),
        ("apps", "nothing", "absent"),
        ("apps", "optout", "optout"),
        ("apps", "capped", "capped"),
        ("legacy", "quiet", "quiet"),
    ] {
        env.apply(&pdb(ns, name, app, min1())).await;
    }
    env.apply(&pdb("apps", "wide", "wide", json!({"maxUnavailable": 1}))).await;
    env.apply(&pdb("apps", "scales", "scales", json!({"maxUnavailable": 0}))).await;
    odd_cases(&env).await;
    for (ns, name, replicas) in DEPLOYMENTS {
        env.wait_ready(ns, name, i64::from(replicas)).await;
    }
    // One of pair's pods stops being Ready (as its kubelet would report a failing probe).
    let pods = env
        .kubectl_ok(&[
            "get",
            "pods",
            "-n",
            "apps",
            "-l",
            "app=pair",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ])
        .await;
    let not_ready = r#"{"status":{"conditions":[{"type":"Ready","status":"False"}]}}"#;
    env.kubectl_ok(&["patch", "pod", "-n", "apps", &pods, "--subresource=status", "-p", not_ready]).await;
    env.wait_ready("apps", "pair", 1).await;

    // Not installed: the defaults, said so; every class and "why not" named; exit code 1.
    let (code, doc) = audit_json(&env).await;
    assert_eq!(code, 1, "some drains would stall: {doc:#}");
    let settings = doc["settings"].as_str().unwrap();
    assert!(settings.contains("not installed") && settings.contains("kube-system"), "{settings}");
    let want = [
        ("apps/both", "blocks_all", "several_owners"),
        ("apps/capped", "blocks_all", "surge_too_small"),
        ("apps/db", "blocks_all", "not_a_deployment"),
        ("apps/lonely", "blocks_all", "no_owner"),
        ("apps/nothing", "no_effect", "-"),
        ("apps/optout", "blocks_all", "opted_out"),
        ("apps/pair", "unhealthy", "opens"),
        ("apps/recreate", "blocks_all", "cannot_surge"),
        ("apps/scales", "blocks_all", "budget_scales"),
        ("apps/single", "blocks_all", "opens"),
        ("apps/twin-a", "overlapping", "overlapping"),
        ("apps/twin-b", "overlapping", "overlapping"),
        ("apps/wide", "ok", "-"),
        ("legacy/quiet", "blocks_all", "not_in_scope"),
    ];
    let mut got = verdicts(&doc);
    got.sort();
    let want: Vec<_> =
        want.iter().map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned())).collect();
    assert_eq!(got, want, "{doc:#}");
    let pdb_named =
        |name: &str| doc["pdbs"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap().clone();
    let pair = pdb_named("pair");
    assert_eq!(pair["affectedPods"], json!([pods]), "{pair:#}");
    // One healthy of one desired: the default policy already lets the not-Ready pod go.
    assert_eq!(pair["alwaysAllowFreesThem"], false, "{pair:#}");
    let recreate = pdb_named("recreate");
    let message = recreate["whyNot"]["message"].as_str().unwrap();
    assert!(message.contains("strategy is Recreate") && message.contains("zero-surge override"), "{message}");
    let mut stalled_on: Vec<&str> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|n| n["pdbs"].as_array().unwrap())
        .filter_map(Value::as_str)
        .collect();
    stalled_on.sort();
    stalled_on.dedup();
    let blocking = [
        "apps/both",
        "apps/capped",
        "apps/db",
        "apps/lonely",
        "apps/optout",
        "apps/pair",
        "apps/recreate",
        "apps/scales",
        "apps/single",
        "apps/twin-a",
        "apps/twin-b",
        "legacy/quiet",
    ];
    assert_eq!(stalled_on, blocking, "the nodes name every blocking PDB: {doc:#}");

    // The running controller's metrics say the same, from its caches.
    env.start_product(&[]).await;
    census_agrees_with(&env, &doc).await;
    env.product = None;

    // One node's drain.
    let (code, out, _) = audit(&env, &env.kubeconfig(), &["-A", "--node", "node-2", "-o", "json"]).await;
    let one: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(one["nodes"].as_array().map(Vec::len), Some(1), "{one:#}");
    assert_eq!(one["nodes"][0]["name"], "node-2");
    // The exit code speaks for that node alone.
    let stalls = one["nodes"][0]["completes"] == false;
    assert_eq!((code, one["drainsComplete"] == false), (i32::from(stalls), stalls), "{one:#}");
    let (code, _, err) = audit(&env, &env.kubeconfig(), &["-A", "--node", "node-9"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("node node-9 not found"), "{err}");

    // As a kubectl plugin, found on PATH by kubectl's own rules.
    let plugins = env.dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::os::unix::fs::symlink(BIN, plugins.join("kubectl-eviction_autoscaler")).unwrap();
    let script =
        format!("PATH={}:$PATH kubectl eviction-autoscaler audit -A; echo \"exit=$?\"", plugins.display());
    let (_, out) = env.sh(&script).await;
    assert!(out.contains("apps/recreate") && out.contains("our surge cannot open it"), "{out}");
    assert!(out.contains("Some drains would stall") && out.trim_end().ends_with("exit=1"), "{out}");

    // Read-only: reads, never a write.
    let requests: Vec<_> =
        env.requests().into_iter().filter(|r| r.user_agent.starts_with(AUDIT_AGENT)).collect();
    assert!(requests.len() >= 2 * READS.len(), "the audit's reads are in the audit log: {requests:#?}");
    let writes: Vec<_> = requests.iter().filter(|r| r.is_write()).collect();
    assert!(writes.is_empty(), "the audit writes nothing: {writes:#?}");

    // A ServiceAccount with get/list on what it reads is enough; without one it names it.
    let kubeconfig = auditor(&env, &READS).await;
    let (code, out, err) = audit(&env, &kubeconfig, &["-A"]).await;
    assert_eq!(code, 1, "{out}\n{err}");
    let without_events: Vec<_> = READS.iter().copied().filter(|(_, r)| *r != "events").collect();
    auditor(&env, &without_events).await;
    let (code, out, err) = wait_for("the narrower role in force", Duration::from_secs(10), || async {
        let result = audit(&env, &kubeconfig, &["-A"]).await;
        (result.0 == 2).then_some(result)
    })
    .await;
    assert_eq!(code, 2);
    assert!(
        err.contains("list events failed") && err.contains("cannot list resource \"events\""),
        "{out}\n{err}"
    );

    // The fixes the audit named; the settings from an installed ConfigMap.
    set_strategy(&env, "apps", "recreate", r#"{"spec":{"strategy":{"type":"RollingUpdate"}}}"#).await;
    env.kubectl_ok(&["delete", "pdb", "-n", "apps", "twin-b", "db"]).await;
    fix_odd_cases(&env).await;
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "eviction-autoscaler-config", "namespace": "eviction-autoscaler"},
        "data": {"config.yaml": "controllerConfig:\n  namespaces:\n    actionedNamespaces: [legacy]\n"}
    });
    env.apply(&config_map.to_string()).await;
    env.wait_ready("apps", "recreate", 1).await;
    let (code, doc) = audit_json(&env).await;
    let settings = doc["settings"].as_str().unwrap();
    assert!(
        settings.starts_with("ConfigMap eviction-autoscaler/eviction-autoscaler-config")
            && settings.contains("legacy"),
        "{settings}"
    );
    assert_eq!(code, 0, "every drain would complete: {doc:#}");
    assert_eq!(doc["drainsComplete"], true);

    // And they do, with the product running under the same settings.
    env.start_product(&["--actioned-namespaces=legacy", "--cooldown=2s"]).await;
    env.drain("node-1").await;
    env.kubectl_ok(&["uncordon", "node-1"]).await;
    env.drain("node-2").await;
}
