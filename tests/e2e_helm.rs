//! The Helm chart (`deploy/helm/eviction-autoscaler`), the second front door beside deploy/'s
//! kustomizations, with Helm 4 and Helm 3 built from their Go modules. Without a cluster: both
//! lint it clean, render for each seed mode exactly what the matching overlay renders (RBAC,
//! webhook configuration, security contexts — every object, less the labels each tool adds),
//! and refuse a bad value naming its key. On the real control plane: the renderings pass
//! `--dry-run=server` (with the cert-manager and prometheus-operator CRDs of their own modules);
//! `helm install` of each mode with the binary run locally as the rendered pod would run it and
//! the apiserver calling its webhook through the release's Service; `helm upgrade
//! --reuse-values --set ...` taking effect without a restart; `helm uninstall` after its
//! pre-delete hook leaving nothing of ours and every user PDB as it was.

use e2e_support as support;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use support::helm::{CHART, Helm, RELEASE, is_hook};
use support::install::{TLS_SECRET, user_part};
use support::metrics::metric_sum;
use support::pdbs::is_owned;
use support::{
    ClusterOptions, ClusterShape, Env, PRODUCT_ACCOUNT, deployment, namespace, pdb, repo_path, wait_for,
};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
const NS: &str = PRODUCT_ACCOUNT.0;
const MINUTE: Duration = Duration::from_secs(60);
const CRD: &str = "evictionautoscalers.eviction-autoscaler.azure.com";

/// A seed install mode: the kustomization that installs it and the `--set` values that make
/// the chart install the same.
struct Mode {
    overlay: &'static str,
    sets: &'static [&'static str],
}

const BASIC: Mode = Mode { overlay: "overlays/basic", sets: &[] };
/// The seed's extension settings, as `--set` takes them.
const SELECTED_NAMESPACES: Mode = Mode {
    overlay: "overlays/selected-namespaces",
    sets: &[
        "controllerConfig.pdb.create=true",
        "controllerConfig.namespaces.actionedNamespaces={kube-system,production}",
    ],
};
const CLUSTER_WIDE: Mode = Mode {
    overlay: "overlays/cluster-wide",
    sets: &["controllerConfig.pdb.create=true", "controllerConfig.namespaces.enabledByDefault=true"],
};
const CERT_MANAGER: Mode =
    Mode { overlay: "overlays/cert-manager", sets: &["certificates.mode=certManager"] };
const MONITORING: Mode = Mode {
    overlay: "overlays/monitoring",
    sets: &["serviceMonitor.enabled=true", "prometheusRule.enabled=true", "grafanaDashboard.enabled=true"],
};
const MODES: [&Mode; 5] = [&BASIC, &SELECTED_NAMESPACES, &CLUSTER_WIDE, &CERT_MANAGER, &MONITORING];

/// Labels each tool adds on its own (Helm's release labels, kustomize's managed-by).
const TOOL_LABELS: [&str; 5] = [
    "app.kubernetes.io/part-of",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "helm.sh/chart",
];

fn remove_labels(metadata: &mut Value, keys: &[&str]) {
    let Some(map) = metadata.as_object_mut() else { return };
    if let Some(labels) = map.get_mut("labels").and_then(Value::as_object_mut) {
        labels.retain(|k, _| !keys.contains(&k.as_str()));
        if labels.is_empty() {
            map.remove("labels");
        }
    }
}

/// `eviction-autoscaler config --config` of a ConfigMap's `config.yaml`: what the process reads.
fn effective_config(text: &str) -> Value {
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), text).expect("write config");
    let out = std::process::Command::new(BIN)
        .args(["config", "--config"])
        .arg(file.path())
        .output()
        .expect("run eviction-autoscaler config");
    assert!(out.status.success(), "the binary accepts {text}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("config prints JSON")
}

