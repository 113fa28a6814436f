//! Authentication and RBAC over HTTP: ServiceAccount tokens from `kubectl create token`,
//! 403s worded like the apiserver's, Roles/ClusterRoles granting through bindings, kube-rs
//! errors, 401 for unknown or revoked tokens, and the request log's `user`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{Kubectl, Run, Sim, client_from};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams};

const NS: &str = "team";
const SA_USER: &str = "system:serviceaccount:team:bot";

/// A kubeconfig for this server authenticating with `token`.
fn kubeconfig_with_token(sim: &Sim, name: &str, token: &str) -> PathBuf {
    let path = sim.dir.path().join(name);
    let server = &sim.server;
    kube_sim::tls::write_kubeconfig_as(&path, server.url(), server.ca_pem(), "test-user", token, NS)
        .expect("kubeconfig written");
    path
}

/// Namespaces `team` and `other`, ServiceAccount `team/bot`, and a kubeconfig for it holding a
/// token from `kubectl create token`.
async fn sim_with_bot() -> (Sim, PathBuf) {
    let sim = Sim::start().await;
    sim.kubectl(&["create", "namespace", NS]).await.ok();
    sim.kubectl(&["create", "namespace", "other"]).await.ok();
    sim.kubectl(&["create", "serviceaccount", "bot", "-n", NS]).await.ok();
    let run = sim.kubectl(&["create", "token", "bot", "-n", NS]).await.ok();
    let token = run.stdout.trim().to_string();
    assert!(!token.is_empty() && !token.contains(char::is_whitespace), "token: {token:?}");
    let kubeconfig = kubeconfig_with_token(&sim, "bot.kubeconfig", &token);
    (sim, kubeconfig)
}

fn assert_forbidden(run: &Run, message: &str) {
    assert_ne!(run.code, 0, "kubectl {:?} should fail; stdout: {}", run.args, run.stdout);
    assert!(
        run.stderr.contains(&format!("Error from server (Forbidden): {message}")),
        "kubectl {:?} stderr:\n{}\nexpected: {message}",
        run.args,
        run.stderr
    );
}

fn pod_yaml(namespace: &str, name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  containers:\n  - name: main\n    image: example/app:1.0\n---\n"
    )
}

#[tokio::test]
async fn a_service_account_can_do_nothing_until_a_role_is_bound() {
    let (sim, bot) = sim_with_bot().await;
    let denied = sim.kubectl_as(&bot, &["get", "pods", "-n", NS]).await;
    assert_forbidden(
        &denied,
        r#"pods is forbidden: User "system:serviceaccount:team:bot" cannot list resource "pods" in API group "" in the namespace "team""#,
    );

    sim.kubectl(&["create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods", "-n", NS])
        .await
        .ok();
    sim.kubectl(&[
        "create",
        "rolebinding",
        "bot-reads-pods",
        "--role=pod-reader",
        "--serviceaccount=team:bot",
        "-n",
        NS,
    ])
    .await
    .ok();
    sim.seed(&pod_yaml(NS, "web-1")).await;
    let allowed = sim.kubectl_as(&bot, &["get", "pods", "-n", NS, "-o", "name"]).await.ok();
    assert_eq!(allowed.stdout.trim(), "pod/web-1");
    // The Role grants in its namespace only, and only what it lists.
    assert_forbidden(
        &sim.kubectl_as(&bot, &["get", "pods", "-n", "other"]).await,
        r#"pods is forbidden: User "system:serviceaccount:team:bot" cannot list resource "pods" in API group "" in the namespace "other""#,
    );
    assert_forbidden(
        &sim.kubectl_as(&bot, &["delete", "pod", "web-1", "-n", NS]).await,
        r#"pods "web-1" is forbidden: User "system:serviceaccount:team:bot" cannot delete resource "pods" in API group "" in the namespace "team""#,
    );
    assert!(sim.exists("v1", "pods", Some(NS), "web-1"), "a denied delete deletes nothing");
    assert_forbidden(
        &sim.kubectl_as(&bot, &["get", "deployments", "-A"]).await,
        r#"deployments.apps is forbidden: User "system:serviceaccount:team:bot" cannot list resource "deployments" in API group "apps" at the cluster scope"#,
    );

    // The request log names the user and records the 403s like any other answer.
    let records = sim.cluster().request_log().records();
    let bot_lists: Vec<(String, u16)> = records
        .iter()
        .filter(|r| r.user == SA_USER && r.verb == "list" && r.resource == "pods")
        .map(|r| (r.namespace.clone(), r.code))
        .collect();
    assert_eq!(bot_lists, [(NS.to_string(), 403), (NS.to_string(), 200), ("other".to_string(), 403)]);
    assert!(records.iter().any(|r| r.user == "admin" && r.verb == "create" && r.resource == "roles"));
    let via_http = debug_requests_as_anonymous(&sim).await;
    assert!(via_http.contains(&format!("\"user\":\"{SA_USER}\"")), "{via_http}");
}

