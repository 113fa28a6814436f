//! Self-managed certificates against a real apiserver (etcd and kube-apiserver of
//! `tests/cluster/`, one per test): the Secret is created once even when replicas start
//! together, the `caBundle` is filled and repaired, certificates are rotated without a single
//! failed handshake for a client that trusts the published bundle, and the RBAC the
//! certificate code is given is enough.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use e2e_support::apiserver::ApiServer;
use eviction_autoscaler_shared::health::Readiness;
use eviction_autoscaler_webhook::self_managed::{CertManager, SelfManagedSettings};
use eviction_autoscaler_webhook::{Metrics, PemPair, ServeSettings, WebhookServer};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Event, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};
use tokio_rustls::TlsConnector;

const NS: &str = "ops";
const SECRET: &str = "eas-tls";
const SERVICE: &str = "eas";
const CONFIGURATION: &str = "eas-webhooks";
const SERVER_NAME: &str = "eas.ops.svc";

/// The apiserver, with the namespace the certificate Secret lives in.
struct Cluster {
    apiserver: ApiServer,
}

impl Cluster {
    async fn start() -> Self {
        let apiserver = ApiServer::start().await;
        apiserver.create(&format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n")).await;
        Self { apiserver }
    }

    /// A client for the test's own requests.
    async fn client(&self) -> kube::Client {
        self.apiserver.client().await
    }

    /// The CA bundle (`ca.crt`) in the certificate Secret.
    async fn ca_in_secret(&self) -> Vec<u8> {
        let secret = Api::<Secret>::namespaced(self.client().await, NS).get(SECRET).await.expect("Secret");
        secret.data.unwrap_or_default()["ca.crt"].0.clone()
    }

    /// Waits until every webhook's caBundle is the Secret's `ca.crt`; returns it.
    async fn bundles_filled(&self) -> Vec<u8> {
        let ca = self.ca_in_secret().await;
        eventually("caBundle filled", Duration::from_secs(10), || async {
            self.bundles().await.iter().all(|b| *b == ca).then_some(())
        })
        .await;
        ca
    }

    async fn create_configuration(&self) {
        let webhooks: Vec<serde_json::Value> = ["evictions", "pdbs"]
            .iter()
            .map(|w| {
                serde_json::json!({
                    "name": format!("{w}.eas.example.com"),
                    "clientConfig": {"service": {"name": SERVICE, "namespace": NS, "path": format!("/{w}")}},
                    "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods/eviction"]}],
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                })
            })
            .collect();
        let configuration: ValidatingWebhookConfiguration = serde_json::from_value(serde_json::json!({
            "metadata": {"name": CONFIGURATION},
            "webhooks": webhooks,
        }))
        .expect("configuration");
        Api::<ValidatingWebhookConfiguration>::all(self.client().await)
            .create(&PostParams::default(), &configuration)
            .await
            .expect("configuration created");
    }

    /// Every webhook's caBundle (empty when unset).
    async fn bundles(&self) -> Vec<Vec<u8>> {
        let configuration = Api::<ValidatingWebhookConfiguration>::all(self.client().await)
            .get(CONFIGURATION)
            .await
            .expect("configuration");
        configuration
            .webhooks
            .unwrap_or_default()
            .into_iter()
            .map(|w| w.client_config.ca_bundle.map(|b| b.0).unwrap_or_default())
            .collect()
    }

    /// Events with `reason` on the certificate Secret (matched by name and uid, as
    /// `kubectl describe secret` matches them).
    async fn secret_events(&self, reason: &str) -> Vec<Event> {
        let client = self.client().await;
        let uid =
            Api::<Secret>::namespaced(client.clone(), NS).get(SECRET).await.expect("Secret").metadata.uid;
        let events = Api::<Event>::namespaced(client, NS).list(&Default::default()).await.expect("events");
        events
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason) && e.type_.as_deref() == Some("Warning"))
            .filter(|e| e.involved_object.name.as_deref() == Some(SECRET) && e.involved_object.uid == uid)
            .collect()
    }

    /// Requests of the certificate code (not the test's) with this verb, resource and answer.
    fn count(&self, verb: &str, resource: &str, code: u16) -> usize {
        self.apiserver
            .requests_under_test()
            .iter()
            .filter(|r| r.verb == verb && r.resource == resource && r.code == code)
            .count()
    }
}

