//! The install manifests (deploy/): every kustomization we ship or document renders with the
//! real `kubectl kustomize`, passes `kubectl apply --dry-run=server` against kube-sim, and is
//! wired the way the binary expects — its own parser reads each mode's ConfigMap, and the
//! ports, names, certificate paths and security settings line up. The default install is
//! applied for real with `kubectl apply -k deploy/`, re-applied unchanged and deleted. The code
//! paths its comments name exist.

#[path = "deploy_manifests/code_references.rs"]
mod code_references;
#[path = "support/kubectl.rs"]
mod kubectl;
#[path = "deploy_manifests/wiring.rs"]
mod wiring;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
/// The product's namespace, as every manifest spells it.
const NAMESPACE: &str = "eviction-autoscaler";

/// Where webhook certificates come from in a rendering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Certs {
    SelfManaged,
    CertManager,
}

/// What a kustomization must give: its ConfigMap's effective settings and its parts.
#[derive(Clone, Copy, Debug)]
struct Expected {
    pdb_create: bool,
    actioned: &'static [&'static str],
    enabled_by_default: bool,
    certs: Certs,
    monitoring: bool,
}

const BASIC: Expected = Expected {
    pdb_create: false,
    actioned: &["kube-system"],
    enabled_by_default: false,
    certs: Certs::SelfManaged,
    monitoring: false,
};

/// A kustomization under deploy/, or one written to a temporary directory the way
/// deploy/README.md tells users to combine the pieces (`{deploy}` = path to deploy/).
#[derive(Clone, Copy, Debug)]
enum Source {
    Shipped(&'static str),
    Combined { name: &'static str, kustomization: &'static str },
}

/// Every kustomization deploy/ ships, and the combinations its README documents.
const CASES: &[(Source, Expected)] = &[
    (Source::Shipped("."), BASIC),
    (Source::Shipped("overlays/basic"), BASIC),
    (
        Source::Shipped("overlays/selected-namespaces"),
        Expected { pdb_create: true, actioned: &["kube-system", "production"], ..BASIC },
    ),
    (
        Source::Shipped("overlays/cluster-wide"),
        Expected { pdb_create: true, enabled_by_default: true, ..BASIC },
    ),
    (Source::Shipped("overlays/cert-manager"), Expected { certs: Certs::CertManager, ..BASIC }),
    (Source::Shipped("overlays/monitoring"), Expected { monitoring: true, ..BASIC }),
    (
        Source::Combined {
            name: "an overlay plus cert-manager and monitoring",
            kustomization: "resources:\n  - {deploy}/overlays/selected-namespaces\ncomponents:\n  \
                            - {deploy}/components/cert-manager\n  - {deploy}/components/servicemonitor\n  \
                            - {deploy}/components/prometheusrule\n",
        },
        Expected {
            pdb_create: true,
            actioned: &["kube-system", "production"],
            certs: Certs::CertManager,
            monitoring: true,
            ..BASIC
        },
    ),
    (
        Source::Combined {
            name: "base plus cert-manager and an inline ConfigMap patch",
            kustomization: "resources:\n  - {deploy}/base\ncomponents:\n  - {deploy}/components/cert-manager\n\
                            patches:\n  - patch: |\n      apiVersion: v1\n      kind: ConfigMap\n      \
                            metadata:\n        name: eviction-autoscaler-config\n        \
                            namespace: eviction-autoscaler\n      data:\n        config.yaml: |\n          \
                            controllerConfig:\n            pdb:\n              create: true\n            \
                            namespaces:\n              actionedNamespaces: [team-a, team-b]\n",
        },
        Expected { pdb_create: true, actioned: &["team-a", "team-b"], certs: Certs::CertManager, ..BASIC },
    ),
];

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// kubectl with a HOME of its own (removed with it) and, optionally, a cluster.
struct Kubectl {
    env: kubectl::Kubectl,
    _home: tempfile::TempDir,
}

impl Kubectl {
    fn new(kubeconfig: Option<&Path>) -> Self {
        let home = tempfile::tempdir().expect("temp HOME");
        let kubeconfig = kubeconfig.map_or_else(|| home.path().join("none"), Path::to_path_buf);
        Self { env: kubectl::Kubectl::new(&kubeconfig, home.path()), _home: home }
    }

