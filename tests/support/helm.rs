//! Helm, built from its Go modules beside the control plane (`tests/cluster/build.sh`): Helm 4
//! installs, Helm 3 lints and templates too. Each run gets a private HOME and Helm directories
//! (no repository cache or plugin of the machine's user is read). [`Env::helm_install`] installs
//! the chart of `deploy/helm/`, then reads back what the release holds ([`Release`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::install::PodTemplate;
use super::{Env, PRODUCT_ACCOUNT, Product, namespace, repo_path};

/// The chart, from the repository root.
pub const CHART: &str = "deploy/helm/eviction-autoscaler";
/// The release name the tests install.
pub const RELEASE: &str = "eviction-autoscaler";

/// Helm 4 (`helm`) or Helm 3 (`helm3`), from `target/cluster/<KUBE_VERSION>/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Helm {
    V4,
    V3,
}

impl Helm {
    pub const ALL: [Helm; 2] = [Helm::V4, Helm::V3];

    fn binary(self) -> PathBuf {
        let name = match self {
            Helm::V4 => "helm",
            Helm::V3 => "helm3",
        };
        super::cluster::bin_dir_of(&super::cluster::kube_version()).join(name)
    }

    /// Runs this Helm with its state under `home`: stdout, or stdout and stderr as the error.
    pub fn run(self, home: &Path, args: &[&str]) -> Result<String, String> {
        let bin = self.binary();
        let out = Command::new(&bin)
            .args(args)
            .env("HOME", home)
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run {} (make cluster-build builds it): {e}", bin.display()));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            Ok(stdout)
        } else {
            Err(format!("{self:?} {}: {stdout}{}", args.join(" "), String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// `helm template` of the chart in `namespace` with `--set` values: the YAML it prints.
    pub fn render(self, home: &Path, namespace: &str, sets: &[&str]) -> Result<String, String> {
        let chart = repo_path(CHART);
        let mut args = vec!["template", RELEASE, &chart, "--namespace", namespace];
        for set in sets {
            args.extend(["--set", set]);
        }
        self.run(home, &args)
    }

    /// [`Helm::render`]'s objects.
    pub fn template(self, home: &Path, namespace: &str, sets: &[&str]) -> Result<Vec<Value>, String> {
        self.render(home, namespace, sets).map(|yaml| documents(&yaml))
    }
}

/// The objects of a YAML stream (empty documents left out).
pub fn documents(yaml: &str) -> Vec<Value> {
    let objects: Vec<Value> = serde_saphyr::from_multiple(yaml).expect("Helm prints YAML");
    objects.into_iter().filter(|o| !o.is_null()).collect()
}

/// Whether `object` is a Helm hook (run around an install, upgrade or uninstall, not kept).
pub fn is_hook(object: &Value) -> bool {
    object["metadata"]["annotations"]["helm.sh/hook"].is_string()
}

/// What an installed release holds, as Helm recorded it.
pub struct Release {
    /// Its objects (`helm get manifest`).
    pub objects: Vec<Value>,
    /// Its hooks (`helm get hooks`).
    pub hooks: Vec<Value>,
    /// What `helm install`/`upgrade` printed (NOTES.txt among it).
    pub output: String,
}

impl Env {
    /// The release namespace as the chart README creates it: out of the product's scope, Pod
    /// Security `restricted`.
    pub async fn create_release_namespace(&self) {
        self.apply(&namespace(PRODUCT_ACCOUNT.0, &[("eviction-autoscaler.azure.com/enable", "false")])).await;
        self.kubectl_ok(&[
            "label",
            "namespace",
            PRODUCT_ACCOUNT.0,
            "pod-security.kubernetes.io/enforce=restricted",
        ])
        .await;
    }

    /// `helm install` with `--set` each of `sets`; then the product's credentials and its
    /// projected ConfigMap, as a pod of the release gets them.
    pub async fn helm_install(&self, sets: &[&str]) -> Release {
        let mut args = Vec::new();
        for set in sets {
            args.extend(["--set", *set]);
        }
        let release = self.helm_release("install", &args).expect("helm install");
        self.write_product_kubeconfig();
        self.project_config();
        release
    }

    /// One replica run as the release's pod would run it, plus `extra` flags, the webhook
    /// Service routed to it.
    pub async fn start_release_replica(&self, release: &Release, extra: &[&str]) -> Product {
        let replica =
            self.start_replica(&self.pod_template(&release.objects), "eviction-autoscaler-a", extra).await;
        self.route_webhook_to(replica.webhook_addr).await;
        replica
    }

    /// Helm 4 against this cluster as admin.
    pub fn helm(&self, args: &[&str]) -> Result<String, String> {
        let kubeconfig = self.kubeconfig();
        let mut all = vec!["--kubeconfig", kubeconfig.to_str().expect("a UTF-8 path")];
        all.extend(args);
        Helm::V4.run(&self.dir.path().join("helm-home"), &all)
    }

    /// `helm install` (or `upgrade` with `verb`) of the chart in the product's namespace with
    /// `args` (`--set ...`); the release as recorded.
    pub fn helm_release(&self, verb: &str, args: &[&str]) -> Result<Release, String> {
        let chart = repo_path(CHART);
        let mut all = vec![verb, RELEASE, &chart, "--namespace", PRODUCT_ACCOUNT.0];
        all.extend(args);
        let output = self.helm(&all)?;
        let get = |what: &str| self.helm(&["get", what, RELEASE, "--namespace", PRODUCT_ACCOUNT.0]);
        Ok(Release { objects: documents(&get("manifest")?), hooks: documents(&get("hooks")?), output })
    }

    /// Runs the container of a hook Job locally, as kwok runs no container: its args and env
    /// with the product binary (the ConfigMap projected as for the product), as the
    /// ServiceAccount the Job names. Returns what it printed.
    pub async fn run_hook(&self, hook: &Value) -> String {
        let pod = &hook["spec"]["template"]["spec"];
        assert_eq!(
            pod["serviceAccountName"], PRODUCT_ACCOUNT.1,
            "the hook runs as the product's ServiceAccount"
        );
        let containers = pod["containers"].as_array().expect("the hook's containers");
        assert_eq!(containers.len(), 1, "one container");
        let PodTemplate { args, env } = self.container_template(&containers[0]);
        let out = tokio::process::Command::new(&self.bin)
            .args(&args)
            .envs(env)
            .env("KUBECONFIG", self.product_kubeconfig())
            .stdin(Stdio::null())
            .output()
            .await
            .expect("run the hook's command");
        let printed =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "the hook `{}` failed: {printed}", args.join(" "));
        printed
    }
}
