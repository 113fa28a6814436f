//! What the manifest tests check: every kustomization deploy/ ships and every combination its
//! README documents, with what each must give, rendered with the real `kubectl kustomize`.
#![allow(dead_code)] // included by two test binaries, each using a part

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");
/// The product's namespace, as every manifest spells it.
pub const NAMESPACE: &str = "eviction-autoscaler";

/// Where webhook certificates come from in a rendering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Certs {
    SelfManaged,
    CertManager,
}

/// What a kustomization must give: its ConfigMap's effective settings and its parts.
#[derive(Clone, Copy, Debug)]
pub struct Expected {
    pub pdb_create: bool,
    pub actioned: &'static [&'static str],
    pub enabled_by_default: bool,
    pub certs: Certs,
    pub monitoring: bool,
}

pub const BASIC: Expected = Expected {
    pdb_create: false,
    actioned: &["kube-system"],
    enabled_by_default: false,
    certs: Certs::SelfManaged,
    monitoring: false,
};

/// A kustomization under deploy/, or one written to a temporary directory the way
/// deploy/README.md tells users to combine the pieces (`{deploy}` = path to deploy/).
#[derive(Clone, Copy, Debug)]
pub enum Source {
    Shipped(&'static str),
    Combined { name: &'static str, kustomization: &'static str },
}

/// Every kustomization deploy/ ships, and the combinations its README documents.
pub const CASES: &[(Source, Expected)] = &[
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
                            - {deploy}/components/prometheusrule\n  - {deploy}/components/grafana-dashboard\n",
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

pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// kubectl with a HOME of its own (removed with it) and, optionally, a cluster: the kubectl
/// `make cluster-build` built (the version the end-to-end tests run), else the one on `PATH`,
/// so the manifests are checked without Go where a kubectl is installed.
pub struct Kubectl {
    env: e2e_support::Kubectl,
    _home: tempfile::TempDir,
}

impl Kubectl {
    pub fn new(kubeconfig: Option<&Path>) -> Self {
        let home = tempfile::tempdir().expect("temp HOME");
        let kubeconfig = kubeconfig.map_or_else(|| home.path().join("none"), Path::to_path_buf);
        let mut env = e2e_support::Kubectl::new(&kubeconfig, home.path());
        let built = e2e_support::cluster::bin_dir_of(&e2e_support::cluster::kube_version());
        if built.join("kubectl").is_file() {
            env = env.first_on_path(&built);
        }
        Self { env, _home: home }
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        let mut cmd = tokio::process::Command::from(self.env.command());
        cmd.args(args).kill_on_drop(true);
        cmd.output()
            .await
            .expect("kubectl runs: build it (`make cluster-build`) or put kubectl 1.33+ on PATH")
    }

    pub async fn ok(&self, args: &[&str]) -> String {
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
pub struct Rendered {
    pub name: String,
    pub yaml: String,
    pub objects: Vec<Value>,
}

/// Renders `source` with the real `kubectl kustomize`.
pub async fn render(kubectl: &Kubectl, source: Source) -> Rendered {
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