/// A GET through `client` (raw path), as text or the API error.
async fn get_raw(client: &kube::Client, path: &str) -> Result<String, kube::Error> {
    let request = http::Request::get(path).body(Vec::new()).expect("request builds");
    client.request_text(request).await
}

/// `GET /debug/requests` without credentials (the hook is open to every caller).
async fn debug_requests_as_anonymous(sim: &Sim) -> String {
    let anonymous = client_from(&kubeconfig_with_token(sim, "anonymous.kubeconfig", "")).await;
    get_raw(&anonymous, "/debug/requests").await.expect("the debug hook is open")
}

#[tokio::test]
async fn resource_names_limit_a_role_to_the_named_objects() {
    let (sim, bot) = sim_with_bot().await;
    sim.seed(&format!("{}{}", pod_yaml(NS, "web-1"), pod_yaml(NS, "web-2"))).await;
    sim.kubectl(&[
        "create",
        "role",
        "one-pod",
        "--verb=get,list",
        "--resource=pods",
        "--resource-name=web-1",
        "-n",
        NS,
    ])
    .await
    .ok();
    sim.kubectl(&[
        "create",
        "rolebinding",
        "one-pod",
        "--role=one-pod",
        "--serviceaccount=team:bot",
        "-n",
        NS,
    ])
    .await
    .ok();

    sim.kubectl_as(&bot, &["get", "pod", "web-1", "-o", "name"]).await.ok();
    assert_forbidden(
        &sim.kubectl_as(&bot, &["get", "pod", "web-2"]).await,
        r#"pods "web-2" is forbidden: User "system:serviceaccount:team:bot" cannot get resource "pods" in API group "" in the namespace "team""#,
    );
    // A list names no object, so a rule with resourceNames never allows it ...
    assert_forbidden(
        &sim.kubectl_as(&bot, &["get", "pods"]).await,
        r#"pods is forbidden: User "system:serviceaccount:team:bot" cannot list resource "pods" in API group "" in the namespace "team""#,
    );
    // ... unless a metadata.name field selector pins it.
    let pinned =
        sim.kubectl_as(&bot, &["get", "pods", "--field-selector", "metadata.name=web-1", "-o", "name"]).await;
    assert_eq!(pinned.ok().stdout.trim(), "pod/web-1");
    assert_forbidden(
        &sim.kubectl_as(&bot, &["get", "pods", "--field-selector", "metadata.name=web-2"]).await,
        r#"pods "web-2" is forbidden: User "system:serviceaccount:team:bot" cannot list resource "pods" in API group "" in the namespace "team""#,
    );
}

#[tokio::test]
async fn a_cluster_role_bound_by_a_role_binding_grants_in_that_namespace_only() {
    let (sim, bot) = sim_with_bot().await;
    sim.kubectl(&["create", "configmap", "settings", "-n", NS, "--from-literal=a=1"]).await.ok();
    sim.kubectl(&["create", "configmap", "settings", "-n", "other", "--from-literal=a=1"]).await.ok();
    sim.kubectl(&["create", "clusterrole", "cm-reader", "--verb=get,list", "--resource=configmaps"])
        .await
        .ok();
    sim.kubectl(&[
        "create",
        "rolebinding",
        "cm-reader",
        "--clusterrole=cm-reader",
        "--serviceaccount=team:bot",
        "-n",
        NS,
    ])
    .await
    .ok();

    let listed = sim.kubectl_as(&bot, &["get", "configmaps", "-n", NS, "-o", "name"]).await.ok();
    assert_eq!(listed.stdout.trim(), "configmap/settings");
    assert_forbidden(
        &sim.kubectl_as(&bot, &["get", "configmap", "settings", "-n", "other"]).await,
        r#"configmaps "settings" is forbidden: User "system:serviceaccount:team:bot" cannot get resource "configmaps" in API group "" in the namespace "other""#,
    );
    assert_forbidden(
        &sim.kubectl_as(&bot, &["get", "configmaps", "-A"]).await,
        r#"configmaps is forbidden: User "system:serviceaccount:team:bot" cannot list resource "configmaps" in API group "" at the cluster scope"#,
    );

    // The same ClusterRole through a ClusterRoleBinding grants everywhere.
    sim.kubectl(&[
        "create",
        "clusterrolebinding",
        "cm-reader",
        "--clusterrole=cm-reader",
        "--serviceaccount=team:bot",
    ])
    .await
    .ok();
    let everywhere = sim.kubectl_as(&bot, &["get", "configmaps", "-A", "-o", "name"]).await.ok();
    assert_eq!(everywhere.stdout.trim(), "configmap/settings\nconfigmap/settings");
}