fn settings(validity: Duration) -> SelfManagedSettings {
    let mut settings = SelfManagedSettings::new(NS, SECRET, SERVICE, CONFIGURATION, validity);
    settings.resync_interval = Duration::from_millis(500);
    settings
}

/// A replica: the manager following the Secret and a webhook server serving its pairs.
struct Replica {
    addr: SocketAddr,
    pairs: watch::Receiver<PemPair>,
    metrics: Metrics,
    readiness: Readiness,
    stop: Vec<oneshot::Sender<()>>,
}

impl Replica {
    async fn start(cluster: &Cluster, settings: SelfManagedSettings) -> Self {
        Self::start_as(cluster.apiserver.client_under_test().await, settings).await
    }

    async fn start_as(client: kube::Client, settings: SelfManagedSettings) -> Self {
        let metrics = Metrics::new();
        let readiness = Readiness::new();
        let (manager, pairs) = CertManager::start(client, settings, metrics.clone(), readiness.clone())
            .await
            .expect("manager starts");
        let serve = ServeSettings::new(([127, 0, 0, 1], 0).into(), "/unused", "/unused")
            .with_memory_certs(pairs.clone());
        let server =
            WebhookServer::bind(serve, metrics.clone(), readiness.clone()).await.expect("server binds");
        let addr = server.local_addr().expect("addr");
        let (stop_server, server_stopped) = oneshot::channel::<()>();
        let (stop_manager, manager_stopped) = oneshot::channel::<()>();
        tokio::spawn(server.run(axum::Router::new(), async move {
            let _ = server_stopped.await;
        }));
        tokio::spawn(manager.run(async move {
            let _ = manager_stopped.await;
        }));
        Self { addr, pairs, metrics, readiness, stop: vec![stop_server, stop_manager] }
    }

    fn serving_cert(&self) -> Vec<u8> {
        self.pairs.borrow().cert.clone()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        for stop in self.stop.drain(..) {
            let _ = stop.send(());
        }
    }
}

/// A TLS handshake with `addr`, trusting only `bundle`; returns the certificate served.
async fn handshake(addr: SocketAddr, bundle: &[u8]) -> Result<Vec<u8>, String> {
    let mut roots = RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut &bundle[..]) {
        roots.add(cert.map_err(|e| format!("bundle: {e}"))?).map_err(|e| format!("bundle: {e}"))?;
    }
    let config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.map_err(|e| format!("connect: {e}"))?;
    let name = ServerName::try_from(SERVER_NAME).map_err(|e| e.to_string())?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let served: Option<&CertificateDer<'_>> = tls.get_ref().1.peer_certificates().and_then(|c| c.first());
    Ok(served.map(|c| c.to_vec()).unwrap_or_default())
}

fn der_of(pem: &[u8]) -> Vec<u8> {
    rustls_pemfile::certs(&mut &pem[..]).next().and_then(Result::ok).map(|c| c.to_vec()).unwrap_or_default()
}

