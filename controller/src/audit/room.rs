//! How many more pods like a template the schedulable nodes could hold: an estimate from
//! requests and allocatable, labelled as such wherever it is shown. Not a scheduler
//! simulation: taints, affinity, topology spread, host ports and volumes are not looked at.

use std::collections::{BTreeMap, HashMap};

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

/// What is left on each node a surge pod may go to — not cordoned, not draining
/// (`drain_taints`) — given the pods already there, worked out once.
#[derive(Clone, Debug, Default)]
pub struct Capacity {
    nodes: Vec<Free>,
}

#[derive(Clone, Debug)]
struct Free {
    name: String,
    pods: f64,
    left: Amounts,
}

impl Capacity {
    pub fn new(nodes: &[Node], pods: &[Pod], drain_taints: &[String]) -> Self {
        let mut used: HashMap<&str, (f64, Amounts)> = HashMap::new();
        for pod in pods {
            let finished =
                matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"));
            let Some(spec) = pod.spec.as_ref().filter(|_| !finished) else { continue };
            let Some(node) = spec.node_name.as_deref() else { continue };
            let (count, amounts) = used.entry(node).or_default();
            let wanted = requests(spec);
            *count += 1.0;
            *amounts = Amounts { cpu: amounts.cpu + wanted.cpu, memory: amounts.memory + wanted.memory };
        }
        let nodes = nodes
            .iter()
            .filter(|n| !is_draining(n, drain_taints))
            .filter_map(|node| {
                let name = node.metadata.name.clone()?;
                let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
                let capacity = amounts(allocatable);
                let max_pods =
                    allocatable.and_then(|a| a.get("pods")).and_then(|q| quantity(&q.0)).unwrap_or(110.0);
                let (count, taken) = used.get(name.as_str()).copied().unwrap_or_default();
                let left = Amounts { cpu: capacity.cpu - taken.cpu, memory: capacity.memory - taken.memory };
                Some(Free { name, pods: max_pods - count, left })
            })
            .collect();
        Capacity { nodes }
    }

    /// How many pods of `template` fit, leaving out `excluded` (the node being drained).
    /// Saturates at `i32::MAX`.
    pub fn room(&self, template: &PodSpec, excluded: Option<&str>) -> i32 {
        let wanted = requests(template);
        let by = |free: f64, each: f64| if each > 0.0 { (free / each).floor() } else { f64::INFINITY };
        let total: f64 = self
            .nodes
            .iter()
            .filter(|n| Some(n.name.as_str()) != excluded)
            .map(|n| n.pods.min(by(n.left.cpu, wanted.cpu)).min(by(n.left.memory, wanted.memory)).max(0.0))
            .sum();
        // `as` saturates a float; the bound keeps the sum of many nodes from wrapping.
        total.min(f64::from(i32::MAX)) as i32
    }
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
        let capacity = Capacity::new(&nodes, &pods, &taints);
        assert_eq!(capacity.room(&template("500m", "1Gi"), None), 2);
        // Memory binds: a has 3Gi left, b 6Gi but one slot.
        assert_eq!(capacity.room(&template("10m", "2Gi"), None), 2);
        // The node being drained is not counted.
        assert_eq!(capacity.room(&template("500m", "1Gi"), Some("b")), 1);
        // Nothing requested: the pod slots bind.
        assert_eq!(capacity.room(&PodSpec::default(), Some("a")), 1);
        // Too big for any node.
        assert_eq!(capacity.room(&template("3", "1Gi"), None), 0);
    }
}
