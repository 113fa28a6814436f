//! The Kubernetes plumbing of the runtime: caches fed by watches (`caches`, `cached`, the
//! watches' decoding `decode`), the
//! CRDs it follows (`crds`), the one writer and the Lease holder's gate (`write`), leader
//! election (`leader`) and Events (`recorder`).

pub mod cached;
pub mod caches;
pub mod crds;
pub mod decode;
pub mod leader;
pub mod recorder;
pub mod write;