async fn eventually<T, Fut: Future<Output = Option<T>>>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Fut,
) -> T {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_agree_on_one_secret_and_fill_the_ca_bundle() {
    let cluster = Cluster::start().await;
    cluster.create_configuration().await;
    let validity = Duration::from_secs(8760 * 3600);
    let (a, b) = tokio::join!(
        Replica::start(&cluster, settings(validity)),
        Replica::start(&cluster, settings(validity))
    );

    assert_eq!(cluster.count("create", "secrets", 201), 1, "exactly one replica created the Secret");
    let secret =
        Api::<Secret>::namespaced(cluster.client().await, NS).get(SECRET).await.expect("the Secret exists");
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let label = secret.metadata.labels.unwrap_or_default().get("app.kubernetes.io/name").cloned();
    assert_eq!(label.as_deref(), Some("eviction-autoscaler"));
    let data = secret.data.unwrap_or_default();
    for key in ["tls.crt", "tls.key", "ca.crt", "ca.key"] {
        assert!(data.contains_key(key), "the Secret has {key}");
    }
    assert_eq!(a.serving_cert(), b.serving_cert(), "both replicas serve the same certificate");
    assert_eq!(a.serving_cert(), data["tls.crt"].0, "and it is the Secret's");
    assert!(a.readiness.cert_loaded() && b.readiness.cert_loaded());

    let ca = data["ca.crt"].0.clone();
    eventually("every caBundle equals ca.crt", Duration::from_secs(10), || async {
        cluster.bundles().await.iter().all(|b| *b == ca).then_some(())
    })
    .await;
    for replica in [&a, &b] {
        let served =
            handshake(replica.addr, &ca).await.expect("the published CA verifies the served certificate");
        assert_eq!(served, der_of(&data["tls.crt"].0));
    }

    // `kubectl apply` of the manifest blanks the caBundle: it is put back within seconds.
    let blank = serde_json::json!([
        {"op": "remove", "path": "/webhooks/0/clientConfig/caBundle"},
        {"op": "remove", "path": "/webhooks/1/clientConfig/caBundle"},
    ]);
    Api::<ValidatingWebhookConfiguration>::all(cluster.client().await)
        .patch(
            CONFIGURATION,
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(blank).expect("patch")),
        )
        .await
        .expect("blanked");
    // A repair is counted once its PATCH has been answered, a moment after the apiserver
    // stored it: wait for both.
    eventually(
        "the blanked caBundle is refilled, and the repair counted",
        Duration::from_secs(10),
        || async {
            let filled = cluster.bundles().await.iter().all(|b| *b == ca);
            (filled && a.metrics.ca_bundle_repairs() + b.metrics.ca_bundle_repairs() >= 2).then_some(())
        },
    )
    .await;
    assert_eq!(cluster.count("create", "secrets", 201), 1, "no second Secret was made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_secret_is_replaced_and_a_missing_configuration_is_retried_with_backoff() {
    let cluster = Cluster::start().await;
    // Ours (the label we create it with), then spoiled.
    let garbage: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": SECRET, "namespace": NS, "labels": {"app.kubernetes.io/name": "eviction-autoscaler"}},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "bm90IHBlbQ==", "tls.key": "bm90IHBlbQ=="},
    }))
    .expect("secret");
    let secrets = Api::<Secret>::namespaced(cluster.client().await, NS);
    secrets.create(&PostParams::default(), &garbage).await.expect("garbage Secret");

    let mut quick = settings(Duration::from_secs(3600));
    quick.resync_interval = Duration::from_millis(100);
    quick.max_backoff = Duration::from_secs(2);
    let replica = Replica::start(&cluster, quick).await;
    let data = secrets.get(SECRET).await.expect("Secret").data.unwrap_or_default();
    assert!(data.contains_key("ca.crt"), "the unusable Secret was replaced by a complete one");
    assert_eq!(replica.serving_cert(), data["tls.crt"].0);
    assert_eq!(cluster.count("update", "secrets", 200), 1, "replaced with one update");
    assert_eq!(cluster.secret_events("CertificateSecretReplaced").await.len(), 1, "the replacement is told");

    // Without the configuration the replica keeps serving and backs off: 4 s at a 100 ms
    // resync would be 40 reads without backoff.
    let gets = || cluster.count("get", "validatingwebhookconfigurations", 404);
    eventually("the replica looked for the configuration", Duration::from_secs(5), || async {
        (gets() >= 2).then_some(())
    })
    .await;
    let before = gets();
    let since = tokio::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let during = gets() - before;
    assert!(during <= 6, "{during} reads of the missing configuration in {:?}: no backoff", since.elapsed());
    assert!(handshake(replica.addr, &data["ca.crt"].0).await.is_ok(), "still serving");

    // Once created, the watch sees it and the caBundle is filled without waiting for the backoff.
    cluster.create_configuration().await;
    let ca = data["ca.crt"].0.clone();
    eventually("the new configuration gets the caBundle", Duration::from_secs(3), || async {
        cluster.bundles().await.iter().all(|b| *b == ca).then_some(())
    })
    .await;
}

