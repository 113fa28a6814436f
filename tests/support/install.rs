//! The shipped install (deploy/): `kubectl apply -k` a kustomization, then run the binary the
//! way the rendered Deployment's pod would (its args, its env, its ConfigMap as the `--config`
//! file) as the shipped ServiceAccount, on local ports. The kubelet's projection of the
//! ConfigMap into the pod is done by [`Env::project_config`] (a Secret's by
//! [`Env::project_secret`]).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::containerd::Containerd;
use super::pdbs::is_owned;
use super::{Env, LOCAL_PORTS, PRODUCT_ACCOUNT, Product, deployment, namespace, repo_path, wait_for};

/// The product's Deployment, ConfigMap and the webhook Service, as deploy/ names them.
pub const DEPLOYMENT: &str = "eviction-autoscaler";
pub const CONFIG_MAP: &str = "eviction-autoscaler-config";
pub const TLS_SECRET: &str = "eviction-autoscaler-tls";
pub const WEBHOOK_CONFIGURATION: &str = "eviction-autoscaler";
/// The serving Certificate of the cert-manager component.
pub const SERVING_CERTIFICATE: &str = "eviction-autoscaler-serving";

/// What an uninstall must leave unchanged in a user's PDB: everything but its status.
pub fn user_part(pdb: &Value) -> Value {
    let m = &pdb["metadata"];
    json!([m["uid"], m["labels"], m["annotations"], m["ownerReferences"], m["finalizers"], pdb["spec"]])
}

/// The product's container in the rendered `objects`.
fn product_container(objects: &[Value]) -> &Value {
    let deployment = objects
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == DEPLOYMENT)
        .expect("the rendering holds the product's Deployment");
    &deployment["spec"]["template"]["spec"]["containers"][0]
}

/// A container of the installed objects (the product's, or a hook's), ready to be run locally.
#[derive(Clone, Debug)]
pub struct PodTemplate {
    /// Arguments (after `run`, for the product's), with `--config` pointing at the projected
    /// file.
    pub args: Vec<String>,
    /// Environment, `valueFrom` resolved as the kubelet would for a pod named `POD`.
    pub env: Vec<(String, String)>,
}

impl Env {
    /// `kubectl apply -k deploy/<kustomization>`; returns what it rendered (`kubectl kustomize`).
    pub async fn install(&self, kustomization: &str) -> Vec<Value> {
        let dir = repo_path(&format!("deploy/{kustomization}"));
        self.kubectl_ok(&["apply", "-k", &dir]).await;
        let yaml = self.kubectl_ok(&["kustomize", &dir]).await;
        let objects: Vec<Value> = serde_saphyr::from_multiple(&yaml).expect("kubectl kustomize prints YAML");
        objects.into_iter().filter(|o| !o.is_null()).collect()
    }

    /// Where the ConfigMap is projected for locally run replicas.
    pub fn projected_config(&self) -> PathBuf {
        self.dir.path().join("projected").join("config.yaml")
    }

