//! One rollout step of the Deployment controller: rolling, Recreate, proportional scaling
//! and revision-history cleanup.

use serde_json::Value;

use super::{
    DESIRED_REPLICAS, MAX_REPLICAS, RsChange, Sync, created, ensure_new_replica_set, is_rolling, max_surge,
    max_unavailable, replicas, revision,
};
use crate::cluster_logic::common::{controller_ref, int_at, is_terminating, name_of, pod_phase, uid_of};

/// `rolloutRolling`: at most one of scale-up and scale-down, then history cleanup when complete.
pub(super) fn rollout_rolling(sync: &mut Sync) {
    ensure_new_replica_set(sync);
    let Some(new_index) = sync.new_index else { return };
    let desired = replicas(sync.deployment);
    let new_size = replicas(&sync.replica_sets[new_index]);
    if new_size > desired {
        if sync.scale(new_index, desired) {
            return;
        }
    } else if new_size < desired {
        let current = sync.total(&sync.all(), replicas);
        let max_total = desired + max_surge(sync.deployment);
        let target = if current >= max_total {
            new_size
        } else {
            new_size + (max_total - current).min(desired - new_size)
        };
        if sync.scale(new_index, target) {
            return;
        }
    }
    if reconcile_old_replica_sets(sync, new_index) {
        return;
    }
    cleanup_history(sync);
}

pub(super) fn status_int(rs: &Value, field: &str) -> i64 {
    int_at(rs, &format!("/status/{field}"), 0)
}

/// `reconcileOldReplicaSets`: unhealthy old replicas first, then down to minAvailable.
fn reconcile_old_replica_sets(sync: &mut Sync, new_index: usize) -> bool {
    let mut old = sync.active(&sync.old_indices());
    if sync.total(&old, replicas) == 0 {
        return false;
    }
    let all_pods = sync.total(&sync.all(), replicas);
    let min_available = replicas(sync.deployment) - max_unavailable(sync.deployment);
    let new_rs = &sync.replica_sets[new_index];
    let new_unavailable = replicas(new_rs) - status_int(new_rs, "availableReplicas");
    let max_scaled_down = all_pods - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return false;
    }
    old.sort_by_key(|i| created(&sync.replica_sets[*i]));
    let mut cleaned = 0;
    for &i in &old {
        let rs = &sync.replica_sets[i];
        let unhealthy = replicas(rs) - status_int(rs, "availableReplicas");
        if cleaned >= max_scaled_down {
            break;
        }
        if replicas(rs) == 0 || unhealthy <= 0 {
            continue;
        }
        let down = (max_scaled_down - cleaned).min(unhealthy);
        let to = replicas(rs) - down;
        sync.scale(i, to);
        cleaned += down;
    }
    let available = sync.total(&sync.all(), |rs| status_int(rs, "availableReplicas"));
    let mut scaled = 0;
    if available > min_available {
        let budget = available - min_available;
        for &i in &old {
            if scaled >= budget {
                break;
            }
            let size = replicas(&sync.replica_sets[i]);
            if size == 0 {
                continue;
            }
            let down = size.min(budget - scaled);
            sync.scale(i, size - down);
            scaled += down;
        }
    }
    cleaned + scaled > 0
}

/// `rolloutRecreate`: old ReplicaSets to 0, wait for their pods to stop, then the new one.
pub(super) fn rollout_recreate(sync: &mut Sync, pods: &[Value]) {
    let mut scaled = false;
    for i in sync.active(&sync.old_indices()) {
        scaled |= sync.scale(i, 0);
    }
    if scaled {
        return;
    }
    let old_uids: Vec<String> =
        sync.old_indices().iter().map(|i| uid_of(&sync.replica_sets[*i]).to_string()).collect();
    let old_running = sync.total(&sync.old_indices(), |rs| status_int(rs, "replicas")) > 0
        || pods.iter().any(|p| {
            controller_ref(p).is_some_and(|r| old_uids.iter().any(|u| r["uid"].as_str() == Some(u)))
                && !matches!(pod_phase(p), "Succeeded" | "Failed")
        });
    if old_running {
        return;
    }
    ensure_new_replica_set(sync);
    if let Some(i) = sync.new_index {
        sync.scale(i, replicas(sync.deployment));
    }
    cleanup_history(sync);
}

