//! The controller's Prometheus metrics. Register once with [`Metrics::register`]; the
//! registry is expected to carry the `eviction_autoscaler` prefix (counters get `_total`
//! from the encoder, so none is named with it).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use eviction_autoscaler_shared::pdb_audit::{PdbClass, SurgeBlocker};

use super::queue::ObjectKey;
use crate::audit::census::Census;

/// `signal_to_scale_latency` buckets, 1 ms … 100 s in 1-2-5 steps: they resolve the 50 ms a
/// drain's surge should take (issue 19) and the seconds a slow one does.
const LATENCY_BUCKETS: [f64; 16] =
    [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0];

/// Label: where a signal came from (`webhook`, `eas`, `drain`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabel {
    /// Signal source.
    pub source: String,
}

/// The scale actions counted in `scale_actions`, by the surge reconciler's outcome.
pub const SCALE_ACTIONS: [&str; 5] = ["surge", "step_up", "resurge", "revert", "expire"];

/// Label: a scale action ([`SCALE_ACTIONS`], and the rarer `override_recorded`, `other`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabel {
    /// The action.
    pub action: String,
}

/// Label: a `Degraded` reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    /// The reason.
    pub reason: String,
}

/// Label: what a PDB does to a drain (the audit's class).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabel {
    /// `blocks_all`, `unhealthy`, `overlapping`, `no_effect`, `ok`.
    pub class: String,
}

/// Labels: a default-PDB planner outcome and its reason (`""` when none).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PdbLabel {
    /// `created`, `updated`, `adopted`, `deleted`, `retired`, `handed_over`, `skipped`.
    pub outcome: String,
    /// Why (skip and delete reasons).
    pub reason: String,
}

/// Labels: a write's resource (`deployments`, `evictionautoscalers/status`, ...) and outcome
/// (`ok`, `conflict`, `forbidden`, `not_found`, `invalid`, `throttled`, `server_error`,
/// `refused`, `unreachable`, `timeout`, `cancelled`, `not_leader`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WriteLabel {
    /// The resource written.
    pub kind: String,
    /// How it ended.
    pub outcome: String,
}

/// Label: a reconciler (`surge`, `pdb`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcilerLabel {
    /// The reconciler.
    pub reconciler: String,
}

/// Labels: a reconciler and how it failed ([`crate::Error::metric_label`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabel {
    /// The reconciler.
    pub reconciler: String,
    /// The kind of failure.
    pub error: String,
}

/// Reconcile durations: 5 ms … ~20 s (the evaluation bound).
type Durations = Family<ReconcilerLabel, Histogram, fn() -> Histogram>;

