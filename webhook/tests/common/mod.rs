//! Helpers shared by the webhook's integration tests.
#![allow(dead_code)] // each test binary uses a different subset

pub mod tls;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eviction_autoscaler_shared::admission::{AdmissionHandler, Signal};
use eviction_autoscaler_webhook::Metrics;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use prometheus_client::registry::Registry;

/// A fixture from tests/data.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// Records what the webhook hands over; signals up to a capacity, as the controller's queue
/// takes them (beyond it they are refused until one is taken).
#[derive(Default)]
pub struct RecordingHandler {
    pub signals: Mutex<std::collections::VecDeque<Signal>>,
    pub signal_capacity: usize,
    pub deployments: Mutex<Vec<Deployment>>,
    pub pdbs: Mutex<Vec<PodDisruptionBudget>>,
}

impl AdmissionHandler for RecordingHandler {
    fn eviction(&self, signal: Signal) -> bool {
        let mut signals = self.signals.lock().unwrap_or_else(|p| p.into_inner());
        let room = signals.len() < self.signal_capacity;
        if room {
            signals.push_back(signal);
        }
        room
    }
    fn deployment_created(&self, deployment: Deployment) {
        self.deployments.lock().unwrap_or_else(|p| p.into_inner()).push(deployment);
    }
    fn pdb_written(&self, pdb: PodDisruptionBudget) {
        self.pdbs.lock().unwrap_or_else(|p| p.into_inner()).push(pdb);
    }
}

impl RecordingHandler {
    pub fn new() -> Arc<Self> {
        Self::with_signal_capacity(64)
    }
    pub fn with_signal_capacity(signal_capacity: usize) -> Arc<Self> {
        Arc::new(Self { signal_capacity, ..Self::default() })
    }
    /// Takes the oldest signal handed over.
    pub fn take_signal(&self) -> Option<Signal> {
        self.signals.lock().unwrap_or_else(|p| p.into_inner()).pop_front()
    }
    pub fn deployment_names(&self) -> Vec<String> {
        let list = self.deployments.lock().unwrap_or_else(|p| p.into_inner());
        list.iter().map(|d| d.metadata.name.clone().unwrap_or_default()).collect()
    }
    pub fn pdb_names(&self) -> Vec<String> {
        let list = self.pdbs.lock().unwrap_or_else(|p| p.into_inner());
        list.iter().map(|d| d.metadata.name.clone().unwrap_or_default()).collect()
    }
}

/// Polls `condition` until it holds or `within` passes; returns whether it held.
pub async fn eventually(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The OpenMetrics text of `metrics` registered with the product's prefix.
pub fn metrics_text(metrics: &Metrics) -> String {
    let mut registry = Registry::with_prefix("eviction_autoscaler");
    metrics.register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap_or_else(|e| panic!("encode: {e}"));
    text
}

/// The value of one sample line (`name{labels} value`) in OpenMetrics text, 0 if absent.
pub fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|value| value.parse().ok())
        .unwrap_or(0.0)
}
