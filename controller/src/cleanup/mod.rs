//! `eviction-autoscaler cleanup [--dry-run] [--stop-deployment NS/NAME]` (before uninstall):
//! stops the product if asked ([`stop`]), then executes [`plan_cleanup`] against the cluster,
//! in the plan's order (surges, hand-overs, PDB deletes, EvictionAutoScaler objects), and,
//! the product stopped, removes what it made for itself ([`OwnObject`]). See
//! [`plan`] for what is planned.
//!
//! Every write is guarded (resourceVersion / UID / JSON-patch `test`) and re-checked from a
//! fresh read after a Conflict, so an object that stopped being ours meanwhile is left alone.
//! NotFound means done. Running it again finds nothing to do.

use std::fmt;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::json;

use eviction_autoscaler_shared::crd::EvictionAutoScaler;
use eviction_autoscaler_shared::drain;

use crate::error::{Error, is_conflict, is_not_found};
use crate::keda::ScaledObject;
use crate::pdb::{HandOverPdb, OwnedPdb};

use self::plan::{CleanupPlan, EasToRemove, SurgeCandidate, SurgeToRevert, SurgedKind, plan_cleanup};
use crate::runtime::surge_reconciler::write_patch;
use crate::surge::Write;
use crate::surge::scaler::Scaler;
use crate::surge::state::{SurgeState, clear_edits};
pub use stop::{OwnObject, ProductDeployment, namespaced_name};

pub mod plan;
mod stop;

/// Fresh reads and writes per step before a step that keeps conflicting is left for the next
/// run (someone else keeps changing the object).
const MAX_ATTEMPTS: usize = 5;

/// Finalizers we (or the Go project) put on EvictionAutoScaler objects share this prefix.
const OUR_FINALIZER_PREFIX: &str = "eviction-autoscaler.azure.com/";

/// How one step ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// `--dry-run`: not performed.
    WouldDo,
    /// Performed.
    Done,
    /// The object was already gone or already clean.
    AlreadyDone,
    /// Left alone, with why (no longer ours, kept changing, a foreign finalizer remains).
    Skipped(String),
}

/// One step of the plan and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The plan's line for it ([`CleanupPlan::describe`]).
    pub action: String,
    /// What happened.
    pub outcome: StepOutcome,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            StepOutcome::WouldDo => write!(f, "would {}", self.action),
            StepOutcome::Done => write!(f, "{}: done", self.action),
            StepOutcome::AlreadyDone => write!(f, "{}: already done", self.action),
            StepOutcome::Skipped(why) => write!(f, "{}: skipped ({why})", self.action),
        }
    }
}

/// What `cleanup` did (or, with `dry_run`, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Nothing was written.
    pub dry_run: bool,
    /// Every step, in execution order.
    pub steps: Vec<Step>,
}

impl CleanupReport {
    /// Prints a step as it ends and keeps it.
    fn record(&mut self, action: String, outcome: StepOutcome) {
        let step = Step { action, outcome };
        println!("{step}");
        self.steps.push(step);
    }

    /// The closing line.
    pub fn summary(&self) -> String {
        let count =
            |wanted: fn(&StepOutcome) -> bool| self.steps.iter().filter(|s| wanted(&s.outcome)).count();
        if self.steps.is_empty() {
            "nothing to do: no surges, owned PDBs or EvictionAutoScaler objects left".to_owned()
        } else if self.dry_run {
            format!("dry run: {} actions listed, nothing changed", self.steps.len())
        } else {
            format!(
                "cleanup finished: {} done, {} already done, {} skipped",
                count(|o| *o == StepOutcome::Done),
                count(|o| *o == StepOutcome::AlreadyDone),
                count(|o| matches!(o, StepOutcome::Skipped(_)))
            )
        }
    }
}

