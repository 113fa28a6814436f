//! One pass of the default-PDB reconciler over a Deployment or a PDB, and the admission fast
//! paths: plan, re-read what a create depends on, perform the one action, publish its Events.

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::reflector::ObjectRef;
use tokio::time::Instant;
use tracing::{debug, info, instrument, warn};

use crate::error;
use crate::pdb::{self, Action, Autoscaler, NamespaceView, PlannedEvent};
use crate::runtime::context::Context;
use crate::runtime::queue::ObjectKey;
use crate::surge::scaler::{self, Scaler};

/// The namespace's objects as the planner wants them.
struct View {
    namespace: Namespace,
    /// Cached, with the user PDBs admitted a moment ago in place of (or beside) their cached
    /// version ([`PdbMemory::admitted`]).
    pdbs: Vec<PodDisruptionBudget>,
    /// The namespace's Deployments as the plans read them (`Caches::siblings_in`).
    deployments: Vec<Deployment>,
    /// When the first of those admitted PDBs stops counting: re-plan then.
    admitted_until: Option<tokio::time::Instant>,
}

/// `stored` with each of `admitted` in place of its stored version, or added.
fn with_admitted(
    mut stored: Vec<PodDisruptionBudget>,
    admitted: &[PodDisruptionBudget],
) -> Vec<PodDisruptionBudget> {
    for pdb in admitted {
        stored.retain(|p| p.metadata.name != pdb.metadata.name);
        stored.push(pdb.clone());
    }
    stored
}

fn view(ctx: &Context, namespace: &str) -> View {
    let ns = ctx.caches.namespaces.get(&ObjectRef::<Namespace>::new(namespace)).map_or_else(
        || {
            let mut ns = Namespace::default();
            ns.metadata.name = Some(namespace.to_owned());
            ns
        },
        |n| (*n).clone(),
    );
    let cached = ctx.caches.pdbs_in(namespace);
    let (admitted, admitted_until) = ctx.default_pdbs.admitted(namespace);
    let deployments = ctx.caches.siblings_in(namespace);
    View { namespace: ns, pdbs: with_admitted(cached, &admitted), deployments, admitted_until }
}

