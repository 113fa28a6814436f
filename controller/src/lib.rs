//! The eviction-autoscaler controller: surges Deployments whose pods a drain displaces while
//! their PodDisruptionBudget blocks the eviction, and reverts them when the drain is over.
//!
//! * [`surge`], [`displaced`], [`eviction_hold`], [`eas`], [`adopt`]: the decisions, as pure functions.
//! * [`runtime`]: caches, leader election, signal intake and the evaluation loop.
//! * [`Controller`]: the entry point `main` wires (see README.md).

pub mod adopt;
pub mod audit;
pub mod cleanup;
pub mod displaced;
pub mod eas;
pub mod error;
pub mod eviction_hold;
#[cfg(test)]
mod fixtures;
pub mod keda;
pub mod pdb;
pub mod runtime;
pub mod surge;

pub use error::Error;
pub use runtime::Controller;
pub use runtime::metrics::Metrics;
