//! The eviction-autoscaler controller: surges Deployments whose pods a drain displaces while
//! their PodDisruptionBudget blocks the eviction, and reverts them when the drain is over.
//!
//! * [`surge`], [`displaced`], [`eas`], [`adopt`]: the decisions, as pure functions.
//! * [`runtime`]: caches, leader election, signal intake and the evaluation loop.
//! * [`run`] / [`Controller`]: the entry points `main` wires (see README.md).

pub mod adopt;
pub mod cleanup;
pub mod displaced;
pub mod eas;
pub mod error;
pub mod keda;
pub mod pdb;
pub mod runtime;
pub mod surge;

use std::future::Future;
use std::sync::Arc;

use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::health::Readiness;
use eviction_autoscaler_shared::signal::SignalReceiver;
use prometheus_client::registry::Registry;

pub use error::Error;
pub use runtime::Controller;
pub use runtime::admission::{AdmissionQueue, AdmissionReceiver, admission_queue};
pub use runtime::metrics::Metrics;

/// Registers the metrics now and returns the controller's future, which runs until
/// `shutdown` completes. Use [`Controller::new`] instead when the webhook needs the
/// controller's [`AdmissionQueue`] (`controller.admission_handler()`).
pub fn run(
    config: Arc<Config>,
    client: kube::Client,
    signals: SignalReceiver,
    readiness: Readiness,
    registry: &mut Registry,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> impl Future<Output = Result<(), Error>> {
    let controller = Controller::new(config, client, readiness, registry);
    controller.run(signals, shutdown)
}