/// The objects both front doors must agree on, by kind/namespace/name: the tools' own labels
/// (and the object-level name label, which kustomize's components do not add) left out, the
/// ConfigMap as the configuration the binary reads from it, the dashboard as the JSON Grafana
/// reads, the Namespace (the chart installs
/// into one, `--create-namespace`) and Helm hooks left out.
fn comparable(objects: &[Value]) -> BTreeMap<String, Value> {
    objects
        .iter()
        .filter(|o| o["kind"] != "Namespace" && !is_hook(o))
        .map(|o| {
            let mut o = o.clone();
            let mut object_labels = TOOL_LABELS.to_vec();
            object_labels.push("app.kubernetes.io/name");
            remove_labels(&mut o["metadata"], &object_labels);
            if let Some(template) = o.pointer_mut("/spec/template/metadata") {
                remove_labels(template, &TOOL_LABELS);
            }
            if let Some(text) = o["data"]["config.yaml"].as_str().map(str::to_owned) {
                o["data"]["config.yaml"] = effective_config(&text);
            }
            if let Some(text) = o["data"]["dashboard.json"].as_str().map(str::to_owned) {
                o["data"]["dashboard.json"] = serde_json::from_str(&text).expect("the dashboard is JSON");
            }
            let m = &o["metadata"];
            let key = format!(
                "{}/{}/{}",
                o["kind"].as_str().unwrap_or_default(),
                m["namespace"].as_str().unwrap_or_default(),
                m["name"].as_str().unwrap_or_default()
            );
            (key, o)
        })
        .collect()
}

fn kustomize(overlay: &str) -> Vec<Value> {
    let kubectl = support::cluster::bin_dir_of(&support::cluster::kube_version()).join("kubectl");
    let out = std::process::Command::new(&kubectl)
        .args(["kustomize", &repo_path(&format!("deploy/{overlay}"))])
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", kubectl.display()));
    assert!(out.status.success(), "kubectl kustomize {overlay}: {}", String::from_utf8_lossy(&out.stderr));
    support::helm::documents(&String::from_utf8_lossy(&out.stdout))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo_path(relative)).unwrap_or_else(|e| panic!("read {relative}: {e}"))
}

#[test]
fn the_chart_lints_clean_follows_the_crate_version_and_shares_the_generated_files() {
    let chart: Value = serde_saphyr::from_str(&read(&format!("{CHART}/Chart.yaml"))).expect("Chart.yaml");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!((chart["version"].as_str(), chart["appVersion"].as_str()), (Some(version), Some(version)));
    for (copy, source, how) in [
        ("files/crd.yaml", "deploy/base/crd.yaml", "make crd"),
        ("files/prometheusrule.yaml", "deploy/components/prometheusrule/prometheusrule.yaml", "cp"),
        ("files/dashboard.json", "deploy/components/grafana-dashboard/dashboard.json", "cp"),
    ] {
        assert_eq!(
            read(&format!("{CHART}/{copy}")),
            read(source),
            "{CHART}/{copy} differs from {source}: {how}"
        );
    }
    let home = tempfile::tempdir().expect("temp dir");
    for helm in Helm::ALL {
        let lint =
            helm.run(home.path(), &["lint", "--strict", &repo_path(CHART)]).expect("helm lint --strict");
        assert!(lint.contains("0 chart(s) failed") && !lint.contains("[WARNING]"), "{helm:?}: {lint}");
    }
}

#[test]
fn every_mode_renders_what_its_kustomization_renders_with_both_helm_versions() {
    let home = tempfile::tempdir().expect("temp dir");
    for mode in MODES {
        let expected = comparable(&kustomize(mode.overlay));
        for helm in Helm::ALL {
            let rendered = helm.template(home.path(), NS, mode.sets).expect("helm template");
            let actual = comparable(&rendered);
            assert_eq!(
                actual.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                "{helm:?} {}: the same objects",
                mode.overlay
            );
            for (key, object) in &expected {
                assert_eq!(&actual[key], object, "{helm:?} {}: {key} drifted from deploy/", mode.overlay);
            }
            // The one hook: cleanup as the product, with the product's image and security.
            let hooks: Vec<&Value> = rendered.iter().filter(|o| is_hook(o)).collect();
            assert_eq!(hooks.len(), 1, "{helm:?}: one hook");
            let job = hooks[0];
            assert_eq!(job["metadata"]["annotations"]["helm.sh/hook"], "pre-delete");
            let product =
                &expected[&format!("Deployment/{NS}/eviction-autoscaler")]["spec"]["template"]["spec"];
            let pod = &job["spec"]["template"]["spec"];
            assert_eq!(pod["serviceAccountName"], product["serviceAccountName"]);
            assert_eq!(pod["securityContext"], product["securityContext"], "the pod's security context");
            let (container, main) = (&pod["containers"][0], &product["containers"][0]);
            assert_eq!(
                container["args"],
                json!([
                    "cleanup",
                    format!("--stop-deployment={NS}/eviction-autoscaler"),
                    main["args"][1], // the product's --config, the ConfigMap mounted alike
                ])
            );
            // The product's settings, for the names of its Lease and Secret.
            let settings: Vec<&Value> =
                main["env"].as_array().expect("env").iter().filter(|e| e["name"] != "POD_NAME").collect();
            assert_eq!(container["env"].as_array().map(|e| e.iter().collect::<Vec<_>>()), Some(settings));
            assert_eq!(container["volumeMounts"][0], main["volumeMounts"][0], "the ConfigMap mounted");
            assert_eq!(pod["volumes"][0], product["volumes"][0]);
            assert_eq!(container["image"], main["image"]);
            assert_eq!(
                container["securityContext"], main["securityContext"],
                "the container's security context"
            );
        }
    }
}

