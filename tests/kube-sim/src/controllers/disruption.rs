//! Disruption controller: PDB status (`sync_pdb`) on every PDB change and every change of a
//! pod it selects, written through `/status`; re-checks when a `disruptedPods` entry expires.
//! Also the stale `DisruptionTarget` cleanup (§2.8).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::KUBE_CONTROLLER_MANAGER;
use super::events::EventRecorder;
use super::runtime::{Ctx, Key, Recheck, Reconciler, is, key_of, retry_delay};
use crate::cluster::Gvr;
use crate::cluster_logic::common::{api_group, find_condition};
use crate::cluster_logic::disruption::{
    StaleDisruptionTarget, WorkloadScale, Workloads, stale_disruption_target, sync_pdb,
};
use crate::selector::LabelSelector;
use crate::store::{EventType, StoredEvent};

/// Parsed PDB selectors by PDB, keyed by resourceVersion (every pod event consults them).
#[derive(Default)]
pub(crate) struct Disruption {
    selectors: Mutex<HashMap<Key, (String, Option<LabelSelector>)>>,
    /// Namespace → PDB name → selector, kept in step with the change feed (the dispatcher
    /// consults it for every pod change without touching the store).
    by_namespace: Mutex<HashMap<String, HashMap<String, Option<LabelSelector>>>>,
    /// `NoPods`, `UnmanagedPods`, ... as the controller records them.
    events: EventRecorder,
}

impl Disruption {
    /// `pdb_selects` with the PDB's selector parsed once per PDB version.
    fn selects(&self, pdb: &Value, pod: &Value) -> bool {
        if pdb["metadata"]["namespace"] != pod["metadata"]["namespace"] {
            return false;
        }
        let key = key_of(pdb);
        let rv = pdb["metadata"]["resourceVersion"].as_str().unwrap_or_default();
        let mut cache = self.selectors.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = cache.entry(key).or_insert_with(|| (String::new(), None));
        if entry.0 != rv {
            let selector = pdb.pointer("/spec/selector").unwrap_or(&Value::Null);
            *entry = (rv.to_string(), LabelSelector::from_api(selector).ok());
        }
        entry.1.as_ref().is_some_and(|s| s.matches_object(pod))
    }
}

/// Workload lookups for one namespace, straight from the store.
struct NamespaceWorkloads<'a> {
    ctx: &'a Ctx,
    namespace: &'a str,
}

impl Workloads for NamespaceWorkloads<'_> {
    fn get(&self, group: &str, kind: &str, name: &str) -> Option<Value> {
        let plural = match (group, kind) {
            ("apps", "ReplicaSet") => "replicasets",
            ("apps", "Deployment") => "deployments",
            ("apps", "StatefulSet") => "statefulsets",
            ("", "ReplicationController") => "replicationcontrollers",
            _ => return None,
        };
        self.ctx.get(group, plural, self.namespace, name)
    }

    fn scale(&self, api_version: &str, kind: &str, name: &str) -> Result<Option<WorkloadScale>, String> {
        let group = api_group(api_version);
        let info = self
            .ctx
            .cluster
            .catalogue()
            .find_kind(api_version, kind)
            .ok_or_else(|| format!("no matches for kind \"{kind}\" in group \"{group}\""))?;
        if info.scale.is_none() {
            return Err(format!("{} does not implement the scale subresource", info.group_resource()));
        }
        let gvr = Gvr::new(&info.group, &info.version, &info.plural);
        match self.ctx.cluster.get_subresource(&gvr, Some(self.namespace), name, "scale") {
            Ok(scale) => Ok(Some(WorkloadScale {
                uid: scale["metadata"]["uid"].as_str().unwrap_or_default().to_string(),
                replicas: scale["spec"]["replicas"].as_i64().unwrap_or(0),
            })),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e.message),
        }
    }
}

impl Disruption {
    /// The pods `pdb` selects: through the label index when the selector has `matchLabels`
    /// (the candidates then go through the full selector), else by scanning the namespace.
    fn selected_pods(&self, ctx: &Ctx, pdb: &Value, ns: &str) -> Vec<Value> {
        let match_labels: Vec<(String, String)> = pdb
            .pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        if match_labels.is_empty() {
            return ctx.list("", "pods", Some(ns), &|pod| self.selects(pdb, pod));
        }
        let names = ctx.index(|i| i.pods_with_labels(ns, &match_labels));
        let mut pods: Vec<Value> = names
            .iter()
            .filter_map(|name| ctx.get("", "pods", ns, name))
            .filter(|pod| self.selects(pdb, pod))
            .collect();
        pods.sort_by(|a, b| a["metadata"]["name"].as_str().cmp(&b["metadata"]["name"].as_str()));
        pods
    }
}

impl Reconciler for Disruption {
    /// The label index is updated before a pod's change is dispatched, so a sync is never
    /// older than the change that triggered it; objects are read from the store.
    fn needs_caught_up_index(&self) -> bool {
        false
    }

