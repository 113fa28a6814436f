//! Deployments and PDBs the webhook admitted (`shared::admission`'s object lane): the default
//! PDB's fast paths on any replica, and the affected Deployments made due at once instead of
//! when the watch brings the object.

use std::sync::Arc;

use eviction_autoscaler_shared::admission::Admitted;
use tokio::sync::mpsc;
use tracing::debug;

use super::affected;
use crate::runtime::context::{Context, key_of};
use crate::runtime::pdb_reconciler as pdb;

/// Evaluates what admitted objects affect, until the queue closes.
pub async fn consume(ctx: Arc<Context>, mut admissions: mpsc::Receiver<Admitted>) {
    while let Some(admitted) = admissions.recv().await {
        match admitted {
            Admitted::DeploymentCreated(d) => {
                // Any replica: the PDB should exist before the Deployment's pods do.
                if ctx.config().controller_enabled
                    && let Some(uid) = ctx.default_pdbs.crd_uid()
                    && let Err(e) = pdb::admitted_deployment(&ctx, &d, &uid).await
                {
                    debug!(error = %e, "default PDB at admission failed; the reconciler will create it");
                }
                if let Some(key) = key_of(&d) {
                    ctx.queues.deployments.schedule_now(key);
                }
            }
            Admitted::PdbWritten(pdb) => {
                if !crate::pdb::is_ours(&pdb.metadata) && pdb.metadata.namespace.is_some() {
                    ctx.default_pdbs.remember_admitted((*pdb).clone());
                }
                if ctx.config().controller_enabled
                    && let Err(e) = pdb::admitted_pdb(&ctx, &pdb).await
                {
                    debug!(error = %e, "retiring a doubled default PDB failed; the reconciler will");
                }
                for key in affected::covered_by(&pdb, &ctx.caches) {
                    ctx.queues.deployments.schedule_now(key);
                }
            }
        }
    }
}
