//! The audit's report, as a pure function of what it lists: for every PDB its class and, when
//! it blocks a drain, whether our surge opens it and why not; for every node what a drain now
//! would stall on. The judgement itself is [`eviction_autoscaler_shared::pdb_audit`]; this
//! module finds each PDB's pods, their owner and the settings that apply. Pods of a kind the
//! audit does not list (a Job, a ReplicaSet of its own) count their pods as its scale; the
//! HPA KEDA generates is not read as an autoscaler's maximum; the room for surge pods is
//! [`room`]'s estimate.

use std::collections::{BTreeMap, HashMap};

use eviction_autoscaler_shared::config::Config;
use eviction_autoscaler_shared::pdb_audit::{
    DeploymentView, Owner, PdbClass, SelectedBudget, SelectedPod, SurgeBlocker, classify, surge_opens,
};
use eviction_autoscaler_shared::scope::{namespace_scope, surge_enabled};
use eviction_autoscaler_shared::selector;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, PodSpec};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::room;
use crate::displaced::{drain_pending, is_displaceable, is_running, owning_deployment};
use crate::keda::ScaledObject;
use crate::surge::scaler;

/// What the audit reads, listed once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cluster<'a> {
    pub namespaces: &'a [Namespace],
    pub nodes: &'a [Node],
    pub pods: &'a [Pod],
    pub pdbs: &'a [PodDisruptionBudget],
    pub deployments: &'a [Deployment],
    pub stateful_sets: &'a [StatefulSet],
    pub hpas: &'a [HorizontalPodAutoscaler],
}

/// One PDB in the report.
#[derive(Clone, Debug, PartialEq)]
pub struct PdbReport {
    pub namespace: String,
    pub name: String,
    /// Its class, or why it could not be judged (a field or selector that cannot be read).
    pub class: Result<PdbClass, String>,
    /// `status.disruptionsAllowed` as the disruption controller last wrote it.
    pub disruptions_allowed: i32,
    /// The pods it selects that an eviction would check it for (running, not terminating).
    pub pods: Vec<String>,
    /// `Deployment/web`, `StatefulSet/db`, `none` or several joined by `,`.
    pub owner: String,
    /// For a PDB that blocks a drain: whether our surge opens it.
    pub surge: Result<(), SurgeBlocker>,
}

/// One node in the report: what a drain of it now would stall on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeReport {
    pub name: String,
    /// `namespace/pod` of the pods whose eviction a PDB would refuse, without our help.
    pub stalled_pods: Vec<String>,
    /// `namespace/pdb` of the PDBs refusing them.
    pub pdbs: Vec<String>,
    /// Of those PDBs, the ones our surge opens.
    pub opened_by_surge: Vec<String>,
}

impl NodeReport {
    /// The drain completes, with our help where the surge opens the way.
    pub fn completes(&self) -> bool {
        self.pdbs.len() == self.opened_by_surge.len()
    }
}

/// The whole report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub pdbs: Vec<PdbReport>,
    pub nodes: Vec<NodeReport>,
}

impl Report {
    /// Every node's drain would complete (the audit's exit code 0).
    pub fn drains_complete(&self) -> bool {
        self.nodes.iter().all(NodeReport::completes)
    }
}

fn key(namespace: Option<&String>, name: Option<&String>) -> String {
    format!("{}/{}", namespace.map_or("", String::as_str), name.map_or("", String::as_str))
}

/// A pod's controller as `(kind, name)`: a Deployment through its ReplicaSet, else the
/// controlling owner, else `("none", "")`.
fn controller_of(pod: &Pod) -> (String, String) {
    if let Some(deployment) = owning_deployment(pod) {
        return ("Deployment".to_owned(), deployment);
    }
    let owner = pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true));
    owner.map_or(("none".to_owned(), String::new()), |o| (o.kind.clone(), o.name.clone()))
}

fn show((kind, name): &(String, String)) -> String {
    if name.is_empty() { kind.clone() } else { format!("{kind}/{name}") }
}

/// The cluster indexed once: every lookup the report makes is a map read, so an audit of
/// 10,000 Deployments and 50,000 pods stays linear in the objects.
struct Index<'a> {
    config: &'a Config,
    namespaces: HashMap<&'a str, &'a Namespace>,
    deployments: HashMap<(&'a str, &'a str), &'a Deployment>,
    stateful_sets: HashMap<(&'a str, &'a str), &'a StatefulSet>,
    /// Per namespace (what `scaler::detect` reads).
    hpas: HashMap<&'a str, Vec<HorizontalPodAutoscaler>>,
    /// Running pods per namespace.
    running: HashMap<&'a str, Vec<&'a Pod>>,
    capacity: room::Capacity,
}

fn ns_name(meta: &ObjectMeta) -> (&str, &str) {
    (meta.namespace.as_deref().unwrap_or_default(), meta.name.as_deref().unwrap_or_default())
}