/// Plans and acts for the Deployment `key` (Lease holder).
#[instrument(skip_all, fields(namespace = %key.0, deployment = %key.1))]
pub async fn reconcile_deployment(ctx: &Context, key: &ObjectKey, crd_uid: &str) -> Result<(), kube::Error> {
    let Some(deployment) = ctx.deployment(key) else { return Ok(()) };
    let view = view(ctx, &key.0);
    let hpas = ctx.caches.hpas_in(&key.0);
    let scaled_objects = ctx.caches.scaled_objects_in(&key.0);
    let autoscaler = autoscaler_of(&deployment, &hpas, &scaled_objects);
    let namespace_view =
        NamespaceView { namespace: &view.namespace, pdbs: &view.pdbs, deployments: &view.deployments };
    let mut plan =
        pdb::plan_deployment(&deployment, autoscaler.as_ref(), &namespace_view, &ctx.config(), crd_uid);
    if matches!(plan.action, Action::Create { .. }) {
        let now = Instant::now();
        if let Some(at) = ctx.default_pdbs.create_blocked_until(key, now) {
            info!(wait = ?at - now, "the default PDB vanished soon after we created it: creating it again after a back-off");
            ctx.queues.default_pdbs.schedule(key.clone(), at);
            return Ok(());
        }
        // The owner re-read: a CRD deleted or replaced a moment ago (its watch event still on
        // the way) would have the garbage collector delete the new PDB at once.
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        let live_crd = crds.get_opt(pdb::CRD_NAME).await?.as_ref().and_then(pdb::live_crd_uid);
        if live_crd.as_deref() != Some(crd_uid) {
            info!(crd_uid = ?live_crd, "the EvictionAutoScaler CRD changed: planning again with it");
            ctx.default_pdbs.set_crd_uid(live_crd);
            ctx.queues.default_pdbs.schedule_now(key.clone());
            return Ok(());
        }
        // Exactly once: a user PDB created a moment ago may not be in the cache yet, and a
        // second PDB on the same pods makes every eviction fail. Re-plan on the live list.
        let live = Api::<PodDisruptionBudget>::namespaced(ctx.client.clone(), &key.0)
            .list(&Default::default())
            .await?
            .items;
        let live = with_admitted(live, &ctx.default_pdbs.admitted(&key.0).0);
        let fresh = NamespaceView { pdbs: &live, ..namespace_view };
        plan = pdb::plan_deployment(&deployment, autoscaler.as_ref(), &fresh, &ctx.config(), crd_uid);
    }
    if let Some(at) = view.admitted_until {
        ctx.queues.default_pdbs.schedule(key.clone(), at);
    }
    publish(ctx, &ctx.client, &plan.events).await;
    let action_event = plan.action_event();
    if let Action::Skip { reason, .. } = &plan.action {
        // Skips are reported when the reason changes, not on every pass.
        let reason = reason.as_str();
        if ctx.default_pdbs.skipped(key, Some(reason))
            && let Some(event) = action_event
        {
            publish(ctx, &ctx.client, &[event]).await;
        }
        count(ctx, &plan.action);
        return Ok(());
    }
    ctx.default_pdbs.skipped(key, None);
    let owned_patch = plan.action.owned_patch();
    if let Some((pdb, patch)) = &owned_patch
        && ctx.default_pdbs.already_patched(key, pdb, patch)
    {
        debug!("this patch went out already; waiting for the watch to bring it");
        return Ok(());
    }
    match perform(ctx, Path::Reconciler, &plan.action).await? {
        Performed::Done => {
            if matches!(plan.action, Action::Create { .. }) {
                ctx.default_pdbs.created(key, Instant::now());
            }
            if let Some((pdb, patch)) = owned_patch {
                ctx.default_pdbs.patched(key, pdb, patch);
            }
            count(ctx, &plan.action);
            if let Some(event) = action_event {
                publish(ctx, &ctx.client, &[event]).await;
            }
        }
        Performed::AlreadyDone => {}
        Performed::Lost => ctx.queues.default_pdbs.schedule_now(key.clone()),
    }
    Ok(())
}

/// Plans and acts for one PDB (hand-over; PDB of a deleted Deployment).
pub async fn reconcile_pdb(ctx: &Context, pdb: &PodDisruptionBudget) -> Result<(), kube::Error> {
    let namespace = pdb.metadata.namespace.clone().unwrap_or_default();
    // Only an owned PDB's plan reads the namespace's Deployments (is its target among them?);
    // a user PDB's status moves with every pod during a drain, and costs no namespace read.
    let deployments =
        if pdb::OwnedPdb::of(pdb).is_some() { ctx.caches.siblings_in(&namespace) } else { Vec::new() };
    let mut action = pdb::plan_pdb(pdb, &deployments);
    if matches!(action, Action::Delete { reason: pdb::DeleteReason::DeploymentDeleted, .. }) {
        let target = (namespace.clone(), pdb::target_of(pdb));
        if target_deployment_exists(ctx, &target).await? {
            // The admission path creates a PDB before its Deployment reaches our cache; "no
            // Deployment" from the cache alone would delete a PDB that is just new.
            action = Action::Nothing;
        } else if let Some(wait) =
            pdb::wait_for_target(pdb, ctx.default_pdbs.was_deleted(&target), Timestamp::now())
        {
            // ... or before the apiserver has even stored it.
            debug!(?wait, deployment = %target.1, "the Deployment of a new default PDB is not stored yet");
            let key = (namespace.clone(), pdb.metadata.name.clone().unwrap_or_default());
            ctx.queues.pdbs.schedule(key, Instant::now() + wait);
            action = Action::Nothing;
        }
    }
    if perform(ctx, Path::Reconciler, &action).await? == Performed::Done {
        count(ctx, &action);
        let subject = pdb::EventSubject {
            api_version: "policy/v1",
            kind: "PodDisruptionBudget",
            namespace: Some(namespace),
            name: pdb.metadata.name.clone().unwrap_or_default(),
            uid: pdb.metadata.uid.clone(),
        };
        if let Some(event) = action.event(&subject) {
            publish(ctx, &ctx.client, &[event]).await;
        }
    }
    Ok(())
}

