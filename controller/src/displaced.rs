//! Which pods count as displaced by a drain (ARCHITECTURE.md §4.1), as pure functions of pods
//! read on demand and the signals remembered for a Deployment.

use std::collections::BTreeSet;
use std::time::Duration;

use eviction_autoscaler_shared::config::SurgeTrigger;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

/// Running and not terminating: the Eviction API checks the PDB for it.
pub fn is_running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// Running, Ready and not terminating: evicting it costs the budget a healthy pod.
pub fn is_displaceable(pod: &Pod) -> bool {
    is_running(pod)
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Would `kubectl drain` still evict this pod (so the drain of its node is not over)? Every
/// pod but DaemonSet pods, mirror (static) pods and finished ones. Terminating pods count:
/// the drain waits for them to go.
pub fn drain_pending(pod: &Pod) -> bool {
    let daemon = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.kind == "DaemonSet");
    let mirror =
        pod.metadata.annotations.as_ref().is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
    let finished =
        matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"));
    !daemon && !mirror && !finished
}

/// Pending because the scheduler found no room (`PodScheduled=False`, reason `Unschedulable`).
pub fn is_unschedulable(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().is_some_and(|s| {
            s.phase.as_deref() == Some("Pending")
                && s.conditions.iter().flatten().any(|c| {
                    c.type_ == "PodScheduled"
                        && c.status == "False"
                        && c.reason.as_deref() == Some("Unschedulable")
                })
        })
}

/// The Deployment owning `pod` through its ReplicaSet: the ReplicaSet is named
/// `<deployment>-<pod-template-hash>`, so no ReplicaSet read (and no ReplicaSet cache) is needed.
pub fn owning_deployment(pod: &Pod) -> Option<String> {
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true) && o.kind == "ReplicaSet")?;
    let hash = pod.metadata.labels.as_ref()?.get("pod-template-hash")?;
    owner.name.strip_suffix(hash.as_str())?.strip_suffix('-').filter(|d| !d.is_empty()).map(str::to_owned)
}

/// An eviction signal remembered for a Deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignaledPod {
    /// The pod's name.
    pub pod: String,
    /// When the eviction was seen.
    pub at: Timestamp,
    /// Whether the pod's node was draining when it was seen.
    pub on_draining_node: bool,
    /// Whether the pod was Running, Ready and not terminating when it was seen.
    pub displaceable: bool,
}

/// What the drain does to one Deployment right now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Displacement {
    /// Distinct displaced pods (surge demand).
    pub displaced: u32,
    /// The Deployment's Running, non-terminating pods still on draining nodes (hold).
    pub on_draining_nodes: u32,
}

/// Pods whose eviction the API has accepted (`status.disruptedPods` of the PDBs). The Eviction
/// API records the pod there, then deletes it: in between the pod is still Running and Ready,
/// and the budget it used shows as closed, yet it is leaving, not displaced.
pub fn accepted_evictions(pdbs: &[PodDisruptionBudget]) -> BTreeSet<String> {
    pdbs.iter()
        .filter_map(|p| p.status.as_ref()?.disrupted_pods.as_ref())
        .flat_map(|pods| pods.keys().cloned())
        .collect()
}

/// Was the eviction of `pod` (signalled by the webhook, which the apiserver calls before its
/// budget check) refused by its one covering PDB? Only if that budget is closed and the pod
/// did not go anyway: a pod already terminating, or listed in the budget's `disruptedPods`,
/// was evicted, and the budget it used now shows as closed (a signal handled a moment after
/// the eviction must cost no write).
pub fn refused_eviction(covering: &[PodDisruptionBudget], pod: &Pod) -> bool {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    eviction_autoscaler_shared::budget::blocks_eviction(covering)
        && pod.metadata.deletion_timestamp.is_none()
        && !accepted_evictions(covering).contains(name)
}