/// Stops `product` first (if given; see [`stop`]), then reads the cluster, plans, and (unless
/// `dry_run`) executes the plan, then removes the stopped product's [`OwnObject`]s, printing
/// one line per step to stdout as it goes (so the steps done before an error are visible too).
pub async fn run(
    client: Client,
    dry_run: bool,
    product: Option<(&ProductDeployment, &[OwnObject])>,
) -> Result<CleanupReport, Error> {
    let mut report = CleanupReport { dry_run, steps: Vec::new() };
    if let Some((deployment, _)) = product {
        let outcome = if dry_run { StepOutcome::WouldDo } else { deployment.stop(&client).await? };
        report.record(deployment.action(), outcome);
    }
    let own = product.map_or(&[][..], |(_, own)| own);
    let plan = read_plan(&client).await?;
    let mut actions = plan.describe().into_iter().chain(own.iter().map(OwnObject::action));
    if dry_run {
        actions.for_each(|action| report.record(action, StepOutcome::WouldDo));
        return Ok(report);
    }
    let mut record = |outcome: StepOutcome| report.record(actions.next().unwrap_or_default(), outcome);
    let CleanupPlan { surges_to_revert, pdbs_to_hand_over, pdbs_to_delete, eas_to_remove } = &plan;
    for surge in surges_to_revert {
        record(revert_surge(&client, surge).await?);
    }
    for pdb in pdbs_to_hand_over {
        record(hand_over(&client, pdb).await?);
    }
    for pdb in pdbs_to_delete {
        record(delete_pdb(&client, pdb).await?);
    }
    for eas in eas_to_remove {
        record(remove_eas(&client, eas).await?);
    }
    for object in own {
        record(object.remove(&client).await?);
    }
    Ok(report)
}

/// Lists everything the planner needs (all namespaces) and plans.
async fn read_plan(client: &Client) -> Result<CleanupPlan, Error> {
    let deployments: Vec<Deployment> = list_all(client, "list deployments").await?;
    let hpas: Vec<HorizontalPodAutoscaler> = list_all(client, "list horizontalpodautoscalers").await?;
    let scaled_objects: Vec<ScaledObject> = list_all(client, "list scaledobjects").await?;
    let pdbs: Vec<PodDisruptionBudget> = list_all(client, "list poddisruptionbudgets").await?;
    let autoscalers: Vec<EvictionAutoScaler> = list_all(client, "list evictionautoscalers").await?;
    let candidates: Vec<SurgeCandidate> = deployments
        .iter()
        .map(|d| SurgeCandidate { kind: SurgedKind::Deployment, metadata: &d.metadata })
        .chain(
            hpas.iter()
                .map(|h| SurgeCandidate { kind: SurgedKind::HorizontalPodAutoscaler, metadata: &h.metadata }),
        )
        .chain(
            scaled_objects
                .iter()
                .map(|s| SurgeCandidate { kind: SurgedKind::ScaledObject, metadata: &s.metadata }),
        )
        .collect();
    Ok(plan_cleanup(&pdbs, &autoscalers, &candidates))
}

/// Every object of `K` in the cluster; none when its API is not installed (no KEDA, or the
/// CRD already deleted).
async fn list_all<K>(client: &Client, what: &str) -> Result<Vec<K>, Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug,
{
    match Api::<K>::all(client.clone()).list(&ListParams::default()).await {
        Ok(list) => Ok(list.items),
        Err(e) if is_not_found(&e) => Ok(Vec::new()),
        Err(source) => Err(Error::Step { what: what.to_owned(), api_error: source }),
    }
}

fn failed(what: String) -> impl FnOnce(kube::Error) -> Error {
    move |source| Error::Step { what, api_error: source }
}

