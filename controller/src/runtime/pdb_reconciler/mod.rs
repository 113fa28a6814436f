//! Drives the default-PDB planner (`crate::pdb`): performs its one action per pass, emits its
//! Events, counts its outcomes. The reconciler runs on the Lease holder; the admission fast
//! paths (create at Deployment CREATE, retire on a covering user PDB) run on any replica, as
//! ARCHITECTURE.md §2 allows (create-if-absent and preconditioned deletes are idempotent).

pub mod memory;
mod reconcile;

pub use reconcile::{admitted_deployment, admitted_pdb, reconcile_deployment, reconcile_pdb};