/// A Secret someone else made under the configured name (their own PKI, a typo) is never
/// replaced: the start fails naming it and what to do, its bytes stay as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_secret_someone_else_made_is_reported_and_left_alone() {
    let cluster = Cluster::start().await;
    let theirs: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": SECRET, "namespace": NS, "labels": {"team": "pki"}},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "bm90IHBlbQ==", "tls.key": "bm90IHBlbQ==", "notes": "a2VlcCBtZQ=="},
    }))
    .expect("secret");
    let secrets = Api::<Secret>::namespaced(cluster.client().await, NS);
    let created = secrets.create(&PostParams::default(), &theirs).await.expect("their Secret");

    let readiness = Readiness::new();
    let started = CertManager::start(
        cluster.client().await,
        settings(Duration::from_secs(3600)),
        Metrics::new(),
        readiness.clone(),
    )
    .await;
    let Err(error) = started else { panic!("started on a Secret it cannot use") };
    let error = error.to_string();
    assert!(error.contains(&format!("{NS}/{SECRET}")) || error.contains(SECRET), "{error}");
    assert!(error.contains("not made by eviction-autoscaler") && error.contains("delete it"), "{error}");
    let after = secrets.get(SECRET).await.expect("Secret");
    assert_eq!(after.data, created.data, "their data is untouched");
    assert_eq!(after.metadata.resource_version, created.metadata.resource_version);
    assert_eq!(cluster.count("update", "secrets", 200), 0);
    let events = cluster.secret_events("CertificateSecretUnusable").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(events[0].message.as_deref().is_some_and(|m| m.contains("not made by eviction-autoscaler")));
    assert!(readiness.cert_problem().is_some_and(|p| p.contains(SECRET)));
}

/// Spoiled while running by someone who also took our label off: the replica keeps serving the
/// pair it has, says why on `/readyz` and in one Event (not one per resync), reads the Secret
/// no more often than the resync, and makes a new one once the spoiled one is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_spoiled_while_running_is_reported_once_and_replaced_only_once_deleted() {
    let cluster = Cluster::start().await;
    let mut quick = settings(Duration::from_secs(3600));
    quick.resync_interval = Duration::from_millis(100);
    let replica = Replica::start(&cluster, quick).await;
    let secrets = Api::<Secret>::namespaced(cluster.client().await, NS);
    let ours = secrets.get(SECRET).await.expect("our Secret");
    let ca = ours.data.clone().unwrap_or_default()["ca.crt"].0.clone();

    let mut spoiled = ours.clone();
    spoiled.metadata.labels = None;
    spoiled.data = Some(
        serde_json::from_value(serde_json::json!({"tls.crt": "eA==", "tls.key": "eA=="})).expect("data"),
    );
    let spoiled = secrets.replace(SECRET, &PostParams::default(), &spoiled).await.expect("spoiled");
    eventually("the problem on /readyz", Duration::from_secs(5), || async {
        replica.readiness.cert_problem().filter(|p| p.contains("not made by eviction-autoscaler"))
    })
    .await;
    let gets = || cluster.count("get", "secrets", 200);
    let before = gets();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let reads = gets() - before;
    assert!(reads <= 25, "{reads} reads of the Secret in 2 s at a 100 ms resync");
    assert_eq!(secrets.get(SECRET).await.expect("Secret").data, spoiled.data, "left as it is");
    assert_eq!(
        cluster.secret_events("CertificateSecretUnusable").await.len(),
        1,
        "one Event, not one per resync"
    );
    // Readiness keeps the loaded certificate: a Secret problem alone never makes the replica unready.
    assert!(replica.readiness.cert_loaded(), "the replica dropped its loaded certificate");
    assert!(handshake(replica.addr, &ca).await.is_ok(), "still serving the pair it had");

    secrets.delete(SECRET, &Default::default()).await.expect("delete");
    eventually("a new Secret of ours", Duration::from_secs(5), || async {
        let secret = secrets.get_opt(SECRET).await.ok().flatten()?;
        secret.data.unwrap_or_default().contains_key("ca.key").then_some(())
    })
    .await;
    eventually("the problem cleared", Duration::from_secs(5), || async {
        replica.readiness.cert_problem().is_none().then_some(())
    })
    .await;
}

