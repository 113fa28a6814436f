//! The controller's [`AdmissionHandler`]: the webhook hands admitted Deployments and PDBs
//! over without waiting; the controller evaluates the affected Deployments at once instead of
//! waiting for the watch.

use std::sync::Arc;

use eviction_autoscaler_shared::admission::AdmissionHandler;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use tokio::sync::mpsc;
use tracing::debug;

use super::context::{Context, key_of};
use super::{affected, pdb};

/// One admitted object.
#[derive(Clone, Debug)]
pub enum Admitted {
    /// A Deployment CREATE.
    DeploymentCreated(Box<Deployment>),
    /// A PDB CREATE or UPDATE.
    PdbWritten(Box<PodDisruptionBudget>),
}

/// Producer side given to the webhook; never blocks (drops when full).
#[derive(Clone, Debug)]
pub struct AdmissionQueue(mpsc::Sender<Admitted>);

/// Consumer side, handed to the controller.
#[derive(Debug)]
pub struct AdmissionReceiver(pub(crate) mpsc::Receiver<Admitted>);

/// A queue of admitted objects holding at most `capacity` (≥ 1) items.
pub fn admission_queue(capacity: usize) -> (AdmissionQueue, AdmissionReceiver) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (AdmissionQueue(tx), AdmissionReceiver(rx))
}

impl AdmissionHandler for AdmissionQueue {
    fn deployment_created(&self, deployment: Deployment) {
        if self.0.try_send(Admitted::DeploymentCreated(Box::new(deployment))).is_err() {
            debug!("admission queue full; the watch will bring the Deployment");
        }
    }

    fn pdb_written(&self, pdb: PodDisruptionBudget) {
        if self.0.try_send(Admitted::PdbWritten(Box::new(pdb))).is_err() {
            debug!("admission queue full; the watch will bring the PDB");
        }
    }
}

impl AdmissionReceiver {
    /// Takes the next admitted object; `None` once every sender is gone.
    pub async fn recv(&mut self) -> Option<Admitted> {
        self.0.recv().await
    }
}

/// Evaluates what admitted objects affect, until the queue closes.
pub async fn consume(ctx: Arc<Context>, mut admissions: AdmissionReceiver) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_blocks_when_full() {
        let (queue, mut rx) = admission_queue(1);
        queue.deployment_created(Deployment::default());
        queue.pdb_written(PodDisruptionBudget::default()); // dropped, not awaited
        assert!(matches!(rx.0.try_recv(), Ok(Admitted::DeploymentCreated(_))));
        assert!(rx.0.try_recv().is_err());
    }
}
