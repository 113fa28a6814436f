//! Domain types and pure logic shared by the webhook and the controller: configuration, the
//! EvictionAutoScaler CRD, annotation keys, surge and PDB arithmetic, what a PDB does to a drain, namespace scope, label
//! selector matching, the admission hand-over and readiness. No network I/O lives here.

pub mod admission;
pub mod budget;
pub mod config;
pub mod crd;
pub mod drain;
pub mod health;
pub mod keys;
pub mod pdb_audit;
#[cfg(test)]
mod properties;
pub mod scope;
pub mod selector;
pub mod surge;