/// Connects to every replica in turn, verifying against the caBundle read from the
/// configuration just before, until `stop`; returns (handshakes, distinct certificates seen).
async fn handshake_loop(
    cluster: &Cluster,
    addrs: &[SocketAddr],
    stop: &AtomicBool,
    failures: &AtomicU64,
) -> (u64, Vec<Vec<u8>>) {
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut count = 0;
    while !stop.load(Ordering::Acquire) {
        for addr in addrs {
            let bundles = cluster.bundles().await;
            let Some(bundle) = bundles.first() else { continue };
            match handshake(*addr, bundle).await {
                Ok(served) => {
                    if !seen.contains(&served) {
                        seen.push(served);
                    }
                }
                Err(error) => {
                    failures.fetch_add(1, Ordering::AcqRel);
                    eprintln!("handshake failed: {error}");
                }
            }
            count += 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (count, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_lived_serving_certificates_rotate_without_a_failed_handshake() {
    let cluster = Cluster::start().await;
    cluster.create_configuration().await;
    let validity = Duration::from_secs(30);
    let (a, b) = tokio::join!(
        Replica::start(&cluster, settings(validity)),
        Replica::start(&cluster, settings(validity))
    );
    let first = der_of(&a.serving_cert());
    let ca = cluster.bundles_filled().await;

    let stop = AtomicBool::new(false);
    let failures = AtomicU64::new(0);
    let addrs = [a.addr, b.addr];
    let (handshakes, seen) = tokio::join!(handshake_loop(&cluster, &addrs, &stop, &failures), async {
        // Issued with 30 s (+3 s backdating): renewed at two thirds, about 22 s in.
        eventually("both replicas serve a renewed certificate", Duration::from_secs(40), || async {
            let (x, y) = (der_of(&a.serving_cert()), der_of(&b.serving_cert()));
            (x != first && x == y).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop.store(true, Ordering::Release);
    })
    .0;
    assert_eq!(
        failures.load(Ordering::Acquire),
        0,
        "no handshake failed across the rotation ({handshakes} made)"
    );
    assert!(seen.len() >= 2, "the client saw the old and the new certificate");
    assert_eq!(
        a.metrics.cert_rotations() + b.metrics.cert_rotations(),
        1,
        "one replica renewed, the other adopted it"
    );
    assert_eq!(cluster.bundles().await[0], ca, "the CA did not change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ageing_ca_is_rotated_in_two_steps_without_a_failed_handshake() {
    let cluster = Cluster::start().await;
    cluster.create_configuration().await;
    let mut short = settings(Duration::from_secs(12));
    short.ca_validity = Duration::from_secs(30);
    let replica = Replica::start(&cluster, short).await;
    let secrets = Api::<Secret>::namespaced(cluster.client().await, NS);
    let first_ca = der_of(&secrets.get(SECRET).await.expect("Secret").data.unwrap_or_default()["ca.crt"].0);
    // Before the bundle is filled no client could verify anything: not part of the rotation.
    cluster.bundles_filled().await;

    let stop = AtomicBool::new(false);
    let failures = AtomicU64::new(0);
    let addrs = [replica.addr];
    tokio::join!(handshake_loop(&cluster, &addrs, &stop, &failures), async {
        // The CA is renewed at two thirds (about 22 s); then the serving certificate moves to it.
        eventually("the served certificate is issued by the new CA", Duration::from_secs(45), || async {
            let data = secrets.get(SECRET).await.ok()?.data.unwrap_or_default();
            let ca = der_of(&data.get("ca.crt")?.0);
            let published = cluster.bundles().await;
            let switched = ca != first_ca && published.iter().all(|b| b == &data["ca.crt"].0);
            (switched && handshake(replica.addr, &pem_of_first(&data["ca.crt"].0)).await.is_ok())
                .then_some(())
        })
        .await;
        stop.store(true, Ordering::Release);
    });
    assert_eq!(failures.load(Ordering::Acquire), 0, "no handshake failed across the CA rotation");
}

/// The first certificate of a PEM bundle, as PEM (to trust the new CA alone).
fn pem_of_first(bundle: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bundle);
    let end = "-----END CERTIFICATE-----";
    text.find(end).map(|i| text[..i + end.len()].as_bytes().to_vec()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairs_from_memory_are_installed_and_a_bad_one_keeps_the_previous_serving() {
    let generate = || {
        eviction_autoscaler_webhook::certs::generate_pem(&[SERVER_NAME.to_owned()], &[])
            .expect("certificates")
    };
    let pair = |g: &eviction_autoscaler_webhook::certs::GeneratedCerts| PemPair {
        cert: g.cert_pem.clone().into_bytes(),
        key: g.key_pem.clone().into_bytes(),
    };
    let addr = ([127, 0, 0, 1], 0).into();

    let (_bad_tx, bad_rx) = watch::channel(PemPair { cert: b"garbage".to_vec(), key: Vec::new() });
    let readiness = Readiness::new();
    let refused = WebhookServer::bind(
        ServeSettings::new(addr, "/unused", "/unused").with_memory_certs(bad_rx),
        Metrics::new(),
        readiness.clone(),
    )
    .await;
    assert!(matches!(refused, Err(eviction_autoscaler_webhook::Error::InvalidInMemoryCertificate { .. })));
    assert!(!readiness.cert_loaded(), "not ready without a usable pair");

    let (first, second) = (generate(), generate());
    let (pairs, receiver) = watch::channel(pair(&first));
    let metrics = Metrics::new();
    let server = WebhookServer::bind(
        ServeSettings::new(addr, "/unused", "/unused").with_memory_certs(receiver),
        metrics.clone(),
        readiness.clone(),
    )
    .await
    .expect("binds");
    assert!(readiness.cert_loaded());
    let addr = server.local_addr().expect("addr");
    let (_stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(server.run(axum::Router::new(), async move {
        let _ = stopped.await;
    }));

    pairs.send_replace(PemPair { cert: first.cert_pem.clone().into_bytes(), key: b"not a key".to_vec() });
    eventually("the bad pair is refused", Duration::from_secs(5), || async {
        (metrics.cert_reload_failures() == 1).then_some(())
    })
    .await;
    let served =
        handshake(addr, first.ca_pem.as_bytes()).await.expect("the previous certificate still serves");
    assert_eq!(served, der_of(first.cert_pem.as_bytes()));

    pairs.send_replace(pair(&second));
    eventually("the new pair is installed", Duration::from_secs(5), || async {
        (metrics.cert_reloads() == 1).then_some(())
    })
    .await;
    let served = handshake(addr, second.ca_pem.as_bytes()).await.expect("the new certificate serves");
    assert_eq!(served, der_of(second.cert_pem.as_bytes()));
}

/// Creates RBAC objects as the admin.
async fn grant(cluster: &Cluster, objects: serde_json::Value) {
    for object in objects.as_array().into_iter().flatten() {
        cluster.apiserver.create(&object.to_string()).await;
    }
}

fn binding(kind: &str, role_kind: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
        "metadata": {"name": "eas-certs", "namespace": NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": "eas-certs"},
        "subjects": [{"kind": "ServiceAccount", "name": "eas", "namespace": NS}],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_privilege_suffices_and_a_forbidden_configuration_is_retried_with_backoff() {
    let cluster = Cluster::start().await;
    cluster.create_configuration().await;
    cluster
        .apiserver
        .create(&format!(
            "{{apiVersion: v1, kind: ServiceAccount, metadata: {{name: eas, namespace: {NS}}}}}"
        ))
        .await;
    // Exactly the Secret permissions the certificate code needs (certs/README.md).
    grant(&cluster, serde_json::json!([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "eas-certs", "namespace": NS},
         "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [SECRET], "verbs": ["get", "list", "watch", "update"]},
         ]},
        binding("RoleBinding", "Role"),
    ]))
    .await;
    let client = cluster.apiserver.client_under_test_as(NS, "eas").await;

    let mut quick = settings(Duration::from_secs(3600));
    quick.resync_interval = Duration::from_millis(100);
    quick.max_backoff = Duration::from_secs(1);
    let replica = Replica::start_as(client, quick).await;
    let ca = cluster.ca_in_secret().await;
    assert!(handshake(replica.addr, &ca).await.is_ok(), "serving although the configuration is forbidden");

    let forbidden = || cluster.count("get", "validatingwebhookconfigurations", 403);
    eventually("the configuration was tried", Duration::from_secs(5), || async {
        (forbidden() >= 2).then_some(())
    })
    .await;
    let before = forbidden();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = forbidden() - before;
    assert!(during <= 6, "{during} forbidden reads in 3 s at a 100 ms resync: no backoff");
    assert_eq!(replica.metrics.ca_bundle_repairs(), 0);

    // With the configuration permissions granted the bundle is filled within the backoff.
    grant(&cluster, serde_json::json!([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "eas-certs"},
         "rules": [{"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"],
                    "resourceNames": [CONFIGURATION], "verbs": ["get", "list", "watch", "patch"]}]},
        binding("ClusterRoleBinding", "ClusterRole"),
    ]))
    .await;
    // The repair is counted once its PATCH has been answered, a moment after the apiserver
    // stored it: wait for both.
    eventually("the caBundle is filled once permitted, and counted", Duration::from_secs(10), || async {
        let filled = cluster.bundles().await.iter().all(|b| *b == ca);
        (filled && replica.metrics.ca_bundle_repairs() >= 1).then_some(())
    })
    .await;
    assert_eq!(replica.metrics.ca_bundle_repairs(), 1, "one repair");
}