/// Reverts one surge the way the surge controller does: the baseline is restored only while
/// the object still holds our surge value; our annotations always go.
async fn revert_surge(client: &Client, surge: &SurgeToRevert) -> Result<StepOutcome, Error> {
    let what = format!("revert surge on {} {}/{}", surge.kind.as_str(), surge.namespace, surge.name);
    for _ in 0..MAX_ATTEMPTS {
        let fresh = match surge.kind {
            SurgedKind::Deployment => get::<Deployment>(client, &surge.namespace, &surge.name).await,
            SurgedKind::HorizontalPodAutoscaler => {
                get::<HorizontalPodAutoscaler>(client, &surge.namespace, &surge.name).await
            }
            SurgedKind::ScaledObject => get::<ScaledObject>(client, &surge.namespace, &surge.name).await,
        }
        .map_err(failed(what.clone()))?;
        let Some(fresh) = fresh else { return Ok(StepOutcome::AlreadyDone) };
        let Some(write) = fresh.revert_write() else { return Ok(StepOutcome::AlreadyDone) };
        let result = match surge.kind {
            SurgedKind::Deployment => patch_merge::<Deployment>(client, &surge.namespace, &write).await,
            SurgedKind::HorizontalPodAutoscaler => {
                patch_merge::<HorizontalPodAutoscaler>(client, &surge.namespace, &write).await
            }
            SurgedKind::ScaledObject => patch_merge::<ScaledObject>(client, &surge.namespace, &write).await,
        };
        match result {
            Ok(()) if write.value.is_none() => {
                return Ok(StepOutcome::Skipped(
                    "kept its current value (changed meanwhile, or no usable baseline); dropped our annotations".into(),
                ));
            }
            Ok(()) => return Ok(StepOutcome::Done),
            Err(e) if is_not_found(&e) => return Ok(StepOutcome::AlreadyDone),
            Err(e) if is_conflict(&e) => continue,
            Err(source) => return Err(Error::Step { what, api_error: source }),
        }
    }
    Ok(StepOutcome::Skipped(format!("still changing after {MAX_ATTEMPTS} attempts; run cleanup again")))
}

/// A freshly read object that may carry a surge (boxed: the variants differ a lot in size).
enum Fresh {
    Deployment(Box<Deployment>),
    Hpa(Box<HorizontalPodAutoscaler>),
    ScaledObject(Box<ScaledObject>),
}

impl From<Deployment> for Fresh {
    fn from(d: Deployment) -> Self {
        Fresh::Deployment(Box::new(d))
    }
}
impl From<HorizontalPodAutoscaler> for Fresh {
    fn from(h: HorizontalPodAutoscaler) -> Self {
        Fresh::Hpa(Box::new(h))
    }
}
impl From<ScaledObject> for Fresh {
    fn from(s: ScaledObject) -> Self {
        Fresh::ScaledObject(Box::new(s))
    }
}

impl Fresh {
    fn scaler(&self) -> Scaler<'_> {
        match self {
            Fresh::Deployment(d) => Scaler::Deployment(d),
            Fresh::Hpa(h) => Scaler::Hpa(h),
            Fresh::ScaledObject(s) => Scaler::Keda(s),
        }
    }

    /// The guarded revert write, or `None` when none of our surge annotations is left.
    fn revert_write(&self) -> Option<Write> {
        let scaler = self.scaler();
        let annotations = scaler.annotations();
        let edits = clear_edits();
        if !edits.keys().any(|key| annotations.is_some_and(|all| all.contains_key(key))) {
            return None;
        }
        let state = SurgeState::read(annotations);
        let current = scaler.value();
        let value = match (state.surge_value, state.baseline) {
            // An autoscaler may legitimately go back to 0; a Deployment never (shared rule).
            (Some(surged), Some(0)) if scaler.zero_baseline_allowed() && current == surged => Some(0),
            (Some(surged), Some(baseline)) => drain::revert(current, surged, baseline).replicas,
            _ => None,
        };
        Some(Write {
            kind: scaler.kind(),
            name: scaler.name(),
            resource_version: scaler.resource_version(),
            value,
            annotations: edits,
            deployment_replicas: None,
        })
    }
}

async fn get<K>(client: &Client, namespace: &str, name: &str) -> Result<Option<Fresh>, kube::Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + fmt::Debug
        + Into<Fresh>,
{
    Ok(Api::<K>::namespaced(client.clone(), namespace).get_opt(name).await?.map(Into::into))
}

async fn patch_merge<K>(client: &Client, namespace: &str, write: &Write) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + fmt::Debug,
{
    let patch = Patch::Merge(write_patch(write));
    Api::<K>::namespaced(client.clone(), namespace)
        .patch(&write.name, &PatchParams::default(), &patch)
        .await?;
    Ok(())
}