    async fn run(&self, args: &[&str]) -> Output {
        let mut cmd = tokio::process::Command::from(self.env.command());
        cmd.args(args).kill_on_drop(true);
        cmd.output().await.expect("kubectl runs")
    }

    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// One rendering: its name, the YAML `kubectl kustomize` printed, and its objects.
struct Rendered {
    name: String,
    yaml: String,
    objects: Vec<Value>,
}

/// Renders `source` with the real `kubectl kustomize`.
async fn render(kubectl: &Kubectl, source: Source) -> Rendered {
    let (name, dir, _scratch) = match source {
        Source::Shipped(dir) => (format!("deploy/{dir}"), deploy_dir().join(dir), None),
        Source::Combined { name, kustomization } => {
            let scratch = tempfile::tempdir().expect("temp dir");
            // kustomize refuses absolute paths; climb from the scratch dir to the root.
            let up = "../".repeat(scratch.path().components().count().saturating_sub(1));
            let deploy = format!("{up}{}", deploy_dir().display().to_string().trim_start_matches('/'));
            let text = format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n{}",
                kustomization.replace("{deploy}", &deploy)
            );
            std::fs::write(scratch.path().join("kustomization.yaml"), text).expect("write kustomization");
            (name.to_owned(), scratch.path().to_path_buf(), Some(scratch))
        }
    };
    let out = kubectl.run(&["kustomize", &dir.display().to_string()]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name}: kubectl kustomize failed: {stderr}");
    assert!(stderr.trim().is_empty(), "{name}: kustomize warns (deprecated field?): {stderr}");
    let yaml = String::from_utf8_lossy(&out.stdout).into_owned();
    let objects: Vec<Value> = serde_saphyr::from_multiple(&yaml)
        .unwrap_or_else(|e| panic!("{name}: kubectl kustomize printed unreadable YAML: {e}"));
    let objects: Vec<Value> = objects.into_iter().filter(|o| !o.is_null()).collect();
    assert!(!objects.is_empty(), "{name}: renders nothing");
    Rendered { name, yaml, objects }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kustomization_is_wired_the_way_the_binary_expects() {
    let kubectl = Kubectl::new(None);
    for &(source, expected) in CASES {
        let rendered = render(&kubectl, source).await;
        wiring::check_objects(&rendered.name, &rendered.objects, expected);
        wiring::check_with_binary(&rendered.name, &rendered.objects, expected);
    }
}

/// CRDs of the kinds the optional components use, as cert-manager and the prometheus-operator
/// would install them (no schema: kube-sim serves custom resources without validation).
const STUB_CRDS: &str = concat!(
    include_str!("support/cert-manager-crds.yaml"),
    r#"---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicemonitors.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: prometheusrules.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  names: {kind: PrometheusRule, listKind: PrometheusRuleList, plural: prometheusrules, singular: prometheusrule}
  scope: Namespaced
  versions:
    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#
);

async fn start_sim(dir: &Path) -> kube_sim::Server {
    let options = kube_sim::ServerOptions::new(dir.join("kubeconfig"));
    kube_sim::Server::start(options).await.expect("kube-sim starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_passes_server_side_dry_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = start_sim(dir.path()).await;
    // A dry-run create persists nothing, so the objects inside the namespace would find no
    // namespace (404, as on a real apiserver): the namespace and the third-party CRDs exist
    // first, as they would on a cluster with cert-manager and the prometheus-operator.
    let namespace = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n");
    let seed = kube_sim::seed::parse_manifests(&format!("{STUB_CRDS}\n---\n{namespace}")).expect("stub CRDs");
    kube_sim::seed::apply(sim.cluster(), seed).await.expect("stub CRDs apply");
    let kubectl = Kubectl::new(Some(sim.kubeconfig_path()));
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
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = start_sim(dir.path()).await;
    let kubectl = Kubectl::new(Some(sim.kubeconfig_path()));
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

    // As deploy/README.md says to uninstall: --ignore-not-found keeps it idempotent (and
    // kube-sim, unlike a real cluster, empties a deleted namespace at once).
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
