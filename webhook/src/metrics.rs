//! Webhook metrics. Handles for the hot path (eviction allowed / dry run, its histogram) are
//! resolved once at construction, so an admission does no label-map lookup.

use std::fmt::Write as _;
use std::sync::Arc;

use eviction_autoscaler_shared::admission::HoldEnd;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// The webhook endpoint a request was for (bounded label: unknown paths are `other`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Eviction,
    Deployment,
    Pdb,
    Other,
}

impl Endpoint {
    pub(crate) fn from_path(path: &str) -> Self {
        match path {
            "/validate-eviction" => Self::Eviction,
            "/validate-deployment" => Self::Deployment,
            "/validate-pdb" => Self::Pdb,
            _ => Self::Other,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Eviction => "/validate-eviction",
            Self::Deployment => "/validate-deployment",
            Self::Pdb => "/validate-pdb",
            Self::Other => "other",
        }
    }
}

impl EncodeLabelValue for Endpoint {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(self.as_str())
    }
}

/// How a request ended: the admitted outcomes, then one value per kind of client mistake.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)] // the variant names are the label values
pub(crate) enum Outcome {
    /// Allowed and delivered (signal offered, or object handed to the handler).
    allowed,
    /// An eviction allowed after a hold (`webhook_evictions_held` says how it ended).
    held,
    /// Allowed; a dry run, so nothing was delivered.
    dry_run,
    /// Allowed; nothing to deliver (another operation, or no pod name).
    ignored,
    not_json,
    malformed,
    wrong_type,
    missing_request,
    missing_uid,
    wrong_object,
    wrong_content_type,
    too_large,
    body_error,
    unknown_path,
    wrong_method,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    path: Endpoint,
    result: Outcome,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PathLabels {
    path: Endpoint,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HoldLabels {
    outcome: &'static str,
}

/// Hold durations in seconds: a surge pod Ready within one to a few seconds, up to the largest
/// hold (25 s).
const HOLD_BUCKETS: [f64; 11] = [0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 25.0];

/// Buckets in seconds: fine below 1 ms, where the handler lives (a parse-and-allow takes a few
/// microseconds), coarse above.
const DURATION_BUCKETS: [f64; 22] = [
    0.000_002_5,
    0.000_005,
    0.000_01,
    0.000_02,
    0.000_03,
    0.000_04,
    0.000_05,
    0.000_06,
    0.000_08,
    0.000_1,
    0.000_15,
    0.000_2,
    0.000_3,
    0.000_5,
    0.001,
    0.002_5,
    0.005,
    0.01,
    0.025,
    0.1,
    0.5,
    2.5,
];

fn new_duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// All webhook metrics; clones share the same counters.
#[derive(Clone, Debug)]
pub struct Metrics {
    requests: Family<RequestLabels, Counter>,
    durations: Family<PathLabels, Histogram, fn() -> Histogram>,
    signals_emitted: Counter,
    signals_dropped: Counter,
    dry_runs_ignored: Counter,
    objects_undecodable: Counter,
    objects_dropped: Counter,
    holds: Family<HoldLabels, Counter>,
    hold_durations: Histogram,
    cert_reloads: Counter,
    cert_reload_failures: Counter,
    cert_rotations: Counter,
    cert_secret_replacements: Counter,
    ca_bundle_repairs: Counter,
    hot: Arc<HotPath>,
}

#[derive(Debug)]
struct HotPath {
    eviction_allowed: Counter,
    eviction_dry_run: Counter,
    eviction_duration: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates the metrics (not yet registered anywhere).
    pub fn new() -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let durations: Family<PathLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(new_duration_histogram);
        let hot = HotPath {
            eviction_allowed: requests
                .get_or_create_owned(&RequestLabels { path: Endpoint::Eviction, result: Outcome::allowed }),
            eviction_dry_run: requests
                .get_or_create_owned(&RequestLabels { path: Endpoint::Eviction, result: Outcome::dry_run }),
            eviction_duration: durations.get_or_create_owned(&PathLabels { path: Endpoint::Eviction }),
        };
        // Every hold outcome from the start at 0, so a rate has data before the first hold.
        let holds = Family::<HoldLabels, Counter>::default();
        for end in HoldEnd::ALL {
            holds.get_or_create_owned(&HoldLabels { outcome: end.as_str() });
        }
        Self {
            requests,
            durations,
            signals_emitted: Counter::default(),
            signals_dropped: Counter::default(),
            dry_runs_ignored: Counter::default(),
            objects_undecodable: Counter::default(),
            objects_dropped: Counter::default(),
            holds,
            hold_durations: Histogram::new(HOLD_BUCKETS),
            cert_reloads: Counter::default(),
            cert_reload_failures: Counter::default(),
            cert_rotations: Counter::default(),
            cert_secret_replacements: Counter::default(),
            ca_bundle_repairs: Counter::default(),
            hot: Arc::new(hot),
        }
    }

    /// Registers every metric; `main` gives a registry with the `eviction_autoscaler` prefix.
    pub fn register(&self, registry: &mut Registry) {
        registry.register("webhook_requests", "Admission requests by path and result", self.requests.clone());
        registry.register_with_unit(
            "webhook_request_duration",
            "Time spent handling an admission request, from handler entry to response",
            Unit::Seconds,
            self.durations.clone(),
        );
        registry.register(
            "webhook_signals_emitted",
            "Eviction signals handed to the controller",
            self.signals_emitted.clone(),
        );
        registry.register(
            "webhook_signals_dropped",
            "Eviction signals dropped because the controller's signal lane was full",
            self.signals_dropped.clone(),
        );
        registry.register(
            "webhook_dry_runs_ignored",
            "Dry-run admissions that produced no signal and no side effect",
            self.dry_runs_ignored.clone(),
        );
        registry.register(
            "webhook_objects_undecodable",
            "Admitted Deployments or PDBs that could not be decoded for the handler",
            self.objects_undecodable.clone(),
        );
        registry.register(
            "webhook_objects_dropped",
            "Admitted Deployments or PDBs not handed to the controller because a burst had the most \
             allowed in flight (the controller still acts on them from its watch)",
            self.objects_dropped.clone(),
        );
        registry.register(
            "webhook_evictions_held",
            "Evictions held while the surge opened their budget, by how the hold ended: opened (the \
             apiserver's PDB check then passes), expired (--eviction-hold or the call's deadline ran out), \
             shed (over the replica's cap, answered at once), stopped (the surge could not help any more), \
             shutdown",
            self.holds.clone(),
        );
        registry.register_with_unit(
            "webhook_eviction_hold_duration",
            "How long held evictions waited before they were allowed",
            Unit::Seconds,
            self.hold_durations.clone(),
        );
        registry.register(
            "webhook_cert_reloads",
            "Serving certificates loaded after a change of the certificate files",
            self.cert_reloads.clone(),
        );
        registry.register(
            "webhook_cert_reload_failures",
            "Changed certificate files that could not be loaded (the previous certificate kept serving)",
            self.cert_reload_failures.clone(),
        );
        registry.register(
            "webhook_cert_rotations",
            "Certificates issued by this replica into the self-managed Secret to renew one (serving certificate or CA)",
            self.cert_rotations.clone(),
        );
        registry.register(
            "webhook_cert_secret_replacements",
            "Self-managed Secrets created or replaced by this replica because they were missing or unusable",
            self.cert_secret_replacements.clone(),
        );
        registry.register(
            "webhook_ca_bundle_repairs",
            "Webhook configurations whose caBundle this replica set to the Secret's ca.crt",
            self.ca_bundle_repairs.clone(),
        );
    }

    /// Counts one finished request and its duration.
    pub(crate) fn observe(&self, path: Endpoint, result: Outcome, seconds: f64) {
        match (path, result) {
            (Endpoint::Eviction, Outcome::allowed) => {
                self.hot.eviction_allowed.inc();
            }
            (Endpoint::Eviction, Outcome::dry_run) => {
                self.hot.eviction_dry_run.inc();
            }
            _ => {
                self.requests.get_or_create(&RequestLabels { path, result }).inc();
            }
        }
        if path == Endpoint::Eviction {
            self.hot.eviction_duration.observe(seconds);
        } else {
            self.durations.get_or_create(&PathLabels { path }).observe(seconds);
        }
    }

    pub(crate) fn signal_emitted(&self) {
        self.signals_emitted.inc();
    }

    pub(crate) fn signal_dropped(&self) {
        self.signals_dropped.inc();
    }

    pub(crate) fn dry_run_ignored(&self) {
        self.dry_runs_ignored.inc();
    }

    pub(crate) fn object_undecodable(&self) {
        self.objects_undecodable.inc();
    }

    pub(crate) fn object_dropped(&self) {
        self.objects_dropped.inc();
    }

    pub(crate) fn hold_ended(&self, end: HoldEnd, seconds: f64) {
        self.holds.get_or_create(&HoldLabels { outcome: end.as_str() }).inc();
        self.hold_durations.observe(seconds);
    }

    pub(crate) fn cert_reloaded(&self) {
        self.cert_reloads.inc();
    }

    pub(crate) fn cert_reload_failed(&self) {
        self.cert_reload_failures.inc();
    }

    pub(crate) fn cert_rotated(&self) {
        self.cert_rotations.inc();
    }

    pub(crate) fn cert_secret_replaced(&self) {
        self.cert_secret_replacements.inc();
    }

    pub(crate) fn ca_bundle_repaired(&self) {
        self.ca_bundle_repairs.inc();
    }

    /// Certificates rotated into the self-managed Secret by this replica so far.
    pub fn cert_rotations(&self) -> u64 {
        self.cert_rotations.get()
    }

    /// caBundle repairs by this replica so far.
    pub fn ca_bundle_repairs(&self) -> u64 {
        self.ca_bundle_repairs.get()
    }

    /// Certificate reload failures so far (for tests and logs).
    pub fn cert_reload_failures(&self) -> u64 {
        self.cert_reload_failures.get()
    }

    /// Certificate reloads so far.
    pub fn cert_reloads(&self) -> u64 {
        self.cert_reloads.get()
    }

    /// Signals put on the queue so far.
    pub fn signals_emitted(&self) -> u64 {
        self.signals_emitted.get()
    }

    /// Signals dropped on a full queue so far.
    pub fn signals_dropped(&self) -> u64 {
        self.signals_dropped.get()
    }

    /// Admitted objects dropped at the in-flight bound so far.
    pub fn objects_dropped(&self) -> u64 {
        self.objects_dropped.get()
    }

    /// Dry runs ignored so far.
    pub fn dry_runs_ignored(&self) -> u64 {
        self.dry_runs_ignored.get()
    }
}
