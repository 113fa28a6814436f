//! The install manifests (deploy/) on a real control plane: every kustomization we ship or
//! document passes `kubectl apply --dry-run=server` with cert-manager's and the
//! prometheus-operator's own CRDs installed; the default install is applied for real with
//! `kubectl apply -k deploy/`, re-applied unchanged and deleted.

use e2e_support as support;

#[path = "deploy_manifests/renderings.rs"]
mod renderings;

use renderings::{CASES, Kubectl, NAMESPACE, deploy_dir, render};
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
    // computed patch is never empty) and prints "configured"; the server changes nothing. The
    // cluster's controllers write statuses meanwhile, so what kubectl sent is read from the
    // audit log rather than from resourceVersions.
    let pdb_generation = || async {
        let args = ["get", "pdb", NAMESPACE, "-n", NAMESPACE, "-o", "jsonpath={.metadata.generation}"];
        kubectl.ok(&args).await
    };
    let generation_before = pdb_generation().await;
    let seen_before = env.requests().last().map_or(0, |r| r.seq);
    let second = kubectl.ok(&["apply", "-k", &deploy]).await;
    for line in second.lines() {
        assert!(
            line.ends_with(" unchanged") || line.starts_with("poddisruptionbudget.policy/"),
            "re-applying the same install changes nothing:\n{second}"
        );
    }
    let kubectl_writes: Vec<String> = env
        .requests()
        .into_iter()
        .filter(|r| r.seq > seen_before && r.user_agent.starts_with("kubectl") && r.is_write())
        .map(|r| format!("{} {} {}", r.verb, r.resource, r.name))
        .collect();
    assert_eq!(
        kubectl_writes,
        [format!("patch poddisruptionbudgets {NAMESPACE}")],
        "the re-apply writes nothing but the PDB's no-op patch"
    );
    assert_eq!(pdb_generation().await, generation_before, "the PDB's spec is unchanged");

    // As deploy/README.md says to uninstall: --ignore-not-found keeps it idempotent; kubectl
    // waits until the namespace controller has emptied and removed the namespace.
    kubectl.ok(&["delete", "-k", &deploy, "--ignore-not-found"]).await;
    let gone = kubectl.run(&["get", "crd", "evictionautoscalers.eviction-autoscaler.azure.com"]).await;
    assert!(!gone.status.success(), "kubectl delete -k removes the CRD");
    let gone = kubectl.run(&["get", "namespace", NAMESPACE]).await;
    assert!(!gone.status.success(), "kubectl delete -k removes the namespace");
}
