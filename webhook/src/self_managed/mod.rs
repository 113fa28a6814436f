//! Self-managed webhook certificates: a CA and a serving certificate kept in a Secret, served
//! from memory, published as every webhook's `caBundle`, and renewed before they expire.
//!
//! Every replica runs a [`CertManager`]. On start it reads the Secret and creates it when
//! missing (a 409 means another replica won: its Secret is used), replacing it when unusable.
//! Then it follows the Secret and the ValidatingWebhookConfiguration (watches by name, plus a
//! resync every few seconds): a new pair in the Secret is served at once, a `caBundle` that
//! differs from `ca.crt` is patched back, and a certificate with less than a third of its
//! lifetime left is renewed by whichever replica's update wins. What to do is decided by
//! [`decide`] (pure, unit-tested); this module only does the I/O.
//!
//! ```ignore
//! let (manager, pairs) = CertManager::start(client, settings, metrics.clone()).await?;
//! let server = WebhookServer::bind(serve_settings.with_memory_certs(pairs), metrics, readiness).await?;
//! tokio::spawn(manager.run(shutdown));
//! ```

mod ca_bundle;
pub mod decide;
mod secret;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use eviction_autoscaler_shared::health::Readiness;
use eviction_autoscaler_shared::keys::is_product_secret;
use futures::StreamExt as _;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Api;
use kube::api::PostParams;
use kube::runtime::watcher;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use self::ca_bundle::{Read, WebhookConfiguration, bundles};
use self::decide::{Action, CA_CRT, Published, TLS_CRT, TLS_KEY, Wanted, decide};
use self::secret::{Data, SecretStore, Written, next_data, view};
use crate::Error;
use crate::metrics::Metrics;
use crate::tls::PemPair;

/// What the manager looks after.
#[derive(Clone, Debug)]
pub struct SelfManagedSettings {
    /// Namespace of the Secret and the Service.
    pub namespace: String,
    /// Name of the Secret holding `tls.crt`, `tls.key`, `ca.crt`, `ca.key`.
    pub secret_name: String,
    /// Name of the webhook's Service (the certificate's DNS names derive from it).
    pub service_name: String,
    /// Name of the ValidatingWebhookConfiguration whose `caBundle`s are kept equal to `ca.crt`.
    pub webhook_configuration: String,
    /// Lifetime of a serving certificate.
    pub serving_validity: Duration,
    /// Lifetime of a CA.
    pub ca_validity: Duration,
    /// Look at the Secret and the configuration at least this often (watches make it sooner).
    pub resync_interval: Duration,
    /// Longest pause between attempts while the configuration is missing or forbidden.
    pub max_backoff: Duration,
}

impl SelfManagedSettings {
    /// Settings with a 10-year CA, a 5 s resync and at most 5 min between retries.
    pub fn new(
        namespace: impl Into<String>,
        secret_name: impl Into<String>,
        service_name: impl Into<String>,
        webhook_configuration: impl Into<String>,
        serving_validity: Duration,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            secret_name: secret_name.into(),
            service_name: service_name.into(),
            webhook_configuration: webhook_configuration.into(),
            serving_validity,
            ca_validity: Duration::from_secs(10 * 365 * 24 * 3600),
            resync_interval: Duration::from_secs(5),
            max_backoff: Duration::from_secs(300),
        }
    }

    /// The serving certificate's names: SERVICE, SERVICE.NS, SERVICE.NS.svc and
    /// SERVICE.NS.svc.cluster.local (SERVICE.NS.svc first: that is what the API server asks for).
    pub fn dns_names(&self) -> Vec<String> {
        let (service, ns) = (&self.service_name, &self.namespace);
        vec![
            format!("{service}.{ns}.svc"),
            service.clone(),
            format!("{service}.{ns}"),
            format!("{service}.{ns}.svc.cluster.local"),
        ]
    }

    fn wanted(&self) -> Wanted {
        let seconds = |d: Duration| i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
        Wanted {
            dns_names: self.dns_names(),
            serving_validity: seconds(self.serving_validity),
            ca_validity: seconds(self.ca_validity),
        }
    }
}

/// The Secret as last seen: the pair to serve, the bundle to publish, when to look again.
struct Current {
    pair: PemPair,
    ca_crt: Vec<u8>,
    recheck_at: i64,
}