/// Drops our owner reference from a PDB the user took over (the only write to a PDB that is
/// not ours), so deleting the CRD later does not garbage-collect it.
async fn hand_over(client: &Client, planned: &HandOverPdb) -> Result<StepOutcome, Error> {
    let what =
        format!("drop owner reference of poddisruptionbudget {}/{}", planned.namespace(), planned.name());
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), planned.namespace());
    let mut current = planned.clone();
    for _ in 0..MAX_ATTEMPTS {
        let ops: json_patch::Patch = serde_json::from_value(current.json_patch())
            .map_err(|e| Error::Step { what: what.clone(), api_error: kube::Error::SerdeError(e) })?;
        match api.patch(current.name(), &PatchParams::default(), &Patch::Json::<()>(ops)).await {
            Ok(_) => return Ok(StepOutcome::Done),
            Err(e) if is_not_found(&e) => return Ok(StepOutcome::AlreadyDone),
            Err(e) if is_conflict(&e) => {}
            Err(source) => return Err(Error::Step { what, api_error: source }),
        }
        let fresh = api.get_opt(current.name()).await.map_err(failed(what.clone()))?;
        match fresh.as_ref().and_then(HandOverPdb::of) {
            Some(again) => current = again,
            None => return Ok(StepOutcome::AlreadyDone),
        }
    }
    Ok(StepOutcome::Skipped(format!("still changing after {MAX_ATTEMPTS} attempts; run cleanup again")))
}

/// Deletes a PDB carrying `ownedBy: EvictionAutoScaler`, preconditioned on the version judged
/// ours; after a Conflict only if a fresh read is still ours.
async fn delete_pdb(client: &Client, planned: &OwnedPdb) -> Result<StepOutcome, Error> {
    let what = format!("delete poddisruptionbudget {}/{}", planned.namespace(), planned.name());
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), planned.namespace());
    let mut current = planned.clone();
    for _ in 0..MAX_ATTEMPTS {
        let wanted = current.delete_preconditions();
        let params = DeleteParams {
            preconditions: Some(Preconditions { resource_version: wanted.resource_version, uid: wanted.uid }),
            ..DeleteParams::default()
        };
        match api.delete(current.name(), &params).await {
            Ok(_) => return Ok(StepOutcome::Done),
            Err(e) if is_not_found(&e) => return Ok(StepOutcome::AlreadyDone),
            Err(e) if is_conflict(&e) => {}
            Err(source) => return Err(Error::Step { what, api_error: source }),
        }
        let fresh = api.get_opt(current.name()).await.map_err(failed(what.clone()))?;
        match fresh {
            None => return Ok(StepOutcome::AlreadyDone),
            Some(fresh) => match OwnedPdb::of(&fresh) {
                Some(again) => current = again,
                None => {
                    return Ok(StepOutcome::Skipped("no longer carries ownedBy: left to its owner".into()));
                }
            },
        }
    }
    Ok(StepOutcome::Skipped(format!("still changing after {MAX_ATTEMPTS} attempts; run cleanup again")))
}

