//! The Deployment controller (k8s-semantics §4.2–§4.6): fenceposts, new/old ReplicaSets,
//! one rolling or Recreate step, proportional scaling, history cleanup and the status.
//! [`sync_deployment`] is upstream `syncDeployment` for one pass; the caller applies the
//! [`RsChange`]s in order and writes the status.
//! Submodules: `steps` (rolling, Recreate, proportional scaling, history cleanup) and
//! `status` (status and conditions).

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::cluster_logic::common::{
    controller_ref, find_condition, int_at, is_terminating, name_of, namespace_of, parse_time,
    scaled_int_or_percent, uid_of,
};

/// ReplicaSet annotation: the Deployment revision it implements.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// ReplicaSet annotation: the Deployment's `spec.replicas` when last scaled.
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// ReplicaSet annotation: `spec.replicas + maxSurge` when last scaled.
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// The label distinguishing a Deployment's ReplicaSets.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

fn replicas(object: &Value) -> i64 {
    int_at(object, "/spec/replicas", 1)
}

fn is_rolling(deployment: &Value) -> bool {
    deployment.pointer("/spec/strategy/type").and_then(Value::as_str).unwrap_or("RollingUpdate")
        == "RollingUpdate"
}

/// upstream `ResolveFenceposts`: (surge rounded up, unavailable rounded down), with
/// unavailable = 1 when both are 0.
pub fn resolve_fenceposts(
    max_surge: &Value,
    max_unavailable: &Value,
    desired: i64,
) -> Result<(i64, i64), String> {
    let surge = scaled_int_or_percent(max_surge, desired, true)?;
    let unavailable = scaled_int_or_percent(max_unavailable, desired, false)?;
    Ok(if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable) })
}

fn fenceposts(deployment: &Value) -> (i64, i64) {
    let rolling = deployment.pointer("/spec/strategy/rollingUpdate").unwrap_or(&Value::Null);
    let surge = rolling.get("maxSurge").filter(|v| !v.is_null()).cloned().unwrap_or_else(|| json!("25%"));
    let unavailable =
        rolling.get("maxUnavailable").filter(|v| !v.is_null()).cloned().unwrap_or_else(|| json!("25%"));
    // Validation rejects unparseable values; treat them as 0 here.
    resolve_fenceposts(&surge, &unavailable, replicas(deployment)).unwrap_or((0, 1))
}

/// upstream `MaxSurge(deployment)`: 0 unless RollingUpdate.
pub fn max_surge(deployment: &Value) -> i64 {
    if is_rolling(deployment) { fenceposts(deployment).0 } else { 0 }
}

/// upstream `MaxUnavailable(deployment)`: 0 unless RollingUpdate or when replicas is 0;
/// capped at replicas.
pub fn max_unavailable(deployment: &Value) -> i64 {
    let desired = replicas(deployment);
    if !is_rolling(deployment) || desired == 0 { 0 } else { fenceposts(deployment).1.min(desired) }
}

const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A stable hash of a pod template (upstream `ComputeHash`'s shape: fnv32a, then the decimal
/// digits mapped onto `rand.SafeEncodeString`'s alphabet). Not upstream's exact value.
pub fn template_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u32::from(*b);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    };
    feed(without_hash_label(template).to_string().as_bytes());
    if let Some(count) = collision_count {
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&(count as u32).to_le_bytes());
        feed(&bytes);
    }
    hash.to_string()
        .bytes()
        .map(|d| char::from(SAFE_ALPHABET[usize::from(d) % SAFE_ALPHABET.len()]))
        .collect()
}

fn without_hash_label(template: &Value) -> Value {
    let mut template = template.clone();
    if let Some(labels) = template.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
        labels.remove(POD_TEMPLATE_HASH);
    }
    template
}

/// upstream `EqualIgnoreHash`.
pub fn templates_equal_ignoring_hash(a: &Value, b: &Value) -> bool {
    without_hash_label(a) == without_hash_label(b)
}

fn created(object: &Value) -> (Option<Timestamp>, String) {
    (object.pointer("/metadata/creationTimestamp").and_then(parse_time), name_of(object).to_string())
}

fn revision(rs: &Value) -> i64 {
    rs.pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// The Deployment's ReplicaSets (controller reference by uid), oldest first, split into the
/// new one (template equal ignoring the hash label; the oldest such) and the old ones.
pub fn new_and_old_replica_sets<'a>(
    deployment: &Value,
    replica_sets: &'a [Value],
) -> (Option<&'a Value>, Vec<&'a Value>) {
    let mut owned: Vec<&Value> = replica_sets
        .iter()
        .filter(|rs| controller_ref(rs).is_some_and(|r| r["uid"].as_str() == Some(uid_of(deployment))))
        .collect();
    owned.sort_by_key(|rs| created(rs));
    let template = deployment.pointer("/spec/template").unwrap_or(&Value::Null);
    let new = owned.iter().position(|rs| {
        templates_equal_ignoring_hash(rs.pointer("/spec/template").unwrap_or(&Value::Null), template)
    });
    let new_rs = new.map(|i| owned.remove(i));
    (new_rs, owned)
}