/// Keeps the Secret, the served pair and the `caBundle`s in step (see the module docs).
pub struct CertManager {
    client: kube::Client,
    settings: SelfManagedSettings,
    wanted: Wanted,
    secret: SecretStore,
    configuration: WebhookConfiguration,
    metrics: Metrics,
    pairs: watch::Sender<PemPair>,
    /// When the configuration may be read again, and the pause after the next failure.
    configuration_retry: (Instant, Duration),
    /// The configuration's last problem, so a persisting one is not logged at every retry.
    configuration_problem: Option<String>,
    /// The `caBundle`s last read, and since when (Unix seconds) they have been as they are.
    bundles_seen: Option<(Vec<Vec<u8>>, i64)>,
    /// Shows a Secret problem on `/readyz`.
    readiness: Readiness,
    /// The Secret's last problem, so a persisting one is logged and evented once.
    secret_problem: Option<String>,
}

impl CertManager {
    /// Reads (or creates, or repairs) the Secret and returns the manager with a channel whose
    /// current value is the pair to serve. Fails when the Secret cannot be read or written.
    pub async fn start(
        client: kube::Client,
        settings: SelfManagedSettings,
        metrics: Metrics,
        readiness: Readiness,
    ) -> Result<(Self, watch::Receiver<PemPair>), Error> {
        let secret = SecretStore::new(client.clone(), &settings.namespace, &settings.secret_name);
        let configuration = WebhookConfiguration::new(client.clone(), &settings.webhook_configuration);
        let wanted = settings.wanted();
        let placeholder = PemPair { cert: Vec::new(), key: Vec::new() };
        let (pairs, receiver) = watch::channel(placeholder);
        let mut manager = Self {
            client,
            settings,
            wanted,
            secret,
            configuration,
            metrics,
            pairs,
            configuration_retry: (Instant::now(), Duration::ZERO),
            configuration_problem: None,
            bundles_seen: None,
            readiness,
            secret_problem: None,
        };
        let read = manager.configuration.read().await.ok();
        let published = manager.published(read.as_ref());
        let current = match manager.reconcile_secret(&published).await {
            Ok(current) => current,
            Err(reason) => {
                // The process exits with this; the kubelet's restart back-off paces the retries.
                return Err(Error::SelfManaged(manager.report_secret_problem(reason).await));
            }
        };
        manager.pairs.send_replace(current.pair);
        Ok((manager, receiver))
    }

