//! When is a node draining, and when is a surge held or reverted (ARCHITECTURE.md §2, §4.3).
//!
//! A node is draining when it is cordoned (`spec.unschedulable`) or carries one of the
//! configured drain taints (Karpenter and cluster-autoscaler taint without cordoning).

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;

/// True when `node` is cordoned or carries a taint whose key is in `drain_taints`.
pub fn is_draining(node: &Node, drain_taints: &[String]) -> bool {
    let Some(spec) = &node.spec else { return false };
    spec.unschedulable == Some(true) || spec.taints.iter().flatten().any(|t| drain_taints.contains(&t.key))
}

/// What the controller knows about one active surge when it decides whether to keep it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldInputs {
    /// The Deployment's pods (Running, not terminating) still on draining nodes.
    pub pods_on_draining_nodes: usize,
    /// Whether any node in the cluster is draining (no scale-down mid multi-node drain).
    pub any_node_draining: bool,
    /// The last eviction signal for the Deployment (or when the surge was resumed).
    pub last_signal: Timestamp,
    /// `--cooldown`.
    pub cooldown: Duration,
    /// `--max-hold`.
    pub max_hold: Duration,
    /// The current time.
    pub now: Timestamp,
}

/// Keep the surge (and look again at `recheck_at` at the latest), or revert it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Keep it. A timer must fire at `recheck_at`, so no surge can stay by accident.
    Keep { recheck_at: Timestamp, reason: HoldReason },
    /// Revert it; `expired` when `--max-hold` ran out while the drain still seemed on.
    Revert { expired: bool },
}

/// Why a surge is kept (for logs and the EAS condition message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldReason {
    /// Pods of the Deployment still sit on a draining node (kubectl may be backing off).
    PodsOnDrainingNode,
    /// A signal arrived within the cooldown.
    Cooldown,
    /// Some other node is still draining.
    DrainInProgress,
}

/// The revert rule of ARCHITECTURE.md §4.3. Never holds past `last_signal + max_hold`.
pub fn hold(i: HoldInputs) -> Hold {
    let expiry = add(i.last_signal, i.max_hold);
    let cooldown_end = add(i.last_signal, i.cooldown);
    let reason = if i.pods_on_draining_nodes > 0 {
        Some(HoldReason::PodsOnDrainingNode)
    } else if i.now < cooldown_end {
        Some(HoldReason::Cooldown)
    } else if i.any_node_draining {
        Some(HoldReason::DrainInProgress)
    } else {
        None
    };
    match reason {
        _ if i.now >= expiry => Hold::Revert { expired: reason.is_some() },
        None => Hold::Revert { expired: false },
        Some(HoldReason::Cooldown) => {
            Hold::Keep { recheck_at: cooldown_end.min(expiry), reason: HoldReason::Cooldown }
        }
        // Pods are not watched (no cluster-wide pod cache), so their leaving a draining node
        // raises no event: look again after a short, bounded interval.
        Some(reason) => {
            Hold::Keep { recheck_at: add(i.now, presence_recheck(i.cooldown)).min(expiry), reason }
        }
    }
}

/// How often a surge held by pods on draining nodes is looked at again: the cooldown, kept
/// between 1 s (no hot loop) and 15 s (the revert follows the drain promptly).
fn presence_recheck(cooldown: Duration) -> Duration {
    cooldown.clamp(Duration::from_secs(1), Duration::from_secs(15))
}

fn add(t: Timestamp, d: Duration) -> Timestamp {
    jiff::SignedDuration::try_from(d).ok().and_then(|d| t.checked_add(d).ok()).unwrap_or(Timestamp::MAX)
}

/// The one write that ends a surge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Revert {
    /// New replicas (or autoscaler minimum); `None` = leave the value someone else set.
    pub replicas: Option<i32>,
}

/// Ends a surge: restores `baseline` only if the object still holds our surge value;
/// if someone changed it meanwhile, their value stays and only our annotations go.
pub fn revert(current: i32, surge_value: i32, baseline: i32) -> Revert {
    Revert { replicas: (current == surge_value && baseline > 0).then_some(baseline) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeSpec, Taint};

    fn node(unschedulable: bool, taints: &[&str]) -> Node {
        Node {
            spec: Some(NodeSpec {
                unschedulable: Some(unschedulable),
                taints: Some(
                    taints
                        .iter()
                        .map(|k| Taint {
                            key: (*k).into(),
                            effect: "NoSchedule".into(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn draining_means_cordoned_or_a_drain_taint() {
        let taints: Vec<String> = crate::keys::DEFAULT_DRAIN_TAINTS.iter().map(|s| (*s).to_owned()).collect();
        let cases = [
            ("cordoned", node(true, &[]), true),
            ("karpenter taint only", node(false, &["karpenter.sh/disrupted"]), true),
            ("cluster-autoscaler taint", node(false, &["ToBeDeletedByClusterAutoscaler"]), true),
            ("unrelated taint", node(false, &["dedicated"]), false),
            ("plain node", node(false, &[]), false),
            ("no spec", Node::default(), false),
        ];
        for (name, n, want) in cases {
            assert_eq!(is_draining(&n, &taints), want, "{name}");
        }
    }

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn inputs(pods: usize, any: bool, now: i64) -> HoldInputs {
        HoldInputs {
            pods_on_draining_nodes: pods,
            any_node_draining: any,
            last_signal: at(1000),
            cooldown: Duration::from_secs(60),
            max_hold: Duration::from_secs(3600),
            now: at(now),
        }
    }

    #[test]
    fn hold_rules() {
        use HoldReason::*;
        let cases = [
            (
                "pods still on the node after cooldown (kubectl back-off)",
                inputs(2, true, 1100),
                Hold::Keep { recheck_at: at(1115), reason: PodsOnDrainingNode },
            ),
            (
                "within cooldown, node done",
                inputs(0, false, 1030),
                Hold::Keep { recheck_at: at(1060), reason: Cooldown },
            ),
            (
                "another node still draining",
                inputs(0, true, 1100),
                Hold::Keep { recheck_at: at(1115), reason: DrainInProgress },
            ),
            (
                "still draining just before max-hold",
                inputs(0, true, 4590),
                Hold::Keep { recheck_at: at(4600), reason: DrainInProgress },
            ),
            ("drain over, cooldown over", inputs(0, false, 1060), Hold::Revert { expired: false }),
            ("forgotten cordon hits max-hold", inputs(1, true, 4600), Hold::Revert { expired: true }),
        ];
        for (name, i, want) in cases {
            assert_eq!(hold(i), want, "{name}");
        }
    }

    #[test]
    fn an_active_surge_always_has_a_timer_no_later_than_max_hold() {
        for pods in [0, 1] {
            for any in [false, true] {
                for now in (1000..4600).step_by(37) {
                    if let Hold::Keep { recheck_at, .. } = hold(inputs(pods, any, now)) {
                        assert!(recheck_at > at(now) && recheck_at <= at(4600));
                    }
                }
            }
        }
    }

    #[test]
    fn revert_keeps_someone_elses_value() {
        assert_eq!(revert(4, 4, 3), Revert { replicas: Some(3) }, "still ours: back to baseline");
        assert_eq!(revert(5, 4, 3), Revert { replicas: None }, "user scaled to 5: keep 5");
        assert_eq!(revert(4, 4, 0), Revert { replicas: None }, "never revert to zero");
    }
}
