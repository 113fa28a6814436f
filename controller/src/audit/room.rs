//! How many more pods like a template the schedulable nodes could hold: an estimate from
//! requests and allocatable, labelled as such wherever it is shown. Not a scheduler
//! simulation: taints, affinity, topology spread, host ports and volumes are not looked at.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use eviction_autoscaler_shared::drain::is_draining;

/// A Kubernetes quantity (`100m`, `1.5`, `128Mi`, `2Gi`, `1e3`) in base units; `None` when it
/// cannot be read.
pub fn quantity(text: &str) -> Option<f64> {
    // Two-letter suffixes first: "Mi" before "M" and "m".
    const SUFFIXES: [(&str, f64); 15] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let text = text.trim();
    for (suffix, factor) in SUFFIXES {
        if let Some(number) = text.strip_suffix(suffix) {
            return number.parse::<f64>().ok().map(|n| n * factor);
        }
    }
    text.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// CPU (cores) and memory (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Amounts {
    cpu: f64,
    memory: f64,
}

fn amounts(list: Option<&BTreeMap<String, Quantity>>) -> Amounts {
    let get = |name| list.and_then(|l| l.get(name)).and_then(|q| quantity(&q.0)).unwrap_or(0.0);
    Amounts { cpu: get("cpu"), memory: get("memory") }
}

/// What a pod asks of its node: its containers' requests summed, or its largest init
/// container's when larger (they run one at a time, before the others).
fn requests(spec: &PodSpec) -> Amounts {
    let of = |c: &k8s_openapi::api::core::v1::Container| {
        amounts(c.resources.as_ref().and_then(|r| r.requests.as_ref()))
    };
    let sum = spec
        .containers
        .iter()
        .map(of)
        .fold(Amounts::default(), |a, b| Amounts { cpu: a.cpu + b.cpu, memory: a.memory + b.memory });
    spec.init_containers
        .iter()
        .flatten()
        .map(of)
        .fold(sum, |a, b| Amounts { cpu: a.cpu.max(b.cpu), memory: a.memory.max(b.memory) })
}

/// How many pods of `template` fit on the nodes a surge pod may go to — not cordoned, not
/// draining (`drain_taints`), not `excluded` (the node being drained) — given the pods already
/// there. Saturates at `i32::MAX`.
pub fn room(
    nodes: &[Node],
    pods: &[Pod],
    template: &PodSpec,
    drain_taints: &[String],
    excluded: Option<&str>,
) -> i32 {
    let wanted = requests(template);
    let mut total: f64 = 0.0;
    for node in nodes.iter().filter(|n| !is_draining(n, drain_taints)) {
        let name = node.metadata.name.as_deref();
        if name.is_none() || name == excluded {
            continue;
        }
        let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
        let capacity = amounts(allocatable);
        let max_pods = allocatable.and_then(|a| a.get("pods")).and_then(|q| quantity(&q.0)).unwrap_or(110.0);
        let here: Vec<&Pod> = pods
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == name)
            .filter(|p| {
                !matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"))
            })
            .collect();
        let used = here
            .iter()
            .filter_map(|p| p.spec.as_ref())
            .map(requests)
            .fold(Amounts::default(), |a, b| Amounts { cpu: a.cpu + b.cpu, memory: a.memory + b.memory });
        let by = |free: f64, each: f64| if each > 0.0 { (free / each).floor() } else { f64::INFINITY };
        let fits = (max_pods - here.len() as f64)
            .min(by(capacity.cpu - used.cpu, wanted.cpu))
            .min(by(capacity.memory - used.memory, wanted.memory))
            .max(0.0);
        total += fits;
    }
    if total >= f64::from(i32::MAX) { i32::MAX } else { total as i32 }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn quantities_in_every_notation() {
        let cases = [
            ("100m", Some(0.1)),
            ("2", Some(2.0)),
            ("1.5", Some(1.5)),
            ("128Mi", Some(134_217_728.0)),
            ("1Gi", Some(1_073_741_824.0)),
            ("1G", Some(1e9)),
            ("1e3", Some(1000.0)),
            ("500k", Some(500_000.0)),
            ("lots", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(quantity(text), want, "{text}");
        }
    }

    fn node(name: &str, cpu: &str, memory: &str, pods: &str, cordoned: bool) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"unschedulable": cordoned},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}
        }))
        .unwrap()
    }

    fn pod_on(node: &str, cpu: &str, memory: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": "Running"}
        }))
        .unwrap()
    }

    fn template(cpu: &str, memory: &str) -> PodSpec {
        serde_json::from_value(
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}),
        )
        .unwrap()
    }

    #[test]
    fn room_counts_what_is_left_on_the_nodes_a_surge_pod_may_use() {
        let taints = vec!["node.kubernetes.io/unschedulable".to_owned()];
        let nodes = [
            node("a", "2", "4Gi", "110", false),
            node("b", "4", "8Gi", "3", false),
            node("cordoned", "64", "256Gi", "110", true),
        ];
        let pods = [pod_on("a", "1500m", "1Gi"), pod_on("b", "1", "1Gi"), pod_on("b", "1", "1Gi")];
        // a: 0.5 CPU left → 1 pod of 500m; b: CPU for 4 but one pod slot left; cordoned: none.
        assert_eq!(room(&nodes, &pods, &template("500m", "1Gi"), &taints, None), 2);
        // Memory binds: a has 3Gi left, b 6Gi but one slot.
        assert_eq!(room(&nodes, &pods, &template("10m", "2Gi"), &taints, None), 2);
        // The node being drained is not counted.
        assert_eq!(room(&nodes, &pods, &template("500m", "1Gi"), &taints, Some("b")), 1);
        // Nothing requested: the pod slots bind.
        assert_eq!(room(&nodes, &pods, &PodSpec::default(), &taints, Some("a")), 1);
        // Too big for any node.
        assert_eq!(room(&nodes, &pods, &template("3", "1Gi"), &taints, None), 0);
    }
}