    /// Follows the Secret and the configuration until `shutdown` completes. Never fails:
    /// problems are logged and retried.
    pub async fn run(mut self, shutdown: impl Future<Output = ()> + Send) {
        let secret_changed = Arc::new(Notify::new());
        let configuration_changed = Arc::new(Notify::new());
        let secret_api: Api<Secret> = Api::namespaced(self.client.clone(), &self.settings.namespace);
        let configuration_api: Api<ValidatingWebhookConfiguration> = Api::all(self.client.clone());
        let watches = [
            tokio::spawn(watch_by_name(
                secret_api,
                self.settings.secret_name.clone(),
                Arc::clone(&secret_changed),
            )),
            tokio::spawn(watch_by_name(
                configuration_api,
                self.settings.webhook_configuration.clone(),
                Arc::clone(&configuration_changed),
            )),
        ];
        tokio::pin!(shutdown);
        let mut next = Instant::now();
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                () = secret_changed.notified() => {}
                () = configuration_changed.notified() => {
                    // A change (e.g. created, or blanked by an apply) is worth a read at once.
                    self.configuration_retry = (Instant::now(), Duration::ZERO);
                }
                () = tokio::time::sleep_until(next) => {}
            }
            next = self.reconcile().await;
        }
        for task in watches {
            task.abort();
        }
    }

    /// One round: configuration, Secret, served pair, `caBundle`. Returns when to run again.
    async fn reconcile(&mut self) -> Instant {
        let configuration = self.read_configuration().await;
        let published = self.published(configuration.as_ref());
        let mut next = Instant::now() + self.settings.resync_interval;
        let current = match self.reconcile_secret(&published).await {
            Ok(current) => current,
            Err(reason) => {
                // The pair already loaded is still served; the Secret is read again at resync.
                self.report_secret_problem(reason).await;
                return next;
            }
        };
        if self.secret_problem.take().is_some() {
            tracing::info!(secret = %self.settings.secret_name, "the webhook certificate Secret is usable again");
            self.readiness.set_cert_problem(None);
        }
        self.pairs.send_if_modified(|served| {
            let changed = *served != current.pair;
            if changed {
                *served = current.pair.clone();
            }
            changed
        });
        if let Some(Read::Found(found)) = configuration {
            match self.configuration.sync(&found, &current.ca_crt).await {
                Ok(0) => {}
                Ok(webhooks) => {
                    self.metrics.ca_bundle_repaired();
                    tracing::info!(
                        configuration = %self.configuration.name, webhooks,
                        "set caBundle to the Secret's ca.crt"
                    );
                }
                Err(kube::Error::Api(status)) if status.code == 409 => next = Instant::now(),
                Err(error) => self.configuration_failed("patch", &error),
            }
        }
        let seconds_left = current.recheck_at.saturating_sub(now()).max(0);
        let recheck = Instant::now() + Duration::from_secs(u64::try_from(seconds_left).unwrap_or(0));
        next.min(recheck)
    }

    /// What the configuration publishes (`None`: it could not be read), with since when its
    /// bundles have been seen as they are.
    fn published(&mut self, configuration: Option<&Read>) -> Published {
        match configuration {
            Some(Read::Found(found)) => {
                let bundles = bundles(found);
                let since = match &self.bundles_seen {
                    Some((seen, since)) if *seen == bundles => *since,
                    _ => now(),
                };
                self.bundles_seen = Some((bundles.clone(), since));
                Published::Bundles { bundles, since }
            }
            Some(Read::Absent) => Published::NoConfiguration,
            None => Published::Unknown,
        }
    }

    /// GETs the configuration unless backing off; `None` when unknown.
    async fn read_configuration(&mut self) -> Option<Read> {
        if Instant::now() < self.configuration_retry.0 {
            return None;
        }
        match self.configuration.read().await {
            Ok(Read::Found(found)) => {
                if self.configuration_problem.take().is_some() {
                    tracing::info!(configuration = %self.configuration.name, "webhook configuration found");
                }
                self.configuration_retry = (Instant::now(), Duration::ZERO);
                Some(Read::Found(found))
            }
            Ok(Read::Absent) => {
                let problem = "absent".to_owned();
                if self.configuration_problem.as_ref() != Some(&problem) {
                    tracing::warn!(
                        configuration = %self.configuration.name,
                        "ValidatingWebhookConfiguration not found; its caBundle will be set once it exists"
                    );
                    self.configuration_problem = Some(problem);
                }
                self.back_off();
                Some(Read::Absent)
            }
            Err(error) => {
                self.configuration_failed("get", &error);
                None
            }
        }
    }

    fn configuration_failed(&mut self, verb: &str, error: &kube::Error) {
        let name = &self.configuration.name;
        match error {
            kube::Error::Api(status) if status.code == 403 => tracing::error!(
                %error,
                "forbidden: the ServiceAccount needs `{verb}` on \
                 validatingwebhookconfigurations.admissionregistration.k8s.io named {name}; retrying"
            ),
            _ => {
                tracing::warn!(%error, configuration = %name, "cannot {verb} the webhook configuration; retrying")
            }
        }
        self.configuration_problem = Some(error.to_string());
        self.back_off();
    }

    fn back_off(&mut self) {
        let pause = (self.configuration_retry.1 * 2)
            .max(self.settings.resync_interval)
            .min(self.settings.max_backoff.max(self.settings.resync_interval));
        self.configuration_retry = (Instant::now() + pause, pause);
    }

    /// Reads the Secret and writes it when [`decide`] says so, re-reading after a lost race;
    /// returns what to serve and publish.
    async fn reconcile_secret(&self, published: &Published) -> Result<Current, String> {
        let (namespace, name) = (&self.settings.namespace, &self.settings.secret_name);
        let forbidden = |verb: &str, error: kube::Error| match &error {
            kube::Error::Api(status) if status.code == 403 => {
                format!(
                    "forbidden: the ServiceAccount needs `{verb}` on secrets in {namespace} (name {name}): {error}"
                )
            }
            _ => format!("{verb} Secret {namespace}/{name}: {error}"),
        };
        for _attempt in 0..5 {
            let found = self.secret.get().await.map_err(|e| forbidden("get", e))?;
            let data: Data = found.as_ref().and_then(|s| s.data.clone()).unwrap_or_default();
            let now = now();
            let action = decide(found.as_ref().map(|_| view(&data)), now, &self.wanted, published);
            let ours = found.as_ref().is_none_or(|s| is_product_secret(&s.metadata));
            let Some(new_data) = next_data(&action, &data, now, &self.wanted, ours)? else {
                if let Action::WaitForBundle { reason, .. } = &action {
                    tracing::debug!(%reason, "serving certificate switch waits for the caBundle");
                }
                return current_of(&data, &action, now, self.settings.resync_interval);
            };
            let written = match &found {
                None => self.secret.create(new_data).await.map_err(|e| forbidden("create", e))?,
                Some(existing) => {
                    self.secret.replace(existing, new_data).await.map_err(|e| forbidden("update", e))?
                }
            };
            if let Written::Done = written {
                self.log_written(&action);
                if let Action::Replace { reason } = &action {
                    let message = format!("replaced the unusable webhook certificate Secret: {reason}");
                    self.warn_on_secret("CertificateSecretReplaced", &message).await;
                }
            }
            // Either way read again: what is stored now is what everyone serves.
        }
        Err("the Secret kept changing while being written (5 attempts)".into())
    }

    /// Logs a Secret problem, shows it on `/readyz` and records a Warning Event on the Secret,
    /// once per distinct problem (it is retried at every resync, quietly). Returns the message.
    async fn report_secret_problem(&mut self, problem: String) -> String {
        let (namespace, secret) = (&self.settings.namespace, &self.settings.secret_name);
        let message = format!("webhook certificate Secret {namespace}/{secret}: {problem}");
        if self.secret_problem.as_ref() != Some(&problem) {
            tracing::error!(%namespace, %secret, reason = %problem, "cannot keep the webhook certificate Secret; retrying");
            self.readiness.set_cert_problem(Some(message.clone()));
            self.warn_on_secret("CertificateSecretUnusable", &message).await;
            self.secret_problem = Some(problem);
        }
        message
    }

    /// A Warning Event on the Secret, as `kubectl describe secret` shows it (best effort).
    async fn warn_on_secret(&self, reason: &str, message: &str) {
        let (namespace, name) = (&self.settings.namespace, &self.settings.secret_name);
        let uid = self.secret.get().await.ok().flatten().and_then(|s| s.metadata.uid);
        let now = jiff::Timestamp::now();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Secret".into()),
                namespace: Some(namespace.clone()),
                name: Some(name.clone()),
                uid,
                ..ObjectReference::default()
            },
            type_: Some("Warning".into()),
            reason: Some(reason.into()),
            action: Some(reason.into()),
            message: Some(message.chars().take(1000).collect()),
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            source: Some(EventSource { component: Some("eviction-autoscaler".into()), host: None }),
            ..Event::default()
        };
        let events: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        if let Err(error) = events.create(&PostParams::default(), &event).await {
            tracing::warn!(%error, %reason, "cannot record an Event on the certificate Secret");
        }
    }

    fn log_written(&self, action: &Action) {
        let (namespace, secret) = (&self.settings.namespace, &self.settings.secret_name);
        match action {
            Action::Create => {
                self.metrics.cert_secret_replaced();
                tracing::info!(%namespace, %secret, "created the webhook certificate Secret (new CA and serving certificate)");
            }
            Action::Replace { reason } => {
                self.metrics.cert_secret_replaced();
                tracing::warn!(%namespace, %secret, %reason, "replaced the unusable webhook certificate Secret");
            }
            Action::Renew { reason } => {
                self.metrics.cert_rotated();
                tracing::info!(%namespace, %secret, %reason, "issued a new serving certificate");
            }
            Action::AddNextCa { reason } => {
                self.metrics.cert_rotated();
                tracing::info!(%namespace, %secret, %reason, "added a new CA to ca.crt; the serving certificate moves to it once every caBundle holds it");
            }
            Action::Use { .. } | Action::WaitForBundle { .. } => {}
        }
    }
}

