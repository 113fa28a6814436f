//! The controller runtime against the real control plane (`tests/cluster/`; `make test` builds
//! it): one test binary, each test on an apiserver of its own (`common.rs` says how).

mod common;
mod default_pdb;
mod drain;
mod keda;
mod leader;
mod signals;
mod surge;
mod write_errors;