impl<'a> Index<'a> {
    fn new(cluster: &Cluster<'a>, config: &'a Config) -> Self {
        let mut hpas: HashMap<&str, Vec<HorizontalPodAutoscaler>> = HashMap::new();
        for hpa in cluster.hpas {
            hpas.entry(ns_name(&hpa.metadata).0).or_default().push(hpa.clone());
        }
        let mut running: HashMap<&str, Vec<&Pod>> = HashMap::new();
        for pod in cluster.pods.iter().filter(|p| is_running(p)) {
            running.entry(ns_name(&pod.metadata).0).or_default().push(pod);
        }
        Index {
            config,
            namespaces: cluster.namespaces.iter().map(|n| (ns_name(&n.metadata).1, n)).collect(),
            deployments: cluster.deployments.iter().map(|d| (ns_name(&d.metadata), d)).collect(),
            stateful_sets: cluster.stateful_sets.iter().map(|s| (ns_name(&s.metadata), s)).collect(),
            hpas,
            running,
            capacity: room::Capacity::new(cluster.nodes, cluster.pods, &config.drain_taints),
        }
    }

    /// The running pods `pdb` selects (a null selector selects nothing).
    fn selected(&self, pdb: &PodDisruptionBudget) -> Result<Vec<&'a Pod>, String> {
        let Some(selector) = pdb.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
            return Ok(Vec::new());
        };
        let empty = BTreeMap::new();
        let mut pods = Vec::new();
        for pod in self.running.get(ns_name(&pdb.metadata).0).into_iter().flatten() {
            let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
            if selector::matches(selector, labels).map_err(|e| format!("spec.selector: {e}"))? {
                pods.push(*pod);
            }
        }
        Ok(pods)
    }

    /// The owner of a PDB's pods as a surge sees it, with the room for its surge pods off the
    /// node being drained (`draining`), if any.
    fn owner_of(
        &self,
        namespace: &str,
        controllers: &[(String, String)],
        draining: Option<&str>,
    ) -> Owner<'a> {
        match controllers {
            [] => Owner::None,
            [(kind, _)] if kind == "none" => Owner::None,
            [(kind, name)] if kind == "Deployment" => match self.deployments.get(&(namespace, name.as_str()))
            {
                Some(deployment) => Owner::Deployment(self.deployment_view(deployment, draining)),
                None => Owner::Other(format!("Deployment {name} (not found)")),
            },
            [(kind, _)] => Owner::Other(kind.clone()),
            several => Owner::Several(several.iter().map(show).collect()),
        }
    }

    /// Σ `spec.replicas` over the distinct controllers, as the disruption controller's
    /// `getExpectedScale`; a kind the audit does not list counts its pods.
    fn controller_scale(&self, namespace: &str, controllers: &[(String, String)], pods: &[&Pod]) -> i32 {
        controllers
            .iter()
            .map(|(kind, name)| match kind.as_str() {
                "none" => 0,
                "Deployment" => self
                    .deployments
                    .get(&(namespace, name.as_str()))
                    .map_or(0, |d| d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)),
                "StatefulSet" => self
                    .stateful_sets
                    .get(&(namespace, name.as_str()))
                    .map_or(0, |s| s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)),
                _ => {
                    let count =
                        pods.iter().filter(|p| controller_of(p) == (kind.clone(), name.clone())).count();
                    i32::try_from(count).unwrap_or(i32::MAX)
                }
            })
            .sum()
    }

    fn deployment_view(&self, deployment: &'a Deployment, draining: Option<&str>) -> DeploymentView<'a> {
        let namespace = ns_name(&deployment.metadata).0;
        let ns_annotations = self.namespaces.get(namespace).and_then(|n| n.metadata.annotations.as_ref());
        let hpas = self.hpas.get(namespace).map_or(&[][..], Vec::as_slice);
        let template = deployment.spec.as_ref().and_then(|s| s.template.spec.as_ref());
        let room = self.capacity.room(template.unwrap_or(&PodSpec::default()), draining);
        deployment_view(deployment, ns_annotations, hpas, &[], self.config, Some(room))
    }
}

/// A Deployment as the surge judgement sees it, given its namespace's annotations and
/// autoscalers and the room estimated for its surge pods.
pub(crate) fn deployment_view<'a>(
    deployment: &'a Deployment,
    ns_annotations: Option<&BTreeMap<String, String>>,
    hpas: &[HorizontalPodAutoscaler],
    scaled_objects: &[ScaledObject],
    config: &Config,
    room_estimate: Option<i32>,
) -> DeploymentView<'a> {
    let (namespace, name) = ns_name(&deployment.metadata);
    // Several autoscalers on one Deployment stop the surge too; the view then shows its replicas.
    let (baseline, autoscaler_max) = match scaler::detect(deployment, hpas, scaled_objects) {
        Ok(scaler) => (scaler.value(), scaler.max()),
        Err(_) => (deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1), None),
    };
    DeploymentView {
        name,
        strategy: deployment.spec.as_ref().and_then(|s| s.strategy.as_ref()),
        baseline,
        autoscaler_max,
        in_scope: namespace_scope(
            namespace,
            ns_annotations,
            &config.actioned_namespaces,
            config.enabled_by_default,
        )
        .enabled,
        surge_enabled: surge_enabled(deployment.metadata.annotations.as_ref()).enabled,
        room_estimate,
    }
}