fn current_of(data: &Data, action: &Action, now: i64, resync: Duration) -> Result<Current, String> {
    let get =
        |key: &str| data.get(key).map(|v| v.0.clone()).ok_or_else(|| format!("the Secret has no {key}"));
    let recheck_at = match action {
        Action::Use { recheck_at } | Action::WaitForBundle { until: Some(recheck_at), .. } => *recheck_at,
        _ => now.saturating_add(i64::try_from(resync.as_secs()).unwrap_or(i64::MAX)),
    };
    Ok(Current {
        pair: PemPair { cert: get(TLS_CRT)?, key: get(TLS_KEY)? },
        ca_crt: get(CA_CRT)?,
        recheck_at,
    })
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// Notifies on every event of the object `name` (a watch with a field selector); errors are
/// retried with the watcher's backoff, and the periodic resync covers the gap.
async fn watch_by_name<K>(api: Api<K>, name: String, changed: Arc<Notify>)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    use kube::runtime::WatchStreamExt as _;
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(watcher(api, config).default_backoff());
    while let Some(event) = events.next().await {
        match event {
            // `Init` starts every (re)list, also one about to fail: not news about the object.
            Ok(watcher::Event::Init) => {}
            Ok(_) => changed.notify_one(),
            Err(error) => tracing::debug!(%error, %name, "watch failed; retrying"),
        }
    }
}

#[cfg(test)]
mod tests;
