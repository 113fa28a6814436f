//! The shipped install, end to end on the real control plane: `kubectl apply -k` of deploy/, the
//! binary run locally the way the rendered Deployment's pod runs it (args, env, the ConfigMap
//! as `--config`) as the shipped ServiceAccount under the real RBAC authorizer, and the
//! apiserver calling the webhook through the shipped `clientConfig.service` (the service
//! network routes the Service's ClusterIP to a replica's local port; support/netns.rs).
//! Self-managed certificates (one Secret for two replicas, `caBundle` kept filled, rotation
//! without a failed webhook call), Pod Security `restricted`, replicas told apart in the audit
//! log, the seed's three install modes, a ConfigMap edit taking effect without a restart, and
//! uninstall (with the cleanup command, or the CRD's deletion through the garbage collector).

use e2e_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::install::{CONFIG_MAP, SERVING_CERTIFICATE, TLS_SECRET, WEBHOOK_CONFIGURATION, user_part};
use support::metrics::metric_sum;
use support::pdbs::is_owned;
use support::rbac::{grants, unused};
use support::{
    ClusterOptions, ClusterShape, Env, PRODUCT_ACCOUNT, PRODUCT_AGENT, deployment, namespace, pdb, wait_for,
};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const NS: &str = PRODUCT_ACCOUNT.0;
const REQUESTS: &str = "eviction_autoscaler_webhook_requests_total";
const MINUTE: Duration = Duration::from_secs(60);

/// Successful creates of `resource` by the product.
fn product_creates(env: &Env, resource: &str) -> usize {
    env.requests()
        .iter()
        .filter(|r| {
            r.user_agent.starts_with(PRODUCT_AGENT)
                && r.verb == "create"
                && r.resource == resource
                && r.succeeded()
        })
        .count()
}