/// Releases our (and the Go project's) finalizers of an EvictionAutoScaler object, then
/// deletes it. A finalizer of someone else is kept: the object then waits for its owner.
async fn remove_eas(client: &Client, planned: &EasToRemove) -> Result<StepOutcome, Error> {
    let what = format!("remove evictionautoscaler {}/{}", planned.namespace, planned.name);
    let api: Api<EvictionAutoScaler> = Api::namespaced(client.clone(), &planned.namespace);
    for _ in 0..MAX_ATTEMPTS {
        let Some(fresh) = api.get_opt(&planned.name).await.map_err(failed(what.clone()))? else {
            return Ok(StepOutcome::AlreadyDone);
        };
        let finalizers = fresh.metadata.finalizers.clone().unwrap_or_default();
        let foreign: Vec<String> =
            finalizers.iter().filter(|f| !f.starts_with(OUR_FINALIZER_PREFIX)).cloned().collect();
        if foreign.len() != finalizers.len() {
            let patch = json!({"metadata": {
                "resourceVersion": fresh.metadata.resource_version,
                "finalizers": foreign,
            }});
            match api.patch(&planned.name, &PatchParams::default(), &Patch::Merge(patch)).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => return Ok(StepOutcome::AlreadyDone),
                Err(e) if is_conflict(&e) => continue,
                Err(source) => return Err(Error::Step { what, api_error: source }),
            }
        }
        if fresh.metadata.deletion_timestamp.is_none() {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: fresh.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match api.delete(&planned.name, &params).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) if is_conflict(&e) => continue,
                Err(source) => return Err(Error::Step { what, api_error: source }),
            }
        }
        return Ok(if foreign.is_empty() {
            StepOutcome::Done
        } else {
            StepOutcome::Skipped(format!("deleted, but finalizers [{}] of others remain", foreign.join(", ")))
        });
    }
    Ok(StepOutcome::Skipped(format!("still changing after {MAX_ATTEMPTS} attempts; run cleanup again")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surge::ScalerKind;
    use eviction_autoscaler_shared::keys;
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerSpec;

    fn annotated(pairs: &[(&str, &str)]) -> kube::api::ObjectMeta {
        kube::api::ObjectMeta {
            name: Some("web".into()),
            namespace: Some("team".into()),
            resource_version: Some("7".into()),
            annotations: Some(pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()),
            ..Default::default()
        }
    }

    fn deployment(replicas: i32, pairs: &[(&str, &str)]) -> Fresh {
        Fresh::Deployment(Box::new(crate::fixtures::deployment("team", "web", replicas, &[], pairs)))
    }

    #[test]
    fn revert_restores_only_our_value_and_always_drops_annotations() {
        let surged = [(keys::SURGE_REPLICAS, "4"), (keys::ORIGINAL_MIN_REPLICAS, "3")];
        let write = deployment(4, &surged).revert_write().unwrap();
        assert_eq!((write.value, write.resource_version.as_deref()), (Some(3), Some("7")));
        assert!(
            write.annotations.contains_key(keys::SURGE_REPLICAS)
                && write.annotations.values().all(Option::is_none)
        );
        assert_eq!(deployment(6, &surged).revert_write().unwrap().value, None, "user scaled to 6: kept");
        let zero = [(keys::SURGE_REPLICAS, "2"), (keys::ORIGINAL_MIN_REPLICAS, "0")];
        assert_eq!(deployment(2, &zero).revert_write().unwrap().value, None, "a Deployment never goes to 0");
        let hpa = Fresh::Hpa(Box::new(HorizontalPodAutoscaler {
            metadata: annotated(&zero),
            spec: Some(HorizontalPodAutoscalerSpec { min_replicas: Some(2), ..Default::default() }),
            ..Default::default()
        }));
        let write = hpa.revert_write().unwrap();
        assert_eq!((write.kind, write.value), (ScalerKind::Hpa, Some(0)), "an HPA may go back to 0");
        let unreadable = deployment(4, &[(keys::SURGE_REPLICAS, "four")]).revert_write().unwrap();
        assert_eq!(unreadable.value, None, "unknown surge value: keep replicas, drop annotations");
        assert!(deployment(4, &[("other", "x")]).revert_write().is_none(), "nothing of ours: no write");
    }

    #[test]
    fn report_lines_and_summary() {
        let step = |outcome| Step { action: "delete poddisruptionbudget team/web".into(), outcome };
        assert_eq!(step(StepOutcome::WouldDo).to_string(), "would delete poddisruptionbudget team/web");
        assert_eq!(step(StepOutcome::Done).to_string(), "delete poddisruptionbudget team/web: done");
        let report = CleanupReport {
            dry_run: false,
            steps: vec![step(StepOutcome::Done), step(StepOutcome::AlreadyDone)],
        };
        assert_eq!(report.summary(), "cleanup finished: 1 done, 1 already done, 0 skipped");
        assert!(CleanupReport::default().summary().starts_with("nothing to do"));
        let dry = CleanupReport { dry_run: true, steps: vec![step(StepOutcome::WouldDo)] };
        assert_eq!(dry.summary(), "dry run: 1 actions listed, nothing changed");
    }
}