/// One PDB with what the audit found about it.
struct Judged<'a> {
    pdb: &'a PodDisruptionBudget,
    spec: PodDisruptionBudgetSpec,
    /// Its running pods.
    pods: Vec<&'a Pod>,
    /// Their distinct controllers, `(kind, name)`.
    controllers: Vec<(String, String)>,
    owner: Owner<'a>,
    class: Result<PdbClass, String>,
}

fn pod_key(pod: &Pod) -> String {
    key(pod.metadata.namespace.as_ref(), pod.metadata.name.as_ref())
}

/// The report for `cluster` under the product's `config`.
pub fn report(cluster: &Cluster, config: &Config) -> Report {
    let index = Index::new(cluster, config);
    let selections: Vec<_> = cluster.pdbs.iter().map(|pdb| index.selected(pdb)).collect();
    let mut budgets_per_pod: HashMap<String, usize> = HashMap::new();
    for pod in selections.iter().flatten().flatten() {
        *budgets_per_pod.entry(pod_key(pod)).or_default() += 1;
    }
    let judged: Vec<Judged> = cluster
        .pdbs
        .iter()
        .zip(selections)
        .map(|(pdb, selection)| {
            let namespace = ns_name(&pdb.metadata).0;
            let spec = pdb.spec.clone().unwrap_or_default();
            let pods = selection.clone().unwrap_or_default();
            let mut controllers: Vec<_> = pods.iter().map(|p| controller_of(p)).collect();
            controllers.sort();
            controllers.dedup();
            let selected: Vec<SelectedPod> = pods
                .iter()
                .map(|p| SelectedPod {
                    name: p.metadata.name.clone().unwrap_or_default(),
                    healthy: is_displaceable(p),
                    budgets: budgets_per_pod.get(&pod_key(p)).copied().unwrap_or(1),
                })
                .collect();
            let controller_scale = index.controller_scale(namespace, &controllers, &pods);
            let class = selection.and_then(|_| {
                classify(SelectedBudget { spec: &spec, pods: &selected, controller_scale })
                    .map_err(|e| e.to_string())
            });
            let owner = index.owner_of(namespace, &controllers, None);
            Judged { pdb, spec, pods, controllers, owner, class }
        })
        .collect();
    let surge = |j: &Judged, owner: &Owner, displaced: i32| match &j.class {
        Ok(class) => surge_opens(class, &j.spec, owner, displaced, config.zero_surge_override.as_ref()),
        Err(_) => Ok(()),
    };
    let pdbs = judged
        .iter()
        .map(|j| PdbReport {
            namespace: j.pdb.metadata.namespace.clone().unwrap_or_default(),
            name: j.pdb.metadata.name.clone().unwrap_or_default(),
            class: j.class.clone(),
            disruptions_allowed: j.pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed),
            pods: j.pods.iter().filter_map(|p| p.metadata.name.clone()).collect(),
            owner: j.controllers.iter().map(show).collect::<Vec<_>>().join(","),
            surge: surge(j, &j.owner, 1),
        })
        .collect();
    // Per node, the blocking PDBs (in report order) with their pods a drain of it would evict.
    let mut on_node: HashMap<&str, Vec<(&Judged, Vec<&Pod>)>> = HashMap::new();
    for j in judged.iter().filter(|j| j.class.as_ref().is_ok_and(PdbClass::blocks_drain)) {
        let mut by_node: BTreeMap<&str, Vec<&Pod>> = BTreeMap::new();
        for pod in j.pods.iter().filter(|p| drain_pending(p)) {
            if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
                by_node.entry(node).or_default().push(pod);
            }
        }
        for (node, pods) in by_node {
            on_node.entry(node).or_default().push((j, pods));
        }
    }
    let nodes = cluster
        .nodes
        .iter()
        .map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let mut report = NodeReport { name, ..NodeReport::default() };
            for (j, here) in on_node.get(report.name.as_str()).into_iter().flatten() {
                for pod in here.iter().map(|p| pod_key(p)) {
                    // A pod under two PDBs is one pod to stall on.
                    if !report.stalled_pods.contains(&pod) {
                        report.stalled_pods.push(pod);
                    }
                }
                let pdb = key(j.pdb.metadata.namespace.as_ref(), j.pdb.metadata.name.as_ref());
                let owner = index.owner_of(ns_name(&j.pdb.metadata).0, &j.controllers, Some(&report.name));
                if surge(j, &owner, i32::try_from(here.len()).unwrap_or(i32::MAX)).is_ok() {
                    report.opened_by_surge.push(pdb.clone());
                }
                report.pdbs.push(pdb);
            }
            report
        })
        .collect();
    Report { pdbs, nodes }
}

#[cfg(test)]
mod tests;
