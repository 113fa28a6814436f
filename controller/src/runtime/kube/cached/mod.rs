//! What the caches hold of the kinds there are thousands of: only the fields decisions read,
//! compactly, converted back into the k8s-openapi type a decision takes when it reads one.
//!
//! k8s-openapi keeps every field inline, emptied or not (a `Deployment` is ~2.4 KB before its
//! strings, a `PodDisruptionBudget` ~0.6 KB), and a `BTreeMap` of labels or annotations
//! allocates a 544-byte node for even one entry. At 10,000 Deployments with a PDB each, that is
//! tens of MB. So the Deployment, PDB and EvictionAutoScaler caches hold [`CachedDeployment`],
//! [`CachedPdb`] and [`CachedEas`]: their metadata as [`CachedMeta`], string maps as
//! [`CompactMap`]s (`meta.rs`), nothing decisions never read (pod spec, PDB status
//! conditions). Tests in each file fail when a decision decides differently on the cached
//! view than on the object a real apiserver returned.

mod deployment;
mod eas;
mod meta;
mod pdb;

pub use deployment::CachedDeployment;
pub use eas::CachedEas;
pub use meta::{CachedMeta, CachedSelector, CompactMap};
pub use pdb::CachedPdb;