/// `sync`/`scale`: a single active ReplicaSet takes the full count; otherwise (rolling) the
/// difference to `replicas + maxSurge` is spread proportionally, leftovers to the largest.
pub(super) fn scale(sync: &mut Sync) {
    let desired = replicas(sync.deployment);
    let mut active = sync.active(&sync.all());
    if active.len() <= 1 {
        let target = active.first().copied().or(sync.new_index).or_else(|| {
            let mut old = sync.old_indices();
            old.sort_by_key(|i| created(&sync.replica_sets[*i]));
            old.last().copied()
        });
        if let Some(i) = target.filter(|i| replicas(&sync.replica_sets[*i]) != desired) {
            sync.scale(i, desired);
        }
        return;
    }
    if let Some(n) = sync.new_index {
        let rs = &sync.replica_sets[n];
        let annotation =
            rs.pointer("/metadata/annotations").and_then(|a| a.get(DESIRED_REPLICAS)).and_then(Value::as_str);
        if replicas(rs) == desired
            && annotation == Some(&desired.to_string())
            && status_int(rs, "availableReplicas") == desired
        {
            for i in sync.active(&sync.old_indices()) {
                sync.scale(i, 0);
            }
            return;
        }
    }
    if !is_rolling(sync.deployment) {
        return;
    }
    let allowed = if desired > 0 { desired + max_surge(sync.deployment) } else { 0 };
    let to_add = allowed - sync.total(&active, replicas);
    // Larger first; on equal sizes newer first when scaling up, older first when scaling down.
    active.sort_by(|a, b| {
        let (ra, rb) = (&sync.replica_sets[*a], &sync.replica_sets[*b]);
        let by_age = if to_add > 0 { created(rb).cmp(&created(ra)) } else { created(ra).cmp(&created(rb)) };
        replicas(rb).cmp(&replicas(ra)).then(by_age)
    });
    let mut sizes: Vec<i64> = active.iter().map(|i| replicas(&sync.replica_sets[*i])).collect();
    let mut added = 0;
    if to_add != 0 {
        for (slot, &i) in active.iter().enumerate() {
            let proportion = proportion(&sync.replica_sets[i], sync.deployment, to_add, added);
            sizes[slot] += proportion;
            added += proportion;
        }
        sizes[0] = (sizes[0] + to_add - added).max(0);
    }
    for (slot, &i) in active.iter().enumerate() {
        sync.scale(i, sizes[slot]);
    }
}

/// upstream `GetReplicaSetProportion` / `getReplicaSetFraction`.
fn proportion(rs: &Value, deployment: &Value, to_add: i64, added: i64) -> i64 {
    let size = replicas(rs);
    if size == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = if replicas(deployment) == 0 {
        -size
    } else {
        let max_now = replicas(deployment) + max_surge(deployment);
        let annotated =
            rs.pointer("/metadata/annotations").and_then(|a| a.get(MAX_REPLICAS)).and_then(Value::as_str);
        let before = annotated.and_then(|a| a.parse::<i64>().ok()).filter(|b| *b != 0);
        let before = before.unwrap_or_else(|| int_at(deployment, "/status/replicas", 0));
        if before == 0 { 0 } else { ((size * max_now) as f64 / before as f64).round() as i64 - size }
    };
    let allowed = to_add - added;
    if to_add > 0 { fraction.min(allowed) } else { fraction.max(allowed) }
}

/// `cleanupDeployment`: deletes the oldest-revision old ReplicaSets beyond
/// `revisionHistoryLimit` that are fully scaled down and observed.
fn cleanup_history(sync: &mut Sync) {
    let Some(limit) = sync.deployment.pointer("/spec/revisionHistoryLimit").and_then(Value::as_i64) else {
        return;
    };
    let mut old: Vec<usize> =
        sync.old_indices().into_iter().filter(|i| !is_terminating(&sync.replica_sets[*i])).collect();
    let excess = old.len() as i64 - limit;
    if excess <= 0 {
        return;
    }
    old.sort_by_key(|i| (revision(&sync.replica_sets[*i]), created(&sync.replica_sets[*i])));
    for &i in old.iter().take(excess as usize) {
        let rs = &sync.replica_sets[i];
        if status_int(rs, "replicas") != 0
            || replicas(rs) != 0
            || int_at(rs, "/metadata/generation", 0) > status_int(rs, "observedGeneration")
        {
            continue;
        }
        sync.changes.push(RsChange::Delete(name_of(rs).to_string()));
    }
}