/// Counts displaced pods: pods of the Deployment on draining nodes, plus pods whose eviction
/// was seen within `window` (with `--surge-trigger=drain`, only while their node drained);
/// never a pod whose eviction was accepted (`evicted`, see [`accepted_evictions`]).
pub fn displacement(
    pods_on_draining_nodes: &[Pod],
    signals: &[SignaledPod],
    evicted: &BTreeSet<String>,
    trigger: SurgeTrigger,
    window: Duration,
    now: Timestamp,
) -> Displacement {
    let mut displaced: BTreeSet<&str> = pods_on_draining_nodes
        .iter()
        .filter(|p| is_displaceable(p))
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    let window = jiff::SignedDuration::try_from(window).unwrap_or(jiff::SignedDuration::MAX);
    for signal in signals {
        let fresh = now.duration_since(signal.at) <= window;
        let counts = trigger == SurgeTrigger::Any || signal.on_draining_node;
        if fresh && counts && signal.displaceable {
            displaced.insert(&signal.pod);
        }
    }
    displaced.retain(|pod| !evicted.contains(*pod));
    let on_draining_nodes = pods_on_draining_nodes.iter().filter(|p| is_running(p)).count();
    Displacement {
        displaced: u32::try_from(displaced.len()).unwrap_or(u32::MAX),
        on_draining_nodes: u32::try_from(on_draining_nodes).unwrap_or(u32::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};

    pub(crate) fn pod(name: &str, phase: &str, ready: bool, terminating: bool) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.into());
        pod.metadata.deletion_timestamp = terminating.then_some(Time(Timestamp::UNIX_EPOCH));
        pod.status = Some(PodStatus {
            phase: Some(phase.into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        pod
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    fn signal(name: &str, secs: i64, draining: bool) -> SignaledPod {
        SignaledPod { pod: name.into(), at: at(secs), on_draining_node: draining, displaceable: true }
    }

    #[test]
    fn an_eviction_is_refused_only_while_the_pod_stays_and_the_budget_is_closed() {
        let budget = |allowed: i32, disrupted: &[&str]| PodDisruptionBudget {
            status: Some(k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus {
                disruptions_allowed: allowed,
                disrupted_pods: Some(disrupted.iter().map(|p| ((*p).to_owned(), Time(at(0)))).collect()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let staying = pod("web-1", "Running", true, false);
        assert!(refused_eviction(&[budget(0, &[])], &staying));
        assert!(!refused_eviction(&[budget(1, &[])], &staying), "the budget had room");
        assert!(!refused_eviction(&[budget(0, &["web-1"])], &staying), "accepted, not yet deleted");
        assert!(!refused_eviction(&[budget(0, &[])], &pod("web-1", "Running", true, true)), "already going");
        assert!(!refused_eviction(&[], &staying), "no budget, nothing refuses");
    }

    #[test]
    fn only_running_ready_live_pods_are_displaced() {
        let pods = [
            pod("ready", "Running", true, false),
            pod("unready", "Running", false, false),
            pod("pending", "Pending", false, false),
            pod("done", "Succeeded", false, false),
            pod("terminating", "Running", true, true),
        ];
        let d =
            displacement(&pods, &[], &BTreeSet::new(), SurgeTrigger::Drain, Duration::from_secs(90), at(0));
        assert_eq!(d, Displacement { displaced: 1, on_draining_nodes: 2 });
    }

    #[test]
    fn signals_count_by_trigger_and_window() {
        let node_pods = [pod("a", "Running", true, false)];
        let window = Duration::from_secs(90);
        let cases = [
            (
                "same pod signalled and on node: counted once",
                vec![signal("a", 100, true)],
                SurgeTrigger::Drain,
                1,
            ),
            ("signal on draining node", vec![signal("b", 100, true)], SurgeTrigger::Drain, 2),
            (
                "descheduler eviction ignored with drain trigger",
                vec![signal("b", 100, false)],
                SurgeTrigger::Drain,
                1,
            ),
            (
                "descheduler eviction counted with any trigger",
                vec![signal("b", 100, false)],
                SurgeTrigger::Any,
                2,
            ),
            ("signal older than the window", vec![signal("b", 9, true)], SurgeTrigger::Drain, 1),
        ];
        for (name, signals, trigger, want) in cases {
            assert_eq!(
                displacement(&node_pods, &signals, &BTreeSet::new(), trigger, window, at(100)).displaced,
                want,
                "{name}"
            );
        }
        let unready = SignaledPod { displaceable: false, ..signal("b", 100, true) };
        assert_eq!(
            displacement(&[], &[unready], &BTreeSet::new(), SurgeTrigger::Any, window, at(100)).displaced,
            0
        );
    }

    #[test]
    fn a_pod_whose_eviction_was_accepted_is_not_displaced() {
        use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;
        // The Eviction API has let `a` go: it sits in disruptedPods, still Running and Ready.
        let pdb = PodDisruptionBudget {
            status: Some(PodDisruptionBudgetStatus {
                disrupted_pods: Some([("a".to_owned(), Time(Timestamp::UNIX_EPOCH))].into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let evicted = accepted_evictions(&[pdb, PodDisruptionBudget::default()]);
        assert_eq!(evicted, BTreeSet::from(["a".to_owned()]));
        let node_pods = [pod("a", "Running", true, false), pod("b", "Running", true, false)];
        let signals = [signal("a", 100, true)];
        let window = Duration::from_secs(90);
        let d = displacement(&node_pods, &signals, &evicted, SurgeTrigger::Drain, window, at(100));
        assert_eq!(d, Displacement { displaced: 1, on_draining_nodes: 2 }, "b only; a still holds the drain");
    }

    #[test]
    fn owner_deployment_comes_from_the_replicaset_name() {
        let mut p = pod("web-5d9c7-abcde", "Running", true, false);
        p.metadata.labels = Some([("pod-template-hash".to_owned(), "5d9c7".to_owned())].into());
        p.metadata.owner_references = Some(vec![OwnerReference {
            kind: "ReplicaSet".into(),
            name: "web-5d9c7".into(),
            controller: Some(true),
            ..Default::default()
        }]);
        assert_eq!(owning_deployment(&p).as_deref(), Some("web"));
        if let Some(owners) = p.metadata.owner_references.as_mut() {
            owners[0].kind = "StatefulSet".into();
        }
        assert_eq!(owning_deployment(&p), None, "other owners are skipped");
    }

    #[test]
    fn a_drain_is_pending_while_evictable_pods_remain() {
        assert!(drain_pending(&pod("app", "Running", true, false)));
        assert!(drain_pending(&pod("leaving", "Running", true, true)), "kubectl waits for deletion");
        assert!(!drain_pending(&pod("job", "Succeeded", false, false)));
        let mut daemon = pod("ds", "Running", true, false);
        daemon.metadata.owner_references = Some(vec![OwnerReference {
            kind: "DaemonSet".into(),
            controller: Some(true),
            ..Default::default()
        }]);
        assert!(!drain_pending(&daemon), "kubectl drain --ignore-daemonsets leaves them");
        let mut mirror = pod("static", "Running", true, false);
        mirror.metadata.annotations =
            Some([("kubernetes.io/config.mirror".to_owned(), "x".to_owned())].into());
        assert!(!drain_pending(&mirror));
    }

    #[test]
    fn unschedulable_means_pending_with_scheduler_verdict() {
        let mut p = pod("x", "Pending", false, false);
        assert!(!is_unschedulable(&p));
        if let Some(s) = p.status.as_mut() {
            s.conditions = Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: "False".into(),
                reason: Some("Unschedulable".into()),
                ..Default::default()
            }]);
        }
        assert!(is_unschedulable(&p));
    }
}