/// A real control plane of `nodes` nodes whose apiserver reaches Services.
async fn cluster(nodes: usize) -> Env {
    let options = ClusterOptions { service_network: true, ..ClusterOptions::default() };
    Env::start_with(BIN, ClusterShape { nodes, pods_per_node: 110 }, options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_install_makes_one_certificate_and_keeps_the_ca_bundle_filled() {
    let env = cluster(2).await;
    let objects = env.install(".").await;
    env.project_config();
    let template = env.pod_template(&objects);
    let (a, b) = tokio::join!(
        env.start_replica(&template, "eviction-autoscaler-a", &[]),
        env.start_replica(&template, "eviction-autoscaler-b", &[])
    );
    assert_eq!(product_creates(&env, "secrets"), 1, "two replicas, one Secret created");
    env.wait_bundle_is_the_ca("the caBundle filled with the Secret's CA").await;

    // A re-apply, then a blanked bundle: both repaired.
    env.install(".").await;
    env.wait_bundle_is_the_ca("the caBundle after a re-apply").await;
    env.kubectl_ok(&[
        "patch",
        "validatingwebhookconfiguration",
        WEBHOOK_CONFIGURATION,
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":""}]"#,
    ])
    .await;
    env.wait_bundle_is_the_ca("the blanked caBundle refilled").await;

    // Evictions reach replica a over TLS verified against that bundle; the basic install
    // surges a blocked kube-system Deployment. New Deployments reach replica b.
    env.route_webhook_to(a.webhook_addr).await;
    env.protected_workload("kube-system", "dns", 1, 1).await;
    let node = env.node_of("kube-system", "dns").await;
    env.drain(&node).await;
    let evictions = metric_sum(&a.metrics().await, REQUESTS, &["path=\"/validate-eviction\""]);
    assert!(evictions >= 1.0, "replica a reviewed the evictions");
    env.route_webhook_to(b.webhook_addr).await;
    env.apply(&deployment("default", "web", 1, &[])).await;
    let reviews = metric_sum(&b.metrics().await, REQUESTS, &["path=\"/validate-deployment\""]);
    assert!(reviews >= 1.0, "replica b reviewed the new Deployment");
    assert_eq!(
        env.failed_open_calls(),
        Vec::<Value>::new(),
        "every webhook call succeeded over verified TLS"
    );

    // The audit log tells the replicas apart: each request names its pod.
    let mut agents: Vec<String> = env
        .requests()
        .into_iter()
        .filter(|r| r.user_agent.starts_with(PRODUCT_AGENT))
        .map(|r| r.user_agent)
        .collect();
    agents.sort();
    agents.dedup();
    let version = env!("CARGO_PKG_VERSION");
    let expected: Vec<String> = ["a", "b"]
        .iter()
        .map(|r| format!("eviction-autoscaler/{version} (eviction-autoscaler-{r})"))
        .collect();
    assert_eq!(agents, expected, "every product request names its replica");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_deployment_is_admitted_under_pod_security_restricted() {
    let env = cluster(1).await;
    env.install(".").await;
    let labels = env.kubectl_ok(&["get", "namespace", NS, "-o", "jsonpath={.metadata.labels}"]).await;
    assert!(labels.contains(r#""pod-security.kubernetes.io/enforce":"restricted""#), "{labels}");
    // The ReplicaSet's pods pass the real Pod Security admission...
    let selector = "app.kubernetes.io/name=eviction-autoscaler";
    let env = &env;
    wait_for("the shipped Deployment's two pods", MINUTE, || async move {
        let pods = env.kubectl_ok(&["get", "pods", "-n", NS, "-l", selector, "-o", "name"]).await;
        (pods.lines().count() == 2).then_some(())
    })
    .await;
    // ...which enforces: a privileged pod is refused there.
    let privileged = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "privileged", "namespace": NS},
        "spec": {"containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": true}}]}
    });
    let (ok, output) = env.sh(&format!("echo '{privileged}' | kubectl apply -f -")).await;
    assert!(!ok && output.contains("violates PodSecurity"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cert_manager_mode_serves_what_cert_manager_issues_and_reloads_its_renewal() {
    let env = cluster(1).await;
    let cert_manager = env.install_cert_manager().await;
    let objects = env.install("overlays/cert-manager").await;
    env.project_config();
    let files = env.serve_from_cert_manager(&cert_manager).await;
    let template = env.pod_template(&objects);
    let replica =
        env.start_replica(&template, "eviction-autoscaler-a", &files.each_ref().map(String::as_str)).await;
    env.route_webhook_to(replica.webhook_addr).await;
    env.wait_bundle_is_the_ca("the caBundle injected").await;
    let reviews =
        || async { metric_sum(&replica.metrics().await, REQUESTS, &["path=\"/validate-deployment\""]) };
    env.apply(&deployment("default", "web-0", 1, &[])).await;
    assert_eq!(reviews().await, 1.0, "the apiserver reached the webhook over cert-manager's certificate");

    // A renewal: a new serving certificate from the same CA, swapped into the mounted files.
    env.issue_certificate(&cert_manager, NS, SERVING_CERTIFICATE).await;
    env.project_secret(NS, TLS_SECRET);
    wait_for("the renewed certificate loaded", MINUTE, || async {
        let reloads =
            metric_sum(&replica.metrics().await, "eviction_autoscaler_webhook_cert_reloads_total", &[]);
        (reloads >= 1.0).then_some(())
    })
    .await;
    env.apply(&deployment("default", "web-1", 1, &[])).await;
    assert_eq!(reviews().await, 2.0, "reviewed over the renewed certificate");
    assert_eq!(env.failed_open_calls(), Vec::<Value>::new(), "no webhook call failed");
    assert_eq!(product_creates(&env, "secrets"), 0, "cert-manager's Secret, not one of the product's");
}

/// How long the apiserver took for each eviction in `namespace` it admitted (audit: received →
/// completed). The product's own pods are evicted too, without a webhook call (its namespace is
/// left out of the webhook's scope).
fn eviction_latencies(env: &Env, namespace: &str) -> Vec<Duration> {
    let at = |e: &Value, key: &str| -> jiff::Timestamp {
        e[key].as_str().and_then(|t| t.parse().ok()).expect("an audit timestamp")
    };
    env.audit_events()
        .iter()
        .filter(|e| {
            e["stage"] == "ResponseComplete"
                && e["objectRef"]["subresource"] == "eviction"
                && e["objectRef"]["namespace"] == namespace
                && e["responseStatus"]["code"] == 201
        })
        .map(|e| {
            let took = at(e, "stageTimestamp").duration_since(at(e, "requestReceivedTimestamp"));
            Duration::try_from(took).expect("completed after received")
        })
        .collect()
}

/// The eviction webhook's `timeoutSeconds` in the shipped `deploy/base/webhook.yaml`.
fn eviction_webhook_timeout() -> Duration {
    let text = std::fs::read_to_string(support::repo_path("deploy/base/webhook.yaml")).expect("webhook.yaml");
    let config: Value = serde_saphyr::from_str(&text).expect("webhook.yaml is YAML");
    let webhooks = config["webhooks"].as_array().expect("webhooks");
    let eviction =
        webhooks.iter().find(|w| w["name"] == "eviction.eviction-autoscaler.io").expect("eviction webhook");
    Duration::from_secs(eviction["timeoutSeconds"].as_u64().expect("timeoutSeconds"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_replica_delays_each_eviction_by_at_most_the_timeout_and_a_killed_one_not_at_all() {
    let env = cluster(3).await;
    let objects = env.install(".").await;
    env.project_config();
    let template = env.pod_template(&objects);
    let replica = env.start_replica(&template, "eviction-autoscaler-a", &[]).await;
    env.route_webhook_to(replica.webhook_addr).await;
    env.apply(&namespace("apps", &[])).await;
    env.protected_workload("apps", "web", 2, 1).await;
    let timeout = eviction_webhook_timeout();
    let slack = Duration::from_millis(1500);

    // SIGSTOP: the connection is accepted and never answered; the apiserver gives up after
    // timeoutSeconds and admits the eviction (failurePolicy Ignore).
    replica.signal("STOP");
    env.drain(&env.node_of("apps", "web").await).await;
    replica.signal("CONT");
    let stopped = eviction_latencies(&env, "apps");
    assert!(!stopped.is_empty(), "evictions were admitted");
    assert!(stopped.iter().all(|d| *d <= timeout + slack), "at most the timeout each: {stopped:?}");
    // A new connection gives up sooner: client-go's TLS handshake timeout (10 s) runs out first.
    let handshake = Duration::from_secs(10);
    assert!(stopped.iter().all(|d| *d >= handshake - slack), "each waited for the hung webhook: {stopped:?}");
    assert!(!env.failed_open_calls().is_empty(), "the apiserver recorded failing open");

    // SIGKILL: nothing listens behind the Service; the call fails at once and is ignored.
    replica.signal("KILL");
    drop(replica);
    env.wait_ready("apps", "web", 2).await;
    env.drain(&env.node_of("apps", "web").await).await;
    let killed = &eviction_latencies(&env, "apps")[stopped.len()..];
    assert!(!killed.is_empty(), "evictions were admitted");
    assert!(killed.iter().all(|d| *d < timeout - slack), "no eviction waited for a dead webhook: {killed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_lived_certificate_rotates_without_a_failed_webhook_call() {
    let env = cluster(1).await;
    let objects = env.install(".").await;
    env.project_config();
    let template = env.pod_template(&objects);
    let replica = env.start_replica(&template, "eviction-autoscaler-a", &["--cert-validity=12s"]).await;
    env.route_webhook_to(replica.webhook_addr).await;
    env.wait_bundle_is_the_ca("the caBundle filled").await;
    let first_cert =
        env.object("", "v1", "secrets", NS, TLS_SECRET).expect("Secret")["data"]["tls.crt"].clone();

    // A review every 6 s for 36 s: the webhook closes idle connections after 5 s, so each
    // review opens a new TLS connection, across three rotations (every ~8 s).
    let creates = 6;
    for i in 0..creates {
        env.apply(&deployment("default", &format!("web-{i}"), 1, &[])).await;
        tokio::time::sleep(Duration::from_secs(6)).await;
    }
    let metrics = replica.metrics().await;
    let rotations = metric_sum(&metrics, "eviction_autoscaler_webhook_cert_rotations_total", &[]);
    assert!(rotations >= 2.0, "rotated at least twice in 36 s of a 12 s validity: {rotations}");
    let now_cert =
        env.object("", "v1", "secrets", NS, TLS_SECRET).expect("Secret")["data"]["tls.crt"].clone();
    assert_ne!(first_cert, now_cert, "the Secret holds a new serving certificate");
    let reviews = metric_sum(&metrics, REQUESTS, &["path=\"/validate-deployment\""]);
    assert_eq!(reviews, f64::from(creates), "every Deployment create was reviewed");
    assert_eq!(env.failed_open_calls(), Vec::<Value>::new(), "no webhook call failed during rotations");
    // `cleanup --stop-deployment` as the ServiceAccount with the product's settings (what the
    // Helm chart's uninstall hook runs): the Secret the product made goes too.
    drop(replica);
    let cleanup = std::process::Command::new(BIN)
        .args(["cleanup", &format!("--stop-deployment={NS}/eviction-autoscaler")])
        .args(&template.args)
        .envs(template.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("KUBECONFIG", env.product_kubeconfig())
        .output()
        .expect("cleanup runs");
    let printed = String::from_utf8_lossy(&cleanup.stdout);
    assert!(cleanup.status.success(), "cleanup: {printed}{}", String::from_utf8_lossy(&cleanup.stderr));
    assert!(
        printed.contains(&format!("remove secret {NS}/{TLS_SECRET} (self-managed certificate): done")),
        "{printed}"
    );
    assert!(env.object("", "v1", "secrets", NS, TLS_SECRET).is_none(), "the Secret is gone");
    // The certificate permissions the component grants were all needed (rotation = update).
    let grants = grants("deploy/components/self-managed-certs/rbac.yaml");
    let unused: Vec<String> = unused(&grants, &env.requests()).iter().map(ToString::to_string).collect();
    assert_eq!(unused, Vec::<String>::new(), "granted but never used");
}

/// Installs `overlay`, starts one replica, and seeds the mode namespaces
/// ([`Env::seed_mode_namespaces`]).
async fn mode(overlay: &str) -> (Env, support::Product) {
    let env = cluster(1).await;
    let objects = env.install(overlay).await;
    env.project_config();
    let template = env.pod_template(&objects);
    let replica = env.start_replica(&template, "eviction-autoscaler-a", &[]).await;
    env.route_webhook_to(replica.webhook_addr).await;
    env.seed_mode_namespaces().await;
    (env, replica)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_mode_surges_in_kube_system_and_creates_no_pdb() {
    let (env, _replica) = mode("overlays/basic").await;
    for ns in ["kube-system", "production"] {
        env.apply(&pdb(ns, "guard", "web", json!({"minAvailable": 2}))).await;
        env.wait_ready(ns, "web", 2).await;
    }
    let kube_system = env.record_deployment("kube-system", "web");
    let production = env.record_deployment("production", "web");
    // Cordoning the only node is a drain edge: blocked pods count as displaced at once.
    env.kubectl_ok(&["cordon", "node-1"]).await;
    kube_system.wait_seen("kube-system/web surged", MINUTE, |s| s.replicas > 2).await;
    assert!(production.states().iter().all(|s| s.replicas == 2), "production is not actioned in basic mode");
    assert_eq!(env.protected_namespaces(None).await, Vec::<String>::new(), "basic mode creates no PDB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selected_namespaces_mode_protects_only_the_listed_namespaces() {
    let (env, _replica) = mode("overlays/selected-namespaces").await;
    assert_eq!(env.protected_namespaces(Some("production")).await, ["kube-system", "production"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_wide_mode_protects_every_namespace_not_opted_out() {
    let (env, _replica) = mode("overlays/cluster-wide").await;
    let protected = env.protected_namespaces(Some("team")).await;
    for ns in ["kube-system", "production", "team"] {
        assert!(protected.iter().any(|p| p == ns), "{ns} protected: {protected:?}");
    }
    assert!(
        !protected.iter().any(|p| p == "opted-out"),
        "the opted-out namespace is left alone: {protected:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_the_config_map_takes_effect_without_a_restart() {
    let (env, replica) = mode("overlays/selected-namespaces").await;
    assert_eq!(env.protected_namespaces(Some("production")).await, ["kube-system", "production"]);
    let pid = replica.child.id();

    // A bad edit is reported and changes nothing.
    let config = |namespaces: &str| {
        let text = format!(
            "controllerConfig:\n  pdb:\n    create: true\n  namespaces:\n    actionedNamespaces: [{namespaces}]\n"
        );
        json!({"data": {"config.yaml": text}}).to_string()
    };
    env.kubectl_ok(&["patch", "configmap", CONFIG_MAP, "-n", NS, "--type=merge", "-p", &config("Bad_Name")])
        .await;
    env.project_config();
    wait_for("the bad edit reported", MINUTE, || {
        let log = replica.log();
        async move { log.contains("keeping the current configuration").then_some(()) }
    })
    .await;

    env.kubectl_ok(&[
        "patch",
        "configmap",
        CONFIG_MAP,
        "-n",
        NS,
        "--type=merge",
        "-p",
        &config("kube-system, production, team"),
    ])
    .await;
    env.project_config();
    assert_eq!(env.protected_namespaces(Some("team")).await, ["kube-system", "production", "team"]);
    assert_eq!(replica.child.id(), pid, "the same process");
    assert!(replica.log().contains("configuration changed"), "{}", replica.log());
}

const GARBAGE_COLLECTOR: &str = "system:serviceaccount:kube-system:generic-garbage-collector";

/// `namespace/name` of an object.
fn key(object: &Value) -> String {
    let m = &object["metadata"];
    format!("{}/{}", m["namespace"].as_str().unwrap_or_default(), m["name"].as_str().unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_crd_garbage_collects_every_owned_pdb_and_no_user_pdb() {
    let (env, replica) = mode("overlays/cluster-wide").await;
    env.apply(&deployment("team", "api", 1, &[])).await;
    env.apply(&pdb("team", "api-guard", "api", json!({"maxUnavailable": 0}))).await;
    assert_ne!(env.protected_namespaces(Some("production")).await, Vec::<String>::new());
    let user_pdb = env.object("policy", "v1", "poddisruptionbudgets", "team", "api-guard").expect("user PDB");

    drop(replica);
    let mut owned: Vec<String> = env.pdbs("").iter().filter(|p| is_owned(p)).map(key).collect();
    let start = env.requests().len();
    env.kubectl_ok(&["delete", "crd", "evictionautoscalers.eviction-autoscaler.azure.com"]).await;
    wait_for("the garbage collector to delete every owned PDB", MINUTE, || {
        let left = env.pdbs("").iter().filter(|p| is_owned(p)).count();
        async move { (left == 0).then_some(()) }
    })
    .await;
    let after =
        env.object("policy", "v1", "poddisruptionbudgets", "team", "api-guard").expect("user PDB kept");
    assert_eq!(user_part(&after), user_part(&user_pdb), "the user PDB is as it was");
    let mut collected: Vec<String> = env.requests()[start..]
        .iter()
        .filter(|r| r.verb == "delete" && r.resource == "poddisruptionbudgets" && r.succeeded())
        .inspect(|r| assert_eq!(r.user, GARBAGE_COLLECTOR, "{r:?}"))
        .map(|r| format!("{}/{}", r.namespace, r.name))
        .collect();
    owned.sort();
    collected.sort();
    assert_eq!(collected, owned, "the garbage collector deleted each owned PDB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_leaves_no_trace_and_every_user_pdb_as_it_was() {
    let (env, replica) = mode("overlays/cluster-wide").await;
    // A user PDB in team (ours there is retired), and a surge in production.
    env.apply(&deployment("team", "api", 1, &[])).await;
    env.apply(&pdb("team", "api-guard", "api", json!({"maxUnavailable": 0}))).await;
    env.wait_ready("production", "web", 2).await;
    env.protected_namespaces(Some("production")).await;
    let user_pdb = env.object("policy", "v1", "poddisruptionbudgets", "team", "api-guard").expect("user PDB");
    let production = env.record_deployment("production", "web");
    env.kubectl_ok(&["cordon", "node-1"]).await;
    production.wait_seen("production/web surged", MINUTE, |s| s.replicas > 2).await;

    drop(replica); // stop the product first, as the README says
    let out = std::process::Command::new(BIN)
        .arg("cleanup")
        .env("KUBECONFIG", env.kubeconfig())
        .output()
        .expect("cleanup runs");
    assert!(out.status.success(), "cleanup: {}", String::from_utf8_lossy(&out.stderr));
    let left = env.kubectl_ok(&["get", "evictionautoscalers", "-A", "-o", "name"]).await;
    assert_eq!(left.trim(), "", "no EvictionAutoScaler left");
    env.kubectl_ok(&[
        "delete",
        "-k",
        &support::repo_path("deploy/overlays/cluster-wide"),
        "--ignore-not-found",
    ])
    .await;

    assert_eq!(env.pdbs("").iter().filter(|p| is_owned(p)).count(), 0, "no owned PDB left");
    let surged: Vec<Value> = ["kube-system", "production", "team", "opted-out"]
        .iter()
        .filter_map(|ns| env.deployment_now(ns, "web"))
        .filter(|d| d["metadata"]["annotations"]["evictionSurgeReplicas"].is_string())
        .collect();
    assert_eq!(surged, Vec::<Value>::new(), "no surge annotation left");
    assert_eq!(env.deployment_now("production", "web").expect("web")["spec"]["replicas"], 2, "reverted");
    let after =
        env.object("policy", "v1", "poddisruptionbudgets", "team", "api-guard").expect("user PDB kept");
    assert_eq!(user_part(&after), user_part(&user_pdb), "the user PDB is as it was");
    assert_eq!(env.product_pdb_writes("team", "api-guard"), [], "the product never wrote to the user PDB");
}
