//! The install manifests (deploy/) on a real control plane: every kustomization we ship or
//! document passes `kubectl apply --dry-run=server` with cert-manager's and the
//! prometheus-operator's own CRDs installed; the default install is applied for real with
//! `kubectl apply -k deploy/`, re-applied unchanged and deleted.

use e2e_support as support;

#[path = "deploy_manifests/renderings.rs"]
mod renderings;

use renderings::{CASES, Kubectl, NAMESPACE, deploy_dir, render};
use serde_json::Value;
use support::{ClusterOptions, ClusterShape, Env};

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");

/// The kinds the optional components use, as their projects publish them.
const THIRD_PARTY_CRDS: [&str; 4] = [
    "cert-manager.io_certificates.yaml",
    "cert-manager.io_issuers.yaml",
    "monitoring.coreos.com_servicemonitors.yaml",
    "monitoring.coreos.com_prometheusrules.yaml",
];

/// A cluster with nothing of the product installed.
async fn bare_cluster() -> Env {
    let options = ClusterOptions { bare: true, ..ClusterOptions::default() };
    Env::start_with(BIN, ClusterShape { nodes: 1, pods_per_node: 110 }, options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_passes_server_side_dry_run() {
    let env = bare_cluster().await;
    let dir = tempfile::tempdir().expect("temp dir");
    // A dry-run create persists nothing, so the objects inside the namespace would find no
    // namespace (404): the namespace and the third-party CRDs exist first, as they would on a
    // cluster with cert-manager and the prometheus-operator (their own CRDs, from their modules).
    env.apply(&format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n")).await;
    env.apply_module_crds(&THIRD_PARTY_CRDS).await;
    let kubectl = Kubectl::new(Some(&env.kubeconfig()));
    for &(source, _) in CASES {
        let rendered = render(&kubectl, source).await;
        let file = dir.path().join("rendered.yaml");
        std::fs::write(&file, &rendered.yaml).expect("write rendering");
        let out = kubectl.run(&["apply", "--dry-run=server", "-f", &file.display().to_string()]).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: rejected:\n{stdout}\n{stderr}", rendered.name);
        let accepted = stdout.lines().filter(|l| l.ends_with("(server dry run)")).count();
        assert_eq!(
            accepted,
            rendered.objects.len(),
            "{}: every object is accepted by the server:\n{stdout}\n{stderr}",
            rendered.name
        );
    }
    // Nothing was written by the dry runs.
    let kubectl_get = kubectl.run(&["get", "deployments", "-n", NAMESPACE, "-o", "name"]).await;
    assert!(String::from_utf8_lossy(&kubectl_get.stdout).trim().is_empty(), "dry run wrote a Deployment");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_install_applies_reapplies_unchanged_and_deletes() {
    let env = bare_cluster().await;
    let kubectl = Kubectl::new(Some(&env.kubeconfig()));
    let deploy = deploy_dir().display().to_string();

    let first = kubectl.ok(&["apply", "-k", &deploy]).await;
    assert!(first.lines().all(|l| l.ends_with(" created")), "a fresh install creates everything:\n{first}");
    for (kind, namespace, name) in [
        ("namespace", None, NAMESPACE),
        ("customresourcedefinition", None, "evictionautoscalers.eviction-autoscaler.azure.com"),
        ("validatingwebhookconfiguration", None, "eviction-autoscaler"),
        ("clusterrolebinding", None, "eviction-autoscaler"),
        ("deployment", Some(NAMESPACE), "eviction-autoscaler"),
        ("service", Some(NAMESPACE), "eviction-autoscaler"),
        ("configmap", Some(NAMESPACE), "eviction-autoscaler-config"),
        ("poddisruptionbudget", Some(NAMESPACE), "eviction-autoscaler"),
        ("rolebinding", Some(NAMESPACE), "eviction-autoscaler-certs"),
    ] {
        let mut args = vec!["get", kind, name, "-o", "name"];
        if let Some(namespace) = namespace {
            args.extend(["-n", namespace]);
        }
        kubectl.ok(&args).await;
    }

    // kubectl always sends a patch for a PDB (its selector's patchStrategy is "replace", so the
    // computed patch is never empty) and prints "configured"; the server changes nothing.
    let versions_before = resource_versions(&kubectl, &deploy).await;
    let second = kubectl.ok(&["apply", "-k", &deploy]).await;
    for line in second.lines() {
        assert!(
            line.ends_with(" unchanged") || line.starts_with("poddisruptionbudget.policy/"),
            "re-applying the same install changes nothing:\n{second}"
        );
    }
    assert_eq!(resource_versions(&kubectl, &deploy).await, versions_before, "no object was rewritten");

    // As deploy/README.md says to uninstall: --ignore-not-found keeps it idempotent; kubectl
    // waits until the namespace controller has emptied and removed the namespace.
    kubectl.ok(&["delete", "-k", &deploy, "--ignore-not-found"]).await;
    let gone = kubectl.run(&["get", "crd", "evictionautoscalers.eviction-autoscaler.azure.com"]).await;
    assert!(!gone.status.success(), "kubectl delete -k removes the CRD");
    let gone = kubectl.run(&["get", "namespace", NAMESPACE]).await;
    assert!(!gone.status.success(), "kubectl delete -k removes the namespace");
}

/// `kind/namespace/name` → resourceVersion of every object of the kustomization in the cluster.
async fn resource_versions(kubectl: &Kubectl, kustomization: &str) -> Vec<(String, String)> {
    let out = kubectl.ok(&["get", "-k", kustomization, "-o", "json"]).await;
    let list: Value = serde_json::from_str(&out).expect("kubectl get -o json prints JSON");
    let mut versions: Vec<(String, String)> = list["items"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|o| {
            let meta = &o["metadata"];
            let key = format!("{}/{}/{}", o["kind"], meta["namespace"], meta["name"]);
            (key, meta["resourceVersion"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    versions.sort();
    assert!(versions.len() > 10, "the install's objects are listed: {versions:?}");
    versions
}
