//! Structure-aware AdmissionReviews: random envelopes around random Evictions, Deployments and
//! PDBs (selectors, strategies, int-or-percent values, our annotations with any value). The
//! status must be the one a model of the webhook's rules predicts, and the controller's
//! decisions on the admitted object must not panic.
#![no_main]

use arbitrary::Arbitrary;
use eviction_autoscaler_fuzz::{IntOrPercent, call, decide};
use http::StatusCode;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

#[derive(Arbitrary, Debug)]
enum Endpoint {
    Eviction,
    Deployment,
    Pdb,
}

impl Endpoint {
    fn path(&self) -> &'static str {
        match self {
            Self::Eviction => "/validate-eviction",
            Self::Deployment => "/validate-deployment",
            Self::Pdb => "/validate-pdb",
        }
    }
}

/// A string that is usually one of a few meaningful values, sometimes anything.
#[derive(Arbitrary, Debug)]
enum Text {
    Known(u8),
    Any(String),
}

impl Text {
    fn get<'a>(&'a self, known: &[&'a str]) -> &'a str {
        match self {
            Self::Known(i) => known[usize::from(*i) % known.len()],
            Self::Any(s) => s,
        }
    }
}

const LABEL_KEYS: [&str; 4] = ["app", "tier", "app.kubernetes.io/name", ""];
const LABEL_VALUES: [&str; 4] = ["web", "db", "", "a-b.c_d"];
const OPERATORS: [&str; 5] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt"];
const ANNOTATION_KEYS: [&str; 9] = [
    "eviction-autoscaler.azure.com/pdb-create",
    "eviction-autoscaler.azure.com/surge",
    "evictionSurgeReplicas",
    "eviction-autoscaler.azure.com/original-min-replicas",
    "eviction-autoscaler.azure.com/surge-overrides",
    "ownedBy",
    "target",
    "eviction-autoscaler.azure.com/original-pdb-spec",
    "eviction-autoscaler.azure.com/pinned-floor",
];
const ANNOTATION_VALUES: [&str; 10] =
    ["true", "false", "True", "maybe", "", "3", "-1", "EvictionAutoScaler", "{\"count\":1}", "99999999999"];

#[derive(Arbitrary, Debug)]
struct Selector {
    labels: Vec<(Text, Text)>,
    expressions: Vec<(Text, Text, Vec<Text>)>,
}

impl Selector {
    fn json(&self) -> Value {
        let labels: Map<String, Value> = self
            .labels
            .iter()
            .map(|(k, v)| (k.get(&LABEL_KEYS).to_owned(), json!(v.get(&LABEL_VALUES))))
            .collect();
        let expressions: Vec<Value> = self
            .expressions
            .iter()
            .map(|(key, operator, values)| {
                json!({
                    "key": key.get(&LABEL_KEYS),
                    "operator": operator.get(&OPERATORS),
                    "values": values.iter().map(|v| v.get(&LABEL_VALUES)).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({ "matchLabels": labels, "matchExpressions": expressions })
    }
}

fn annotations(pairs: &[(Text, Text)]) -> Value {
    let map: Map<String, Value> = pairs
        .iter()
        .map(|(k, v)| (k.get(&ANNOTATION_KEYS).to_owned(), json!(v.get(&ANNOTATION_VALUES))))
        .collect();
    Value::Object(map)
}

#[derive(Arbitrary, Debug)]
struct DeploymentIn {
    replicas: Option<i32>,
    selector: Selector,
    template_labels: Vec<(Text, Text)>,
    strategy: Option<(Text, Option<IntOrPercent>)>,
    annotations: Vec<(Text, Text)>,
}

impl DeploymentIn {
    fn json(&self, name: &str, namespace: &str) -> Value {
        let template: Map<String, Value> = self
            .template_labels
            .iter()
            .map(|(k, v)| (k.get(&LABEL_KEYS).to_owned(), json!(v.get(&LABEL_VALUES))))
            .collect();
        let mut spec = json!({
            "selector": self.selector.json(),
            "template": { "metadata": { "labels": template }, "spec": { "containers": [{ "name": "c", "image": "i" }] } },
        });
        if let Some(replicas) = self.replicas {
            spec["replicas"] = json!(replicas);
        }
        if let Some((kind, max_surge)) = &self.strategy {
            spec["strategy"] = json!({ "type": kind.get(&["RollingUpdate", "Recreate"]) });
            if let Some(max_surge) = max_surge {
                spec["strategy"]["rollingUpdate"] = json!({ "maxSurge": json!(max_surge.value()) });
            }
        }
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": name, "namespace": namespace, "uid": "d-uid", "annotations": annotations(&self.annotations) },
            "spec": spec,
        })
    }
}

#[derive(Arbitrary, Debug)]
struct PdbIn {
    min_available: Option<IntOrPercent>,
    max_unavailable: Option<IntOrPercent>,
    selector: Option<Selector>,
    annotations: Vec<(Text, Text)>,
    disruptions_allowed: Option<i32>,
}

impl PdbIn {
    fn json(&self, name: &str, namespace: &str) -> Value {
        let mut spec = Map::new();
        if let Some(v) = &self.min_available {
            spec.insert("minAvailable".into(), json!(v.value()));
        }
        if let Some(v) = &self.max_unavailable {
            spec.insert("maxUnavailable".into(), json!(v.value()));
        }
        if let Some(selector) = &self.selector {
            spec.insert("selector".into(), selector.json());
        }
        let mut pdb = json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": { "name": name, "namespace": namespace, "annotations": annotations(&self.annotations) },
            "spec": spec,
        });
        if let Some(allowed) = self.disruptions_allowed {
            pdb["status"] = json!({ "disruptionsAllowed": allowed, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0 });
        }
        pdb
    }
}

#[derive(Arbitrary, Debug)]
enum Object {
    Eviction {
        dry_run_all: Option<bool>,
        v1beta1: bool,
    },
    Deployment(DeploymentIn),
    Pdb(PdbIn),
    /// An object of another kind (a misregistered webhook).
    Other,
    /// An object without apiVersion or kind.
    Untyped,
}

#[derive(Arbitrary, Debug)]
struct Review {
    endpoint: Endpoint,
    api_version: Text,
    kind: Text,
    uid: Text,
    operation: Option<Text>,
    dry_run: Option<bool>,
    name: Text,
    namespace: Text,
    object: Option<Object>,
    /// A PDB beside an admitted Deployment, for the controller's decisions.
    neighbour: Option<PdbIn>,
}

impl Review {
    /// The review as JSON, the object decoded as the controller would get it, and whether
    /// the object's type is the endpoint's.
    fn build(&self) -> (Value, Option<Value>, bool) {
        let name = self.name.get(&["web", "", "x"]);
        let namespace = self.namespace.get(&["shop", "", "kube-system"]);
        let (object, matches) = match &self.object {
            None => (None, true),
            Some(Object::Eviction { dry_run_all, v1beta1 }) => {
                let mut eviction = json!({
                    "apiVersion": if *v1beta1 { "policy/v1beta1" } else { "policy/v1" }, "kind": "Eviction",
                    "metadata": { "name": name, "namespace": namespace },
                });
                if let Some(all) = dry_run_all {
                    eviction["deleteOptions"] = json!({ "dryRun": if *all { vec!["All"] } else { vec![] } });
                }
                (Some(eviction), matches!(self.endpoint, Endpoint::Eviction))
            }
            Some(Object::Deployment(d)) => {
                (Some(d.json(name, namespace)), matches!(self.endpoint, Endpoint::Deployment))
            }
            Some(Object::Pdb(p)) => (Some(p.json(name, namespace)), matches!(self.endpoint, Endpoint::Pdb)),
            Some(Object::Other) => (Some(json!({ "apiVersion": "v1", "kind": "ConfigMap" })), false),
            Some(Object::Untyped) => (Some(json!({ "metadata": { "name": name } })), true),
        };
        let mut request = json!({
            "uid": self.uid.get(&["705ab4f5-6393-11e8-b7cc-42010a800002", ""]),
            "name": name, "namespace": namespace,
            "userInfo": { "username": "system:serviceaccount:kube-system:drainer" },
        });
        if let Some(operation) = &self.operation {
            request["operation"] = json!(operation.get(&["CREATE", "UPDATE", "DELETE", "CONNECT"]));
        }
        if let Some(dry_run) = self.dry_run {
            request["dryRun"] = json!(dry_run);
        }
        if let Some(object) = &object {
            request["object"] = object.clone();
        }
        let review = json!({
            "apiVersion": self.api_version.get(&["admission.k8s.io/v1", "admission.k8s.io/v1beta1"]),
            "kind": self.kind.get(&["AdmissionReview", "Status"]),
            "request": request,
        });
        (review, object, matches)
    }
}

fuzz_target!(|review: Review| {
    let (body, object, type_matches) = review.build();
    let request = &body["request"];
    let well_formed = body["apiVersion"] == "admission.k8s.io/v1"
        && body["kind"] == "AdmissionReview"
        && request["uid"].as_str().is_some_and(|uid| !uid.is_empty())
        && type_matches;
    let answer =
        call("POST", review.endpoint.path(), Some("application/json"), body.to_string().into_bytes());
    let expected = if well_formed { StatusCode::OK } else { StatusCode::BAD_REQUEST };
    assert_eq!(answer.status, expected, "{body}\n→ {}", answer.body);
    if well_formed {
        assert_eq!(answer.body["response"]["uid"], request["uid"]);
    }
    // The controller's decisions on the object, whatever the operation.
    match &review.object {
        Some(Object::Deployment(_)) => {
            if let Ok(deployment) = serde_json::from_value::<Deployment>(object.unwrap_or_default()) {
                let neighbour = review.neighbour.as_ref().map(|p| p.json("web-pdb", "shop"));
                let pdbs: Vec<PodDisruptionBudget> =
                    neighbour.and_then(|p| serde_json::from_value(p).ok()).into_iter().collect();
                decide(&deployment, &pdbs);
            }
        }
        Some(Object::Pdb(_)) => {
            if let Ok(pdb) = serde_json::from_value::<PodDisruptionBudget>(object.unwrap_or_default()) {
                decide(&Deployment::default(), &[pdb]);
            }
        }
        _ => {}
    }
});