/// A change to a ReplicaSet, to apply in order.
#[derive(Clone, Debug, PartialEq)]
pub enum RsChange {
    /// POST this ReplicaSet.
    Create(Value),
    /// Set `spec.replicas` (and merge these annotations, set `spec.minReadySeconds` if given).
    Update {
        /// ReplicaSet name.
        name: String,
        /// New `spec.replicas`.
        replicas: i64,
        /// Annotations to set.
        annotations: Map<String, Value>,
    },
    /// DELETE this ReplicaSet (revision history cleanup).
    Delete(String),
}

/// The outcome of one Deployment sync.
#[derive(Clone, Debug, PartialEq)]
pub struct DeploymentSync {
    /// ReplicaSet writes, in order.
    pub changes: Vec<RsChange>,
    /// The Deployment's new `status` (write via `/status` when it differs).
    pub status: Value,
    /// The Deployment's `deployment.kubernetes.io/revision` annotation, when it must change.
    pub revision_annotation: Option<String>,
}

struct Sync<'a> {
    deployment: &'a Value,
    now: Timestamp,
    /// Working copies of the owned ReplicaSets, updated as changes are planned.
    replica_sets: Vec<Value>,
    new_index: Option<usize>,
    changes: Vec<RsChange>,
    conditions: Vec<Value>,
}

impl Sync<'_> {
    fn old_indices(&self) -> Vec<usize> {
        (0..self.replica_sets.len()).filter(|i| Some(*i) != self.new_index).collect()
    }
    fn active(&self, indices: &[usize]) -> Vec<usize> {
        indices.iter().copied().filter(|i| replicas(&self.replica_sets[*i]) > 0).collect()
    }
    fn total(&self, indices: &[usize], f: impl Fn(&Value) -> i64) -> i64 {
        indices.iter().map(|i| f(&self.replica_sets[*i])).sum()
    }
    fn all(&self) -> Vec<usize> {
        (0..self.replica_sets.len()).collect()
    }
    /// `scaleReplicaSet`: size and the desired/max-replicas annotations; true if the size changed.
    fn scale(&mut self, index: usize, to: i64) -> bool {
        let desired = replicas(self.deployment);
        let wanted = [
            (DESIRED_REPLICAS, desired.to_string()),
            (MAX_REPLICAS, (desired + max_surge(self.deployment)).to_string()),
        ];
        let rs = &mut self.replica_sets[index];
        let size_changed = replicas(rs) != to;
        let mut annotations = Map::new();
        for (key, value) in wanted {
            if rs.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str)
                != Some(&value)
            {
                annotations.insert(key.into(), json!(value));
            }
        }
        if !size_changed && annotations.is_empty() {
            return false;
        }
        rs["spec"]["replicas"] = json!(to);
        for (k, v) in &annotations {
            rs["metadata"]["annotations"][k] = v.clone();
        }
        self.changes.push(RsChange::Update { name: name_of(rs).to_string(), replicas: to, annotations });
        size_changed
    }
    fn set_condition(&mut self, condition_type: &str, status: &str, reason: &str, message: String) {
        set_deployment_condition(&mut self.conditions, condition_type, status, reason, message, self.now);
    }
}

/// One pass of the Deployment controller over `deployment`, the namespace's `replica_sets`
/// (only those it controls are used) and its pods.
pub fn sync_deployment(
    deployment: &Value,
    replica_sets: &[Value],
    pods: &[Value],
    now: Timestamp,
) -> DeploymentSync {
    let (new_rs, old) = new_and_old_replica_sets(deployment, replica_sets);
    let mut working: Vec<Value> = old.into_iter().cloned().collect();
    let new_index = new_rs.map(|rs| {
        working.push(rs.clone());
        working.len() - 1
    });
    let conditions =
        deployment.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut sync =
        Sync { deployment, now, replica_sets: working, new_index, changes: Vec::new(), conditions };
    let paused = deployment.pointer("/spec/paused") == Some(&Value::Bool(true));
    let progressing_reason = find_condition(deployment, "Progressing").map(|c| c["reason"].clone());
    if has_progress_deadline(deployment) {
        if paused && progressing_reason != Some(json!("DeploymentPaused")) {
            sync.set_condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused".into());
        } else if !paused && progressing_reason == Some(json!("DeploymentPaused")) {
            sync.set_condition("Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed".into());
        }
    }
    // Only rollouts estimate progress (`syncRolloutStatus`); deletion, pause and scaling
    // events write the plain `syncDeploymentStatus`.
    let mut estimate_progress = false;
    if !is_terminating(deployment) {
        if paused || is_scaling_event(&sync) {
            scale(&mut sync);
        } else if is_rolling(deployment) {
            rollout_rolling(&mut sync);
            estimate_progress = true;
        } else {
            rollout_recreate(&mut sync, pods);
            estimate_progress = true;
        }
    }
    let status = rollout_status(&mut sync, estimate_progress);
    let revision_annotation =
        sync.new_index.map(|i| revision(&sync.replica_sets[i]).to_string()).filter(|r| {
            deployment.pointer("/metadata/annotations").and_then(|a| a.get(REVISION)).and_then(Value::as_str)
                != Some(r)
        });
    DeploymentSync { changes: sync.changes, status, revision_annotation }
}

