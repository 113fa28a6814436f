//! cert-manager's part in the `cert-manager` install mode, played by the test (as KEDA's is,
//! keda.rs; cert-manager is not built here): its two CRDs, the CA issuer signing a Certificate
//! into its Secret (`tls.crt`, `tls.key`, `ca.crt`, as cert-manager writes a CA-issued one), and
//! the cainjector copying that CA into the `caBundle` of every webhook configuration annotated
//! `cert-manager.io/inject-ca-from: <namespace>/<certificate>`. The kubelet's projection of the
//! Secret into the pod is [`Env::project_secret`].

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};

use super::{Env, wait_for};

/// The CA of the `…-ca` Issuer: one per test, so a renewal keeps the `caBundle`.
pub struct CertManager {
    ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Env {
    /// Applies cert-manager's own CRDs (Certificate, Issuer: from its module, with their
    /// schemas) and makes the CA.
    pub async fn install_cert_manager(&self) -> CertManager {
        self.apply_module_crds(&["cert-manager.io_certificates.yaml", "cert-manager.io_issuers.yaml"]).await;
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, "eviction-autoscaler-ca");
        let ca = params.self_signed(&key).expect("CA certificate");
        CertManager { ca_pem: ca.pem(), issuer: Issuer::new(params, key) }
    }

    /// Issues (or renews) Certificate `namespace/name` with `cert_manager`'s CA into its
    /// `spec.secretName`, then injects the CA where asked.
    pub async fn issue_certificate(&self, cert_manager: &CertManager, namespace: &str, name: &str) {
        let certificate = self
            .get(&["certificates.cert-manager.io", "-n", namespace, name])
            .await
            .unwrap_or_else(|| panic!("Certificate {namespace}/{name}"));
        let dns_names: Vec<String> = certificate["spec"]["dnsNames"]
            .as_array()
            .expect("the Certificate names dnsNames")
            .iter()
            .map(|n| n.as_str().expect("a DNS name").to_owned())
            .collect();
        let key = KeyPair::generate().expect("serving key");
        let serving = CertificateParams::new(dns_names)
            .expect("serving params")
            .signed_by(&key, &cert_manager.issuer)
            .expect("serving certificate");
        let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": certificate["spec"]["secretName"], "namespace": namespace,
                "annotations": {"cert-manager.io/certificate-name": name}},
            "data": {"tls.crt": b64(&serving.pem()), "tls.key": b64(&key.serialize_pem()),
                "ca.crt": b64(&cert_manager.ca_pem)}
        });
        self.apply(&secret.to_string()).await;
        self.inject_ca(&format!("{namespace}/{name}"), &b64(&cert_manager.ca_pem)).await;
    }

    /// The cainjector: `bundle` into every webhook of the configurations injected from `from`.
    async fn inject_ca(&self, from: &str, bundle: &str) {
        let list = self.get(&["validatingwebhookconfigurations"]).await.expect("webhook configurations");
        for configuration in list["items"].as_array().into_iter().flatten() {
            if configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] != from {
                continue;
            }
            let hooks = configuration["webhooks"].as_array().map_or(0, Vec::len);
            let patch: Vec<Value> = (0..hooks)
                .map(|i| json!({"op": "replace", "path": format!("/webhooks/{i}/clientConfig/caBundle"), "value": bundle}))
                .collect();
            let name = configuration["metadata"]["name"].as_str().expect("a name");
            let patch = Value::Array(patch).to_string();
            self.kubectl_ok(&["patch", "validatingwebhookconfiguration", name, "--type=json", "-p", &patch])
                .await;
        }
    }

    /// cert-manager's part for the product's serving Certificate ([`Self::issue_certificate`]),
    /// then the kubelet's (its Secret projected): the flags that serve those files.
    pub async fn serve_from_cert_manager(&self, cert_manager: &CertManager) -> [String; 2] {
        let (namespace, _) = super::PRODUCT_ACCOUNT;
        self.issue_certificate(cert_manager, namespace, super::install::SERVING_CERTIFICATE).await;
        let tls = self.project_secret(namespace, super::install::TLS_SECRET);
        [
            format!("--tls-cert-file={}", tls.join("tls.crt").display()),
            format!("--tls-key-file={}", tls.join("tls.key").display()),
        ]
    }

    /// Projects Secret `namespace/name` into a directory as the kubelet does: each key a file,
    /// all swapped at once (a `..data` symlink to a fresh directory). Returns the directory.
    pub fn project_secret(&self, namespace: &str, name: &str) -> PathBuf {
        let secret = self
            .object("", "v1", "secrets", namespace, name)
            .unwrap_or_else(|| panic!("Secret {namespace}/{name}"));
        let dir = self.dir.path().join("projected").join(name);
        let version = dir.join(format!("..{}", uuid_like()));
        std::fs::create_dir_all(&version).expect("projected Secret dir");
        for (key, value) in secret["data"].as_object().expect("Secret data") {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(value.as_str().expect("base64 data"))
                .expect("Secret data is base64");
            std::fs::write(version.join(key), bytes).expect("write a projected key");
            let link = dir.join(key);
            if !link.exists() {
                std::os::unix::fs::symlink(PathBuf::from("..data").join(key), &link).expect("key symlink");
            }
        }
        let tmp = dir.join("..data_tmp");
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(version.file_name().expect("a name"), &tmp).expect("..data symlink");
        std::fs::rename(&tmp, dir.join("..data")).expect("swap ..data");
        dir
    }
}

/// A name no earlier projection used.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970");
    format!("{}", nanos.as_nanos())
}

impl Env {
    /// Waits until CRD `name` is Established (served). Polled: `kubectl wait` fails outright
    /// on a CRD whose status has no conditions yet.
    pub async fn wait_established(&self, name: &str) {
        wait_for(&format!("CRD {name} established"), Duration::from_secs(60), || {
            let crd = self.object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", name);
            let established = crd.is_some_and(|crd| {
                crd["status"]["conditions"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c["type"] == "Established" && c["status"] == "True"))
            });
            async move { established.then_some(()) }
        })
        .await;
    }

    /// Applies CRDs of other projects, copied from their Go modules by `tests/cluster/build.sh`
    /// (`target/cluster/<KUBE_VERSION>/crds/`), and waits until each is served. Server-side:
    /// cert-manager's Issuer CRD is too large for client-side apply's annotation.
    pub async fn apply_module_crds(&self, files: &[&str]) {
        let dir = super::cluster::bin_dir_of(&super::cluster::kube_version()).join("crds");
        for file in files {
            let path = dir.join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("read {} (make cluster-build copies it): {e}", path.display()));
            let name = text
                .lines()
                .find_map(|l| l.strip_prefix("  name: "))
                .unwrap_or_else(|| panic!("{} names its CRD", path.display()))
                .to_owned();
            self.kubectl_ok(&["apply", "--server-side", "-f", &path.display().to_string()]).await;
            self.wait_established(&name).await;
        }
    }
}
