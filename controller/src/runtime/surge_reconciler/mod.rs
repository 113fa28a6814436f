//! The surge reconciler: per Deployment, observe (caches, pods on demand), plan with the pure
//! state machine (`crate::surge`), write once, then keep its EvictionAutoScalers in step.

mod eas_sync;
pub mod memory;
pub(crate) mod observe;
mod reconcile;

pub use reconcile::{reconcile, write_patch};