/// Kinds without a namespace.
const CLUSTER_SCOPED: [&str; 5] = [
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

#[test]
fn a_release_in_another_namespace_names_that_namespace_everywhere() {
    let home = tempfile::tempdir().expect("temp dir");
    // Where the default install names its namespace: bindings' subjects, the webhook's Service,
    // the hook's argument, DNS names, cert-manager's CA injection, the webhook's own namespace
    // left out, the ServiceMonitor, the alerts' PromQL and runbooks.
    let spellings = |ns: &str| {
        [
            format!(r#""namespace":"{ns}""#),
            format!("={ns}/eviction-autoscaler"),
            format!(".{ns}.svc"),
            format!(r#""{ns}/eviction-autoscaler-serving""#),
            format!(r#""values":["{ns}"]"#),
            format!(r#""matchNames":["{ns}"]"#),
            format!(r#"namespace=\"{ns}\""#),
            format!("-n {ns} "),
            format!("-n {ns}."),
        ]
    };
    let count = |objects: &[Value], pattern: &str| {
        serde_json::to_string(objects).expect("JSON").matches(pattern).count()
    };
    for helm in Helm::ALL {
        let (mut default, mut ops) = (vec![], vec![]);
        for sets in [MONITORING.sets, CERT_MANAGER.sets] {
            default.extend(helm.template(home.path(), NS, sets).expect("helm template"));
            ops.extend(helm.template(home.path(), "ops", sets).expect("helm template -n ops"));
        }
        for object in &ops {
            let kind = object["kind"].as_str().unwrap_or_default();
            if !CLUSTER_SCOPED.contains(&kind) {
                assert_eq!(
                    object["metadata"]["namespace"], "ops",
                    "{helm:?}: {kind} {}",
                    object["metadata"]["name"]
                );
            }
        }
        for (spelled, moved) in spellings(NS).iter().zip(spellings("ops")) {
            let times = count(&default, spelled);
            assert!(times > 0, "{helm:?}: the default install spells its namespace {spelled}");
            assert_eq!(count(&ops, spelled), 0, "{helm:?}: {spelled} left in a release in ops");
            assert_eq!(count(&ops, &moved), times, "{helm:?}: {moved} wherever the default has {spelled}");
        }
    }
}

#[test]
fn bad_values_and_the_kube_system_namespace_are_refused_naming_the_problem() {
    let home = tempfile::tempdir().expect("temp dir");
    let chart = repo_path(CHART);
    for helm in Helm::ALL {
        for (set, named) in [
            ("controllerConfig.pdb.create=maybe", "/controllerConfig/pdb/create"),
            ("controllerConfig.surge.trigger=sometimes", "/controllerConfig/surge/trigger"),
            ("controllerConfig.surge.cooldown=soon", "/controllerConfig/surge/cooldown"),
            ("certificates.mode=vault", "/certificates/mode"),
            ("controllerConfig.pdb.craete=true", "craete"),
        ] {
            let refused = helm.template(home.path(), NS, &[set]).expect_err(set);
            assert!(refused.contains(named), "{helm:?} --set {set}: names {named}: {refused}");
        }
        let refused = helm
            .run(home.path(), &["template", RELEASE, &chart, "--namespace", "kube-system"])
            .expect_err("kube-system refused");
        assert!(refused.contains("cannot be installed in kube-system"), "{helm:?}: {refused}");
    }
}

/// A real control plane with nothing of the product on it.
async fn bare_cluster(service_network: bool) -> Env {
    let options = ClusterOptions { service_network, bare: true, ..ClusterOptions::default() };
    Env::start_with(BIN, ClusterShape { nodes: 1, pods_per_node: 110 }, options).await
}

const MODULE_CRDS: [&str; 4] = [
    "cert-manager.io_certificates.yaml",
    "cert-manager.io_issuers.yaml",
    "monitoring.coreos.com_servicemonitors.yaml",
    "monitoring.coreos.com_prometheusrules.yaml",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rendered_mode_passes_a_server_side_dry_run() {
    let env = bare_cluster(false).await;
    env.apply_module_crds(&MODULE_CRDS).await;
    env.create_release_namespace().await;
    let home = tempfile::tempdir().expect("temp dir");
    for mode in MODES {
        for helm in Helm::ALL {
            let yaml = helm.render(home.path(), NS, mode.sets).expect("helm template");
            let path = env.dir.path().join("rendered.yaml");
            std::fs::write(&path, &yaml).expect("write the rendering");
            let (ok, out) = env
                .kubectl_combined(&[
                    "apply",
                    "--dry-run=server",
                    "--server-side",
                    "-f",
                    &path.display().to_string(),
                ])
                .await;
            assert!(ok, "{helm:?} {}: {out}", mode.overlay);
        }
    }
}

/// `helm install` of `mode` on a cluster with the service network, then one replica run as
/// the release's pod would run, called by the apiserver through the release's Service.
async fn helm_mode(mode: &Mode) -> (Env, support::Product, support::helm::Release) {
    let env = bare_cluster(true).await;
    env.create_release_namespace().await;
    let release = env.helm_install(mode.sets).await;
    let replica = env.start_release_replica(&release, &[]).await;
    (env, replica, release)
}

/// Webhook reviews of new Deployments `replica` answered.
async fn deployment_reviews(replica: &support::Product) -> f64 {
    metric_sum(
        &replica.metrics().await,
        "eviction_autoscaler_webhook_requests_total",
        &["path=\"/validate-deployment\""],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_mode_installs_with_helm_and_refuses_a_bad_value_first() {
    let env = bare_cluster(true).await;
    env.create_release_namespace().await;
    let refused = env
        .helm_release("install", &["--set", "controllerConfig.pdb.create=maybe"])
        .err()
        .expect("a bad value is refused");
    assert!(refused.contains("/controllerConfig/pdb/create"), "names the key: {refused}");
    let listed = env.helm(&["list", "-A", "-q"]).expect("helm list");
    assert_eq!(listed.trim(), "", "nothing installed");

    let release = env.helm_install(BASIC.sets).await;
    assert!(release.output.contains("kubectl get evictionautoscalers -A"), "NOTES: {}", release.output);
    let replica = env.start_release_replica(&release, &[]).await;
    env.seed_mode_namespaces().await;
    // The seed's verification: the pods, no default PDB in basic mode, the kube-system budget.
    let pods = env
        .kubectl_ok(&[
            "get",
            "pods",
            "-n",
            NS,
            "-l",
            "app.kubernetes.io/name=eviction-autoscaler",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(pods.lines().count(), 2, "two replicas scheduled: {pods}");
    assert_eq!(env.failed_open_calls(), Vec::<Value>::new(), "no webhook call failed");
    assert_eq!(deployment_reviews(&replica).await, 4.0, "each new Deployment reviewed over verified TLS");
    assert_eq!(env.protected_namespaces(None).await, Vec::<String>::new(), "basic mode creates no PDB");
    env.apply(&pdb("kube-system", "guard", "web", json!({"minAvailable": 2}))).await;
    wait_for("the kube-system budget's EvictionAutoScaler", MINUTE, || {
        let eas =
            env.object("eviction-autoscaler.azure.com", "v1", "evictionautoscalers", "kube-system", "guard");
        async move { eas.map(|_| ()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selected_namespaces_then_an_upgrade_without_a_restart_then_an_uninstall_that_leaves_nothing() {
    let (env, replica, release) = helm_mode(&SELECTED_NAMESPACES).await;
    env.seed_mode_namespaces().await;
    assert_eq!(env.protected_namespaces(Some("production")).await, ["kube-system", "production"]);
    // The seed's verification commands, as NOTES prints them: the default PDBs (`ownedBy` in
    // the last column), then one EvictionAutoScaler each (NAMESPACE and NAME first).
    let expected = [("kube-system", "web-eviction-autoscaler"), ("production", "web-eviction-autoscaler")];
    let notes_command = |start: &str| {
        let line = release.output.lines().map(str::trim).find(|l| l.starts_with(start));
        line.unwrap_or_else(|| panic!("NOTES prints {start}: {}", release.output)).to_owned()
    };
    let (listed, pdbs) = env.sh(&notes_command("kubectl get pdb -A")).await;
    let mut owned: Vec<(&str, &str)> = pdbs
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|columns| columns.last() == Some(&"EvictionAutoScaler"))
        .map(|columns| (columns[1], columns[0]))
        .collect();
    owned.sort();
    assert!(listed && owned == expected, "the default PDBs listed:\n{pdbs}");
    let eas_command = notes_command("kubectl get evictionautoscalers -A");
    wait_for("an EvictionAutoScaler per default PDB, listed", MINUTE, || async {
        let (listed, text) = env.sh(&eas_command).await;
        let mut rows: Vec<(String, String)> = text
            .lines()
            .skip(1)
            .filter_map(|l| {
                let mut columns = l.split_whitespace().map(str::to_owned);
                Some((columns.next()?, columns.next()?))
            })
            .collect();
        rows.sort();
        let wanted = expected.map(|(ns, name)| (ns.to_owned(), name.to_owned()));
        (listed && rows == wanted).then_some(())
    })
    .await;

    // The seed's setting change, as an upgrade: the ConfigMap changes, the process re-reads it.
    let pid = replica.child.id();
    env.helm_release(
        "upgrade",
        &[
            "--reuse-values",
            "--set",
            "controllerConfig.namespaces.actionedNamespaces={kube-system,production,shop}",
        ],
    )
    .expect("helm upgrade");
    env.project_config();
    env.apply(&namespace("shop", &[])).await;
    env.apply(&deployment("shop", "cart", 1, &[])).await;
    assert_eq!(env.protected_namespaces(Some("shop")).await, ["kube-system", "production", "shop"]);
    assert_eq!(replica.child.id(), pid, "the same process");
    assert!(replica.log().contains("configuration changed"), "{}", replica.log());

    // A user PDB, and a surge held after a drain (cordon, then uncordon: the cooldown holds it).
    env.apply(&deployment("team", "api", 1, &[])).await;
    env.apply(&pdb("team", "api-guard", "api", json!({"maxUnavailable": 0}))).await;
    let user_pdb = env.object("policy", "v1", "poddisruptionbudgets", "team", "api-guard").expect("user PDB");
    env.wait_ready("production", "web", 2).await;
    let production = env.record_deployment("production", "web");
    env.kubectl_ok(&["cordon", "node-1"]).await;
    production.wait_seen("production/web surged", MINUTE, |s| s.replicas > 2).await;
    env.kubectl_ok(&["uncordon", "node-1"]).await;

    // helm uninstall: its pre-delete hook's command runs here (kwok runs no container; the
    // hook's Job is completed by kwok), then Helm deletes the release, the CRD among it. The
    // hook scales the product to 0 first: the replica stops then, as the kubelet would stop it.
    let hooks: Vec<&Value> = release.hooks.iter().filter(|h| h["kind"] == "Job").collect();
    assert_eq!(hooks.len(), 1, "the cleanup hook");
    let replica_stopped = async {
        wait_for("the hook scaled the product to 0", MINUTE, || {
            let product = env.deployment_now(NS, "eviction-autoscaler");
            async move { product.filter(|d| d["spec"]["replicas"] == 0).map(|_| ()) }
        })
        .await;
        drop(replica);
    };
    let (printed, ()) = tokio::join!(env.run_hook(hooks[0]), replica_stopped);
    let done = |start: &str| printed.lines().any(|l| l.starts_with(start) && l.ends_with(": done"));
    assert!(
        done(&format!("stop deployment {NS}/eviction-autoscaler")),
        "the product stopped first: {printed}"
    );
    assert!(done("revert surge: Deployment production/web"), "the held surge reverted: {printed}");
    for own in [format!("remove lease {NS}/eviction-autoscaler"), format!("remove secret {NS}/{TLS_SECRET}")]
    {
        assert!(printed.lines().any(|l| l.starts_with(&own) && l.ends_with(": done")), "{own}: {printed}");
    }
    env.helm(&["uninstall", RELEASE, "--namespace", NS, "--wait"]).expect("helm uninstall");

    wait_for("the CRD gone and every owned PDB with it", MINUTE, || {
        let crd = env.object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", CRD);
        let owned = env.pdbs("").iter().filter(|p| is_owned(p)).count();
        async move { (crd.is_none() && owned == 0).then_some(()) }
    })
    .await;
    let web = env.deployment_now("production", "web").expect("production/web");
    assert_eq!(web["spec"]["replicas"], 2, "the surge reverted");
    let annotations = web["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
    assert!(
        !annotations.keys().any(|k| k.starts_with("eviction") || k == "evictionSurgeReplicas"),
        "none of our annotations left: {annotations:?}"
    );
    let after =
        env.object("policy", "v1", "poddisruptionbudgets", "team", "api-guard").expect("user PDB kept");
    assert_eq!(user_part(&after), user_part(&user_pdb), "the user PDB is as it was");
    assert_eq!(env.product_pdb_writes("team", "api-guard"), [], "the product never wrote to the user PDB");
    for (kind, name) in [
        ("validatingwebhookconfiguration", "eviction-autoscaler"),
        ("clusterrole", "eviction-autoscaler"),
        ("clusterrole", "eviction-autoscaler-webhook-ca"),
    ] {
        let (found, out) = env.kubectl_combined(&["get", kind, name]).await;
        assert!(!found, "{kind}/{name} deleted: {out}");
    }
    // Nothing of the release in its namespace, nor what the product made there for itself (its
    // Lease and certificate Secret: the hook removed them): only what Kubernetes puts in every
    // namespace.
    let kinds = "all,configmaps,secrets,serviceaccounts,roles,rolebindings,poddisruptionbudgets,leases,jobs";
    wait_for("the release's objects gone", MINUTE, || async {
        let listed = env.kubectl_ok(&["get", kinds, "-n", NS, "-o", "name"]).await;
        let left: Vec<&str> = listed
            .lines()
            .filter(|l| !["configmap/kube-root-ca.crt", "serviceaccount/default"].contains(l))
            .collect();
        left.is_empty().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_wide_mode_protects_every_namespace_not_opted_out() {
    let (env, _replica, _release) = helm_mode(&CLUSTER_WIDE).await;
    env.seed_mode_namespaces().await;
    let protected = env.protected_namespaces(Some("team")).await;
    for ns in ["kube-system", "production", "team"] {
        assert!(protected.iter().any(|p| p == ns), "{ns} protected: {protected:?}");
    }
    for ns in ["opted-out", NS] {
        assert!(!protected.iter().any(|p| p == ns), "{ns} is left alone: {protected:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cert_manager_mode_serves_the_certificate_cert_manager_issues() {
    let env = bare_cluster(true).await;
    let cert_manager = env.install_cert_manager().await;
    env.create_release_namespace().await;
    let release = env.helm_install(CERT_MANAGER.sets).await;
    let files = env.serve_from_cert_manager(&cert_manager).await;
    let replica = env.start_release_replica(&release, &files.each_ref().map(String::as_str)).await;
    env.apply(&deployment("default", "web", 1, &[])).await;
    // The failed calls first: they say why a review is missing.
    assert_eq!(env.failed_open_calls(), Vec::<Value>::new(), "no webhook call failed");
    assert_eq!(deployment_reviews(&replica).await, 1.0, "reviewed over cert-manager's certificate");
}