    fn keys_for(&self, _ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        if is(&event.key, "policy", "poddisruptionbudgets") {
            let (ns, name) = key_of(&event.object);
            let mut by_namespace = self.by_namespace.lock().unwrap_or_else(PoisonError::into_inner);
            let pdbs = by_namespace.entry(ns.clone()).or_default();
            if event.event_type == EventType::Deleted {
                pdbs.remove(&name);
                self.selectors.lock().unwrap_or_else(PoisonError::into_inner).remove(&(ns, name));
                return Vec::new();
            }
            let selector = event.object.pointer("/spec/selector").unwrap_or(&Value::Null);
            pdbs.insert(name.clone(), LabelSelector::from_api(selector).ok());
            return vec![(ns, name)];
        }
        if !is(&event.key, "", "pods") {
            return Vec::new();
        }
        let ns = event.object["metadata"]["namespace"].as_str().unwrap_or_default();
        let pods: Vec<&Value> =
            [Some(&*event.object), event.previous.as_deref()].into_iter().flatten().collect();
        let by_namespace = self.by_namespace.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(pdbs) = by_namespace.get(ns) else { return Vec::new() };
        pdbs.iter()
            .filter(|(_, selector)| {
                selector.as_ref().is_some_and(|s| pods.iter().any(|pod| s.matches_object(pod)))
            })
            .map(|(name, _)| (ns.to_string(), name.clone()))
            .collect()
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        let pdbs = ctx.list("policy", "poddisruptionbudgets", None, &|_| true);
        let mut by_namespace = self.by_namespace.lock().unwrap_or_else(PoisonError::into_inner);
        by_namespace.clear();
        for pdb in &pdbs {
            let (ns, name) = key_of(pdb);
            let selector = pdb.pointer("/spec/selector").unwrap_or(&Value::Null);
            by_namespace.entry(ns).or_default().insert(name, LabelSelector::from_api(selector).ok());
        }
        pdbs.iter().map(key_of).collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let pdb = ctx.get("policy", "poddisruptionbudgets", &key.0, &key.1)?;
            let pods = self.selected_pods(ctx, &pdb, &key.0);
            let workloads = NamespaceWorkloads { ctx, namespace: &key.0 };
            let now = jiff::Timestamp::now();
            let sync = sync_pdb(&pdb, &pods, &workloads, now);
            for event in &sync.events {
                let involved = match event.involved_kind {
                    "Pod" => pods.iter().find(|p| p["metadata"]["name"] == event.involved_name.as_str()),
                    _ => Some(&pdb),
                };
                if let Some(involved) = involved {
                    self.events.record(&ctx.cluster, involved, event).await;
                }
            }
            let recheck = sync.recheck_at.map(|at| {
                let millis = (at.as_millisecond() - now.as_millisecond()).max(0);
                Duration::from_millis(u64::try_from(millis).unwrap_or(0) + 20)
            });
            if !sync.needs_write {
                return recheck;
            }
            let gvr = Gvr::new("policy", "v1", "poddisruptionbudgets");
            match ctx.write_status(&gvr, &pdb, sync.status, KUBE_CONTROLLER_MANAGER).await {
                Ok(_) => recheck,
                Err(e) => retry_delay(&e),
            }
        })
    }
}

/// Flips a `DisruptionTarget=True` condition to False when no deletion followed within 2 m.
pub(crate) struct StaleDisruptionTargets;

impl Reconciler for StaleDisruptionTargets {
    /// Reads the store directly; the index is not used.
    fn needs_caught_up_index(&self) -> bool {
        false
    }

    fn keys_for(&self, _ctx: &Ctx, event: &StoredEvent) -> Vec<Key> {
        let pod = &event.object;
        let wanted = is(&event.key, "", "pods")
            && event.event_type != EventType::Deleted
            && find_condition(pod, "DisruptionTarget").is_some_and(|c| c["status"] == "True");
        if wanted { vec![key_of(pod)] } else { Vec::new() }
    }

    fn all_keys(&self, ctx: &Ctx) -> Vec<Key> {
        ctx.list("", "pods", None, &|p| find_condition(p, "DisruptionTarget").is_some())
            .iter()
            .map(key_of)
            .collect()
    }

    fn sync<'a>(&'a self, ctx: &'a Arc<Ctx>, key: &'a Key) -> BoxFuture<'a, Recheck> {
        Box::pin(async move {
            let pod = ctx.get("", "pods", &key.0, &key.1)?;
            let now = jiff::Timestamp::now();
            match stale_disruption_target(&pod, now) {
                StaleDisruptionTarget::Nothing => None,
                StaleDisruptionTarget::CleanUpAt(at) => {
                    let millis = (at.as_millisecond() - now.as_millisecond()).max(0);
                    Some(Duration::from_millis(u64::try_from(millis).unwrap_or(0) + 20))
                }
                StaleDisruptionTarget::CleanUpNow(condition) => {
                    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
                    let mut conditions = status["conditions"].as_array().cloned().unwrap_or_default();
                    conditions.retain(|c| c["type"] != "DisruptionTarget");
                    conditions.push(condition);
                    status["conditions"] = Value::Array(conditions);
                    let gvr = Gvr::new("", "v1", "pods");
                    let result = ctx.write_status(&gvr, &pod, status, KUBE_CONTROLLER_MANAGER).await;
                    result.err().and_then(|e| retry_delay(&e))
                }
            }
        })
    }
}
