//! The cluster's behaviour as pure decision logic (issue "kube-sim, part 2"): PDB status,
//! eviction, rollouts, scheduling, admission-webhook matching and judging, garbage
//! collection and HPA/KEDA. Inputs and outputs are JSON objects; clocks, uids and I/O are the
//! caller's, so every rule is table-tested here and the store wires them in as controllers.

pub mod admission;
pub mod common;
pub mod crd_status;
pub mod daemonset;
pub mod disruption;
pub mod eviction;
pub mod gc;
pub mod hpa;
pub mod kubelet;
pub mod namespace_deletion;
pub mod replicaset;
pub mod rollout;
pub mod scheduler;
pub mod service_ips;

#[cfg(test)]
mod test_support;