/// All controller metrics; cheap to clone (shared atomics).
#[derive(Clone, Debug)]
pub struct Metrics {
    /// Eviction signals handled (counted once handled), by source.
    pub evictions_seen: Family<SourceLabel, Counter>,
    /// Signals for pods whose PDB allowed no disruption.
    pub blocked_evictions: Counter,
    /// Signals settled: taken into account by a surge evaluation (after any write it made for
    /// them), or needing none (the pod gone, not a Deployment's, a signal already known).
    pub signals_settled: Counter,
    /// Scale writes acknowledged by the API, by action.
    pub scale_actions: Family<ActionLabel, Counter>,
    /// Deployments currently surged.
    pub active_surges: Gauge,
    /// Surges still up although their last signal is older than max-hold + cooldown: the
    /// revert keeps failing (alerted on).
    pub surges_overdue: Gauge,
    /// 1 while this replica holds the Lease (or leader election is off), else 0.
    pub leader: Gauge,
    /// Evictions this replica's webhook holds now, counted where each hold is registered (so
    /// never above the cap, and an eviction answered at once is never counted).
    pub evictions_holding: Gauge,
    /// Deployments currently degraded, by reason.
    pub degraded: Family<ReasonLabel, Gauge>,
    /// An episode's first trigger (a blocking eviction signal, or the drain edge of a node the
    /// Deployment has pods on) → surge write acknowledged.
    pub signal_to_scale_latency: Histogram,
    /// PDBs by what they do to a drain now (the audit's classes), from the caches.
    pub pdbs: Family<ClassLabel, Gauge>,
    /// PDBs that block a drain and that our surge cannot open, by why not.
    pub drain_blockers: Family<ReasonLabel, Gauge>,
    /// Default-PDB actions done, by outcome and reason.
    pub pdb_actions: Family<PdbLabel, Counter>,
    /// API writes, by resource and outcome (counted by `runtime::kube::write`).
    pub writes: Family<WriteLabel, Counter>,
    /// API writes that waited for the client rate limit (`--kube-api-qps`/`--kube-api-burst`).
    pub writes_rate_limited: Counter,
    /// Failed reconciles, by reconciler and kind of failure.
    pub reconcile_failures: Family<FailureLabel, Counter>,
    /// How long reconciles took, by reconciler.
    pub reconcile_duration: Durations,
    /// Per-Deployment degraded reason, to keep the gauge family exact.
    degraded_by_key: Arc<Mutex<HashMap<ObjectKey, &'static str>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Fresh, unregistered metrics.
    pub fn new() -> Self {
        let metrics = Self {
            evictions_seen: Family::default(),
            blocked_evictions: Counter::default(),
            signals_settled: Counter::default(),
            scale_actions: Family::default(),
            active_surges: Gauge::default(),
            surges_overdue: Gauge::default(),
            leader: Gauge::default(),
            evictions_holding: Gauge::default(),
            degraded: Family::default(),
            signal_to_scale_latency: Histogram::new(LATENCY_BUCKETS.iter().copied()),
            pdbs: Family::default(),
            drain_blockers: Family::default(),
            pdb_actions: Family::default(),
            writes: Family::default(),
            writes_rate_limited: Counter::default(),
            reconcile_failures: Family::default(),
            reconcile_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.005, 2.0, 13))
            }),
            degraded_by_key: Arc::default(),
        };
        // Series of known labels exist from the start at 0, so rates and dashboards have data
        // before the first surge, and the census gauges before the first census.
        for action in SCALE_ACTIONS {
            metrics.scale_actions.get_or_create_owned(&ActionLabel { action: action.to_owned() });
        }
        metrics.publish_census(None);
        metrics
    }

    /// Registers every metric in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "evictions_seen",
            "Eviction signals handled, by source",
            self.evictions_seen.clone(),
        );
        registry.register(
            "signals_settled",
            "Eviction signals settled: taken into account by a surge evaluation, after any write it made for them, or needing none",
            self.signals_settled.clone(),
        );
        registry.register(
            "blocked_evictions",
            "Evictions seen while the pod's PodDisruptionBudget allowed no disruption",
            self.blocked_evictions.clone(),
        );
        registry.register(
            "scale_actions",
            "Scale writes acknowledged by the API, by action",
            self.scale_actions.clone(),
        );
        registry.register("active_surges", "Deployments currently surged", self.active_surges.clone());
        registry.register(
            "surges_overdue",
            "Surges still up although their last signal is older than max-hold plus cooldown",
            self.surges_overdue.clone(),
        );
        registry.register("leader", "1 while this replica holds the Lease, else 0", self.leader.clone());
        // Named for the webhook, whose calls it counts; the controller registers the holds.
        registry.register(
            "webhook_evictions_holding",
            "Evictions held right now, waiting for their budget to open",
            self.evictions_holding.clone(),
        );
        registry.register(
            "degraded",
            "Deployments whose surge is degraded, by reason",
            self.degraded.clone(),
        );
        registry.register_with_unit(
            "signal_to_scale_latency",
            "Time from a surge's first trigger (blocking eviction signal or drain edge) to its acknowledged write",
            Unit::Seconds,
            self.signal_to_scale_latency.clone(),
        );
        registry.register(
            "pdbs",
            "PodDisruptionBudgets by what they do to a drain now (blocks_all, unhealthy, overlapping, no_effect, ok), reported by the Lease holder",
            self.pdbs.clone(),
        );
        registry.register(
            "drain_blockers",
            "PodDisruptionBudgets that block a drain and that a surge cannot open, by why not, reported by the Lease holder",
            self.drain_blockers.clone(),
        );
        registry.register(
            "pdb_actions",
            "Default-PDB actions done, by outcome and reason",
            self.pdb_actions.clone(),
        );
        registry.register("writes", "API writes, by resource and outcome", self.writes.clone());
        registry.register(
            "writes_rate_limited",
            "API writes that waited for the client rate limit (kube-api-qps, kube-api-burst)",
            self.writes_rate_limited.clone(),
        );
        registry.register(
            "reconcile_failures",
            "Failed reconciles, by reconciler and kind of failure",
            self.reconcile_failures.clone(),
        );
        registry.register_with_unit(
            "reconcile_duration",
            "How long reconciles took, by reconciler",
            Unit::Seconds,
            self.reconcile_duration.clone(),
        );
    }

    /// Records one reconcile: its duration and, if it failed, how.
    pub fn reconciled(&self, reconciler: &str, took: std::time::Duration, failure: Option<&str>) {
        let label = ReconcilerLabel { reconciler: reconciler.to_owned() };
        self.reconcile_duration.get_or_create(&label).observe(took.as_secs_f64());
        if let Some(error) = failure {
            let label = FailureLabel { reconciler: reconciler.to_owned(), error: error.to_owned() };
            self.reconcile_failures.get_or_create(&label).inc();
        }
    }

    /// Sets the `pdbs` and `drain_blockers` gauges: every class and every reason, 0 when
    /// none counts (or without a census: this replica does not report them).
    pub fn publish_census(&self, census: Option<&Census>) {
        for class in PdbClass::NAMES {
            let count = census.map_or(0, |c| c.pdbs.get(class).copied().unwrap_or_default());
            self.pdbs.get_or_create(&ClassLabel { class: class.to_owned() }).set(count);
        }
        for reason in SurgeBlocker::REASONS {
            let count = census.map_or(0, |c| c.drain_blockers.get(reason).copied().unwrap_or_default());
            self.drain_blockers.get_or_create(&ReasonLabel { reason: reason.to_owned() }).set(count);
        }
    }

    /// Counts a default-PDB action.
    pub fn pdb_action(&self, outcome: &str, reason: &str) {
        self.pdb_actions
            .get_or_create(&PdbLabel { outcome: outcome.to_owned(), reason: reason.to_owned() })
            .inc();
    }

    /// Counts a signal.
    pub fn signal(&self, source: &str) {
        self.evictions_seen.get_or_create(&SourceLabel { source: source.to_owned() }).inc();
    }

    /// Counts a scale write.
    pub fn action(&self, action: &str) {
        self.scale_actions.get_or_create(&ActionLabel { action: action.to_owned() }).inc();
    }

    /// Records the degraded reason (or none) of one Deployment.
    pub fn set_degraded(&self, key: &ObjectKey, reason: Option<&'static str>) {
        let mut by_key = self.degraded_by_key.lock();
        let previous = match reason {
            Some(r) => by_key.insert(key.clone(), r),
            None => by_key.remove(key),
        };
        if previous == reason {
            return;
        }
        if let Some(old) = previous {
            self.degraded.get_or_create(&ReasonLabel { reason: old.to_owned() }).dec();
        }
        if let Some(new) = reason {
            self.degraded.get_or_create(&ReasonLabel { reason: new.to_owned() }).inc();
        }
    }

    /// Forgets every Deployment's degraded reason (this replica no longer reports them).
    pub fn clear_degraded(&self) {
        let mut by_key = self.degraded_by_key.lock();
        for (_, reason) in by_key.drain() {
            self.degraded.get_or_create(&ReasonLabel { reason: reason.to_owned() }).dec();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_without_panicking_and_encodes_names() {
        let metrics = Metrics::new();
        let mut registry = Registry::with_prefix("eviction_autoscaler");
        metrics.register(&mut registry);
        metrics.signal("webhook");
        metrics.action("surge");
        let key = |name: &str| ("prod".to_owned(), name.to_owned());
        metrics.set_degraded(&key("web"), Some("MultiplePDBs"));
        metrics.set_degraded(&key("web"), Some("MultiplePDBs"));
        metrics.set_degraded(&key("api"), Some("MultiplePDBs"));
        metrics.set_degraded(&key("web"), None);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        assert!(text.contains("eviction_autoscaler_evictions_seen_total{source=\"webhook\"} 1"), "{text}");
        assert!(text.contains("eviction_autoscaler_scale_actions_total{action=\"surge\"} 1"));
        assert!(text.contains("eviction_autoscaler_degraded{reason=\"MultiplePDBs\"} 1"), "{text}");
        assert!(text.contains("eviction_autoscaler_signal_to_scale_latency_seconds_bucket"));
        metrics.reconciled("surge", std::time::Duration::from_millis(3), None);
        metrics.reconciled("pdb", std::time::Duration::from_secs(1), Some("conflict"));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        assert!(
            text.contains("eviction_autoscaler_reconcile_duration_seconds_count{reconciler=\"surge\"} 1"),
            "{text}"
        );
        assert!(text.contains("eviction_autoscaler_reconcile_duration_seconds_count{reconciler=\"pdb\"} 1"));
        assert!(text.contains(
            "eviction_autoscaler_reconcile_failures_total{reconciler=\"pdb\",error=\"conflict\"} 1"
        ));
        assert!(!text.contains("reconcile_failures_total{reconciler=\"surge\""), "a success is no failure");
        let mut census = Census::default();
        census.pdbs.insert("blocks_all", 3);
        census.drain_blockers.insert("opted_out", 2);
        metrics.publish_census(Some(&census));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        assert!(text.contains("eviction_autoscaler_pdbs{class=\"blocks_all\"} 3"), "{text}");
        assert!(text.contains("eviction_autoscaler_pdbs{class=\"ok\"} 0"), "every class is exported: {text}");
        assert!(text.contains("eviction_autoscaler_drain_blockers{reason=\"opted_out\"} 2"), "{text}");
        assert!(text.contains("eviction_autoscaler_drain_blockers{reason=\"no_room\"} 0"), "{text}");
        metrics.publish_census(None);
        metrics.clear_degraded();
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        assert!(text.contains("eviction_autoscaler_degraded{reason=\"MultiplePDBs\"} 0"), "{text}");
        assert!(text.contains("eviction_autoscaler_pdbs{class=\"blocks_all\"} 0"), "{text}");
    }
}