/// Whether Deployment `target` exists, read from the API (not the cache).
async fn target_deployment_exists(ctx: &Context, (namespace, name): &ObjectKey) -> Result<bool, kube::Error> {
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), namespace);
    Ok(deployments.get_opt(name).await?.is_some_and(|d| d.metadata.deletion_timestamp.is_none()))
}

/// Deployment CREATE admission (any replica): create its PDB before its pods exist.
pub async fn admitted_deployment(
    ctx: &Context,
    deployment: &Deployment,
    crd_uid: &str,
) -> Result<(), kube::Error> {
    let namespace = deployment.metadata.namespace.clone().unwrap_or_default();
    let view = view(ctx, &namespace);
    let namespace_view =
        NamespaceView { namespace: &view.namespace, pdbs: &view.pdbs, deployments: &view.deployments };
    let hpas = ctx.caches.hpas_in(&namespace);
    let scaled_objects = ctx.caches.scaled_objects_in(&namespace);
    let autoscaler = autoscaler_of(deployment, &hpas, &scaled_objects);
    let plan =
        pdb::plan_admission(deployment, false, autoscaler.as_ref(), &namespace_view, &ctx.config(), crd_uid);
    if matches!(plan.action, Action::Create { .. })
        && perform(ctx, Path::Admission, &plan.action).await? == Performed::Done
    {
        count(ctx, &plan.action);
        if let Some(event) = plan.action_event() {
            publish(ctx, Path::Admission.client(ctx), &[event]).await;
        }
    }
    Ok(())
}

/// PDB CREATE/UPDATE admission (any replica): retire our PDBs a user PDB now doubles.
pub async fn admitted_pdb(ctx: &Context, incoming: &PodDisruptionBudget) -> Result<(), kube::Error> {
    let namespace = incoming.metadata.namespace.clone().unwrap_or_default();
    let view = view(ctx, &namespace);
    let namespace_view =
        NamespaceView { namespace: &view.namespace, pdbs: &view.pdbs, deployments: &view.deployments };
    for action in pdb::plan_pdb_admission(incoming, false, &namespace_view) {
        if perform(ctx, Path::Admission, &action).await? == Performed::Done {
            count(ctx, &action);
        }
    }
    Ok(())
}

fn autoscaler_of<'a>(
    deployment: &'a Deployment,
    hpas: &'a [k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler],
    scaled_objects: &'a [crate::keda::ScaledObject],
) -> Option<Autoscaler<'a>> {
    match scaler::detect(deployment, hpas, scaled_objects).ok()? {
        Scaler::Deployment(_) => None,
        Scaler::Hpa(hpa) => Some(Autoscaler::from_hpa(hpa)),
        Scaler::Keda(so) => Some(Autoscaler::Keda {
            min_replica_count: so.spec.min_replica_count,
            annotations: so.metadata.annotations.as_ref(),
        }),
    }
}

/// What became of a performed action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Performed {
    /// This call made the change: count it and report its Event.
    Done,
    /// Someone else (the other path, another replica, the user) already made it: nothing to
    /// count or report, or one PDB would show two creations.
    AlreadyDone,
    /// Lost a race (409/422): plan again from fresh state.
    Lost,
}

/// Which path writes a PDB: the reconciler (the Lease holder, through the gate) or an
/// admission (any replica, by design). Each writes under its own field manager, so the PDB's
/// `managedFields` and the apiserver's audit log tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Reconciler,
    Admission,
}