#[tokio::test]
async fn kube_rs_sees_403_and_401_as_api_errors() {
    let sim = Sim::start().await;
    sim.server.ensure_service_account(NS, "bot").await.expect("service account created");
    let path = sim.dir.path().join("bot.kubeconfig");
    sim.server.write_service_account_kubeconfig(NS, "bot", &path).expect("kubeconfig written");
    let text = std::fs::read_to_string(&path).expect("kubeconfig readable");
    assert!(text.contains("namespace: team") && text.contains(sim.server.url()), "{text}");

    let client = client_from(&path).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    match pods.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
            assert_eq!(
                status.message,
                format!(
                    r#"pods is forbidden: User "{SA_USER}" cannot list resource "pods" in API group "" in the namespace "team""#
                )
            );
        }
        other => panic!("expected a 403, got {other:?}"),
    }
    let admin = sim.client().await;
    Api::<ConfigMap>::namespaced(admin.clone(), NS)
        .create(
            &Default::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "c"}})).expect("cm"),
        )
        .await
        .expect("the admin may create");

    // Deleting the ServiceAccount revokes its tokens.
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(admin, NS);
    accounts.delete("bot", &Default::default()).await.expect("service account deleted");
    match pods.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"))
        }
        other => panic!("expected a 401 after the ServiceAccount was deleted, got {other:?}"),
    }
    let unknown = client_from(&kubeconfig_with_token(&sim, "unknown.kubeconfig", "not-a-token")).await;
    match Api::<Pod>::default_namespaced(unknown).list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(
                (status.code, status.reason.as_str(), status.message.as_str()),
                (401, "Unauthorized", "Unauthorized")
            );
        }
        other => panic!("expected a 401 for an unknown token, got {other:?}"),
    }
    let unauthorized: Vec<_> =
        sim.cluster().request_log().records().into_iter().filter(|r| r.code == 401).map(|r| r.user).collect();
    assert_eq!(unauthorized, ["", ""], "401s are logged, without a user");
}

#[tokio::test]
async fn token_requests_unknown_tokens_and_anonymous_requests() {
    let (sim, _) = sim_with_bot().await;
    let missing = sim.kubectl(&["create", "token", "nobody", "-n", NS]).await;
    assert_ne!(missing.code, 0);
    assert!(missing.stderr.contains(r#"serviceaccounts "nobody" not found"#), "{}", missing.stderr);
    let short = sim.kubectl(&["create", "token", "bot", "-n", NS, "--duration=1m"]).await;
    assert!(
        short.stderr.contains(
            "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        ),
        "{}",
        short.stderr
    );

    let bogus = kubeconfig_with_token(&sim, "bogus.kubeconfig", "not-a-token");
    let unauthorized = sim.kubectl_as(&bogus, &["get", "--raw", "/api/v1/namespaces/team/pods"]).await;
    assert_ne!(unauthorized.code, 0);
    assert!(unauthorized.stderr.contains("Unauthorized"), "{}", unauthorized.stderr);

    // No token: system:anonymous may read /version and /healthz, nothing else.
    let anonymous = client_from(&kubeconfig_with_token(&sim, "anonymous.kubeconfig", "")).await;
    assert!(get_raw(&anonymous, "/version").await.expect("/version is public").contains("\"minor\""));
    assert_eq!(get_raw(&anonymous, "/healthz").await.expect("/healthz is public"), "ok");
    let forbidden = |result: Result<String, kube::Error>| match result {
        Err(kube::Error::Api(status)) if status.code == 403 => status.message,
        other => panic!("expected a 403, got {other:?}"),
    };
    assert_eq!(
        forbidden(get_raw(&anonymous, "/api/v1/namespaces/team/pods").await),
        r#"pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "team""#
    );
    assert_eq!(
        forbidden(get_raw(&anonymous, "/apis").await),
        r#"forbidden: User "system:anonymous" cannot get path "/apis""#
    );
}

#[test]
fn the_binary_writes_service_account_kubeconfigs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let admin = dir.path().join("admin.kubeconfig");
    let bot = dir.path().join("bot.kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["--listen", "127.0.0.1:0", "--kubeconfig"])
        .arg(&admin)
        .arg("--service-account-kubeconfig")
        .arg(format!("{NS}/bot={}", bot.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kube-sim starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("ready line");
    let run = |kubeconfig: &Path, args: &[&str]| {
        Kubectl::new(kubeconfig, &dir.path().join("home"))
            .command()
            .args(args)
            .output()
            .expect("kubectl runs")
    };
    let checks = || {
        assert!(line.starts_with("kube-sim ready https://127.0.0.1:"), "{line}");
        let account = run(&admin, &["get", "serviceaccount", "bot", "-n", NS, "-o", "name"]);
        assert_eq!(String::from_utf8_lossy(&account.stdout).trim(), "serviceaccount/bot");
        // The context namespace is the ServiceAccount's.
        let denied = run(&bot, &["get", "pods"]);
        assert!(!denied.status.success());
        let stderr = String::from_utf8_lossy(&denied.stderr);
        assert!(
            stderr.contains(&format!(
                r#"User "{SA_USER}" cannot list resource "pods" in API group "" in the namespace "team""#
            )),
            "{stderr}"
        );
    };
    let result = std::panic::catch_unwind(checks);
    let _ = child.kill();
    let _ = child.wait();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