fn has_progress_deadline(deployment: &Value) -> bool {
    deployment
        .pointer("/spec/progressDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s != i64::from(i32::MAX))
}

fn is_scaling_event(sync: &Sync) -> bool {
    let desired = replicas(sync.deployment).to_string();
    sync.active(&sync.all()).iter().any(|i| {
        let annotation =
            sync.replica_sets[*i].pointer("/metadata/annotations").and_then(|a| a.get(DESIRED_REPLICAS));
        annotation.and_then(Value::as_str).is_some_and(|a| a != desired)
    })
}

/// upstream `getNewReplicaSet(createIfNotExisted = true)`: creates the new ReplicaSet (with
/// `NewRSNewReplicas` replicas) or syncs the existing one's revision and minReadySeconds.
fn ensure_new_replica_set(sync: &mut Sync) {
    let deployment = sync.deployment;
    let new_revision =
        sync.old_indices().iter().map(|i| revision(&sync.replica_sets[*i])).max().unwrap_or(0) + 1;
    if let Some(index) = sync.new_index {
        let rs = &mut sync.replica_sets[index];
        if revision(rs) < new_revision {
            let mut annotations = Map::new();
            annotations.insert(REVISION.into(), json!(new_revision.to_string()));
            rs["metadata"]["annotations"][REVISION] = json!(new_revision.to_string());
            let (name, count) = (name_of(rs).to_string(), replicas(rs));
            sync.changes.push(RsChange::Update { name, replicas: count, annotations });
        }
        if has_progress_deadline(deployment) && !sync.conditions.iter().any(|c| c["type"] == "Progressing") {
            let message = format!("Found new replica set \"{}\"", name_of(&sync.replica_sets[index]));
            sync.set_condition("Progressing", "True", "FoundNewReplicaSet", message);
        }
        return;
    }
    let template = deployment.pointer("/spec/template").cloned().unwrap_or_else(|| json!({}));
    let hash = template_hash(&template, deployment.pointer("/status/collisionCount").and_then(Value::as_i64));
    let mut template = template;
    template["metadata"]["labels"][POD_TEMPLATE_HASH] = json!(hash);
    let mut selector = deployment.pointer("/spec/selector").cloned().unwrap_or_else(|| json!({}));
    selector["matchLabels"][POD_TEMPLATE_HASH] = json!(hash);
    let desired = replicas(deployment);
    let count = if is_rolling(deployment) {
        let current = sync.total(&sync.all(), replicas);
        let surge = max_surge(deployment);
        if current >= desired + surge { 0 } else { (desired + surge - current).min(desired) }
    } else {
        desired
    };
    let mut annotations: Map<String, Value> = deployment
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .map(|a| {
            a.iter()
                .filter(|(k, _)| {
                    *k != "kubectl.kubernetes.io/last-applied-configuration"
                        && !k.starts_with("deployment.kubernetes.io/")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    annotations.insert(REVISION.into(), json!(new_revision.to_string()));
    annotations.insert(DESIRED_REPLICAS.into(), json!(desired.to_string()));
    annotations.insert(MAX_REPLICAS.into(), json!((desired + max_surge(deployment)).to_string()));
    let name = format!("{}-{hash}", name_of(deployment));
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace_of(deployment),
            "labels": template["metadata"]["labels"].clone(), "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name_of(deployment),
                "uid": uid_of(deployment), "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"replicas": count, "selector": selector, "template": template}});
    let mut rs = rs;
    // `omitempty`: a zero is not written.
    if let Some(seconds) = deployment.pointer("/spec/minReadySeconds").filter(|s| **s != json!(0)) {
        rs["spec"]["minReadySeconds"] = seconds.clone();
    }
    sync.changes.push(RsChange::Create(rs.clone()));
    sync.replica_sets.push(rs);
    sync.new_index = Some(sync.replica_sets.len() - 1);
    if has_progress_deadline(deployment) {
        sync.set_condition(
            "Progressing",
            "True",
            "NewReplicaSetCreated",
            format!("Created new replica set \"{name}\""),
        );
    }
}

mod status;
mod steps;

use status::{rollout_status, set_deployment_condition};
use steps::{rollout_recreate, rollout_rolling, scale};

#[cfg(test)]
mod tests;