impl Path {
    fn client(self, ctx: &Context) -> &Client {
        match self {
            Self::Reconciler => &ctx.client,
            Self::Admission => &ctx.any_replica,
        }
    }

    fn field_manager(self) -> &'static str {
        match self {
            Self::Reconciler => "eviction-autoscaler",
            Self::Admission => "eviction-autoscaler-admission",
        }
    }
}

/// Performs `action` on `path`'s client, under its field manager.
async fn perform(ctx: &Context, path: Path, action: &Action) -> Result<Performed, kube::Error> {
    let client = path.client(ctx);
    let manager = Some(path.field_manager().to_owned());
    let result = match action {
        Action::Nothing | Action::Skip { .. } => return Ok(Performed::Done),
        Action::Create { pdb } => {
            let namespace = pdb.metadata.namespace.clone().unwrap_or_default();
            let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &namespace);
            match api.create(&PostParams { field_manager: manager, ..PostParams::default() }, pdb).await {
                Ok(_) => Ok(()),
                Err(e) if error::is_already_exists(&e) => {
                    debug!("default PDB already exists (the other path was first)");
                    return Ok(Performed::AlreadyDone);
                }
                Err(e) => Err(e),
            }
        }
        Action::UpdateMinAvailable { pdb, .. } | Action::Adopt { pdb, .. } => {
            patch(client, manager, pdb.namespace(), pdb.name(), action).await
        }
        Action::HandOver { pdb } => patch(client, manager, pdb.namespace(), pdb.name(), action).await,
        Action::Delete { pdb, .. } | Action::Retire { pdb, .. } => {
            let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), pdb.namespace());
            let wanted = pdb.delete_preconditions();
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    resource_version: wanted.resource_version,
                    uid: wanted.uid,
                }),
                ..Default::default()
            };
            match api.delete(pdb.name(), &params).await {
                Ok(_) => Ok(()),
                Err(e) if error::is_not_found(&e) => return Ok(Performed::AlreadyDone),
                Err(e) => Err(e),
            }
        }
    };
    match result {
        Ok(()) => {
            info!(action = ?action.outcome().map(|(o, _)| o.as_str()), "default PDB action done");
            Ok(Performed::Done)
        }
        Err(e) if error::is_conflict(&e) => {
            debug!(error = %e, "PDB changed meanwhile; planning again");
            Ok(Performed::Lost)
        }
        Err(e) => Err(e),
    }
}

async fn patch(
    client: &Client,
    field_manager: Option<String>,
    namespace: &str,
    name: &str,
    action: &Action,
) -> Result<(), kube::Error> {
    let Some(ops) = action.json_patch() else { return Ok(()) };
    let ops: json_patch::Patch = serde_json::from_value(ops).map_err(kube::Error::SerdeError)?;
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), namespace);
    let params = PatchParams { field_manager, ..PatchParams::default() };
    api.patch(name, &params, &Patch::Json::<()>(ops)).await.map(|_| ())
}

fn count(ctx: &Context, action: &Action) {
    if let Some((outcome, reason)) = action.outcome() {
        ctx.metrics.pdb_action(outcome.as_str(), reason.unwrap_or(""));
    }
}

async fn publish(ctx: &Context, client: &Client, events: &[PlannedEvent]) {
    for planned in events {
        let subject = &planned.subject;
        let reference = ObjectReference {
            api_version: Some(subject.api_version.to_owned()),
            kind: Some(subject.kind.to_owned()),
            namespace: subject.namespace.clone(),
            name: Some(subject.name.clone()),
            uid: subject.uid.clone(),
            ..Default::default()
        };
        let warning = matches!(planned.event_type, pdb::EventType::Warning);
        let reason = planned.reason.as_str();
        if let Err(e) = ctx.recorder.publish(client, &reference, warning, reason, &planned.note).await {
            warn!(reason, error = %e, "could not publish Event");
        }
    }
}