    /// Copies the ConfigMap's `config.yaml` from the cluster to [`Env::projected_config`], as
    /// the kubelet updates a ConfigMap volume.
    pub fn project_config(&self) {
        let config_map = self
            .object("", "v1", "configmaps", PRODUCT_ACCOUNT.0, CONFIG_MAP)
            .expect("the installed ConfigMap");
        let text = config_map["data"]["config.yaml"].as_str().expect("the ConfigMap holds config.yaml");
        let path = self.projected_config();
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("projected dir");
        // Write then rename: a reader never sees half a file (the kubelet swaps a symlink).
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).expect("write the projected config");
        std::fs::rename(&tmp, &path).expect("swap the projected config");
    }

    /// The product container of the Deployment in `objects`.
    pub fn pod_template(&self, objects: &[Value]) -> PodTemplate {
        let mut template = self.container_template(product_container(objects));
        assert_eq!(template.args.first().map(String::as_str), Some("run"), "the container runs `run`");
        template.args.remove(0);
        template
    }

    /// `container`'s args and env as the kubelet would give them here: `--config=` pointing
    /// at the projected ConfigMap, `valueFrom` resolved for a pod named `POD`.
    pub fn container_template(&self, container: &Value) -> PodTemplate {
        let mut args: Vec<String> = container["args"]
            .as_array()
            .expect("the container has args")
            .iter()
            .map(|a| a.as_str().expect("string args").to_owned())
            .collect();
        let projected = self.projected_config();
        for arg in &mut args {
            if arg.starts_with("--config=") {
                *arg = format!("--config={}", projected.display());
            }
        }
        let env = container["env"]
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .map(|e| {
                        let name = e["name"].as_str().expect("env name").to_owned();
                        let value = match e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                            Some("metadata.namespace") => PRODUCT_ACCOUNT.0.to_owned(),
                            Some("metadata.name") => "POD".to_owned(),
                            Some(other) => panic!("env {name} from an unexpected field {other}"),
                            None => e["value"].as_str().unwrap_or_default().to_owned(),
                        };
                        (name, value)
                    })
                    .collect()
            })
            .unwrap_or_default();
        PodTemplate { args, env }
    }

    /// Runs one replica as `template` says, named `pod_name`, on system-picked local ports
    /// with the shipped ServiceAccount's credentials plus `extra` flags; waits for its `/readyz`.
    pub async fn start_replica(&self, template: &PodTemplate, pod_name: &str, extra: &[&str]) -> Product {
        let log = self.dir.path().join(format!("replica-{pod_name}.log"));
        let mut cmd = std::process::Command::new(&self.bin);
        cmd.arg("run")
            .args(&template.args)
            .args(LOCAL_PORTS)
            .args(extra)
            .envs(
                template
                    .env
                    .iter()
                    .map(|(k, v)| (k.as_str(), if v == "POD" { pod_name } else { v.as_str() })),
            )
            .env("KUBECONFIG", self.product_kubeconfig())
            .env("RUST_LOG", "info,eviction_autoscaler_controller=debug")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"));
        Product::start(cmd, log).await
    }

    /// Runs one replica of the Deployment in `objects` from `image` in `containerd`, as a kubelet
    /// would run its pod: `entrypoint` (the image's) with the container's args as rendered, its
    /// env, the ConfigMap at its mountPath, the ServiceAccount's volume and
    /// `KUBERNETES_SERVICE_*` (in-cluster configuration, no kubeconfig), a read-only root
    /// filesystem, and host networking on local ports. Returns the replica and its container id.
    pub async fn start_replica_in_container(
        &self,
        containerd: &Containerd,
        image: &str,
        entrypoint: &str,
        objects: &[Value],
        pod_name: &str,
    ) -> (Product, String) {
        let container = product_container(objects);
        let args: Vec<&str> =
            container["args"].as_array().expect("args").iter().filter_map(Value::as_str).collect();
        let config_mount = container["volumeMounts"]
            .as_array()
            .and_then(|mounts| mounts.iter().find(|m| m["name"] == "config"))
            .and_then(|m| m["mountPath"].as_str())
            .expect("the ConfigMap's mountPath");
        let account_dir = containerd.dir().join(format!("{pod_name}-serviceaccount"));
        let (host, port) =
            self.cluster.write_service_account_volume(PRODUCT_ACCOUNT.0, PRODUCT_ACCOUNT.1, &account_dir);
        let bind = |src: &std::path::Path, dst: &str| {
            format!("type=bind,src={},dst={dst},options=rbind:ro", src.display())
        };
        let projected = self.projected_config();
        let mut options = vec![
            "--net-host".to_owned(),
            "--read-only".to_owned(),
            "--mount".to_owned(),
            bind(projected.parent().expect("the projected dir"), config_mount),
            "--mount".to_owned(),
            bind(&account_dir, "/var/run/secrets/kubernetes.io/serviceaccount"),
        ];
        let env = self.container_template(container).env.into_iter().map(|(k, v)| {
            let v = if v == "POD" { pod_name.to_owned() } else { v };
            format!("{k}={v}")
        });
        let env = env.chain([
            format!("KUBERNETES_SERVICE_HOST={host}"),
            format!("KUBERNETES_SERVICE_PORT={port}"),
            "RUST_LOG=info,eviction_autoscaler_controller=debug".to_owned(),
        ]);
        for pair in env {
            options.extend(["--env".to_owned(), pair]);
        }
        let id = containerd.container_id();
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let command: Vec<&str> = [entrypoint].into_iter().chain(args).chain(LOCAL_PORTS).collect();
        let log = self.dir.path().join(format!("replica-{pod_name}.log"));
        let mut cmd = containerd.run_command(image, &id, &options, &command);
        // The product logs to stderr, which ctr passes through.
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"));
        (Product::start(cmd, log).await, id)
    }

    /// The TLS Secret's `ca.crt` (base64, as stored).
    fn secret_ca(&self) -> Option<String> {
        let secret = self.object("", "v1", "secrets", PRODUCT_ACCOUNT.0, TLS_SECRET)?;
        secret["data"]["ca.crt"].as_str().map(str::to_owned)
    }

    /// Every webhook's `caBundle` (base64; empty when blank).
    fn bundles(&self) -> Vec<String> {
        let Some(configuration) = self.object(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "",
            WEBHOOK_CONFIGURATION,
        ) else {
            return Vec::new();
        };
        configuration["webhooks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|h| h["clientConfig"]["caBundle"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Waits (a minute) until every webhook's `caBundle` is the TLS Secret's CA.
    pub async fn wait_bundle_is_the_ca(&self, what: &str) {
        wait_for(what, Duration::from_secs(60), || {
            let (ca, bundles) = (self.secret_ca(), self.bundles());
            async move { ca.filter(|ca| !bundles.is_empty() && bundles.iter().all(|b| b == ca)).map(|_| ()) }
        })
        .await;
    }

    /// The namespaces the install-mode tests look at: `production`, `team` and `opted-out`
    /// (annotated off), with a Deployment `web` (2 replicas) in each and in kube-system.
    pub async fn seed_mode_namespaces(&self) {
        self.apply(&namespace("production", &[])).await;
        self.apply(&namespace("team", &[])).await;
        self.apply(&namespace("opted-out", &[("eviction-autoscaler.azure.com/enable", "false")])).await;
        for ns in ["kube-system", "production", "team", "opted-out"] {
            self.apply(&deployment(ns, "web", 2, &[])).await;
        }
    }

    /// Namespaces holding a PDB the product created, once the Deployment in `marker` has one
    /// (the same evaluation pass covers the others).
    pub async fn protected_namespaces(&self, marker: Option<&str>) -> Vec<String> {
        if let Some(marker) = marker {
            wait_for("the marker namespace's default PDB", Duration::from_secs(60), || {
                let has = self.pdbs(marker).iter().any(is_owned);
                async move { has.then_some(()) }
            })
            .await;
        }
        let mut namespaces: Vec<String> = self
            .pdbs("")
            .iter()
            .filter(|p| is_owned(p))
            .map(|p| p["metadata"]["namespace"].as_str().unwrap_or_default().to_owned())
            .collect();
        namespaces.sort();
        namespaces.dedup();
        namespaces
    }
}
