//! The catalogue of served resources: the built-in types and those defined by applied CRDs.

use std::sync::{Arc, RwLock};

use serde_json::Value;

/// Where the replicas and selector of a scalable resource live (the `/scale` subresource).
#[derive(Clone, Debug, PartialEq)]
pub struct ScalePaths {
    /// Dotted path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas: String,
    /// Dotted path of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas: String,
    /// Dotted path of the selector: a `metav1.LabelSelector` object for built-in types, a
    /// string for CRDs (`labelSelectorPath`).
    pub label_selector: Option<String>,
}

/// An extra subresource shown in discovery (registered with a handler, e.g. `pods/eviction`).
#[derive(Clone, Debug, PartialEq)]
pub struct ExtraSubresource {
    /// `eviction`.
    pub name: String,
    /// Response kind group/version/kind, e.g. `policy`/`v1`/`Eviction`.
    pub group: String,
    /// Version of the response kind.
    pub version: String,
    /// Kind of the response.
    pub kind: String,
    /// Verbs, e.g. `["create"]`.
    pub verbs: Vec<String>,
}

/// One served resource (a group/version/plural).
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceInfo {
    /// API group, `""` for core.
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Plural resource name, e.g. `deployments`.
    pub plural: String,
    /// Singular name, e.g. `deployment`.
    pub singular: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names (`deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Has a `/status` subresource.
    pub status: bool,
    /// Has a `/scale` subresource.
    pub scale: Option<ScalePaths>,
    /// Built-in type (strategic merge patch allowed) rather than a custom resource.
    pub builtin: bool,
    /// A CRD's `additionalPrinterColumns` (empty when it declares none); `None` for the
    /// built-in kinds.
    pub printer_columns: Option<Vec<Value>>,
    /// The group whose store holds the objects (events.k8s.io events live with core events).
    pub storage_group: String,
    /// PUT without `metadata.resourceVersion` is allowed (false for PDBs).
    pub allow_unconditional_update: bool,
    /// `metadata.generation` is maintained.
    pub tracks_generation: bool,
    /// Subresources served by registered handlers.
    pub extra_subresources: Vec<ExtraSubresource>,
    /// Only `create`, never stored: the access reviews, answered by the authorizer.
    pub create_only: bool,
    /// A custom resource version's `openAPIV3Schema`: its objects are pruned by it (built-in
    /// kinds use the generated tree of [`crate::schema`]).
    pub schema: Option<Arc<Value>>,
}

impl ResourceInfo {
    /// `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
    /// `deployments.apps` / `pods`.
    pub fn group_resource(&self) -> String {
        crate::error::group_resource(&self.group, &self.plural)
    }
    /// `Deployment.apps` / `Pod`: the label used in 422 messages.
    pub fn kind_label(&self) -> String {
        if self.group.is_empty() { self.kind.clone() } else { format!("{}.{}", self.kind, self.group) }
    }
    /// The storage key `(group, plural)` objects of this resource live under.
    pub fn storage_key(&self) -> StorageKey {
        StorageKey { group: self.storage_group.clone(), plural: self.plural.clone() }
    }
    /// `PodList`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
}

/// Identifies one object collection in the store.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StorageKey {
    /// Group of the storage (core events for both event APIs).
    pub group: String,
    /// Plural.
    pub plural: String,
}

struct Builtin {
    gv: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    status: bool,
    scale: bool,
    all: bool,
    generation: bool,
}

const fn b(
    gv: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    flags: (bool, bool, bool, bool),
) -> Builtin {
    Builtin {
        gv,
        plural,
        kind,
        namespaced,
        short,
        status: flags.0,
        scale: flags.1,
        all: flags.2,
        generation: flags.3,
    }
}

// flags: (status, scale, category all, tracks generation)
const BUILTINS: &[Builtin] = &[
    b("v1", "namespaces", "Namespace", false, &["ns"], (true, false, false, false)),
    b("v1", "nodes", "Node", false, &["no"], (true, false, false, false)),
    b("v1", "pods", "Pod", true, &["po"], (true, false, true, true)),
    b("v1", "events", "Event", true, &["ev"], (false, false, false, false)),
    b("v1", "services", "Service", true, &["svc"], (true, false, true, false)),
    b("v1", "endpoints", "Endpoints", true, &["ep"], (false, false, false, false)),
    b("v1", "configmaps", "ConfigMap", true, &["cm"], (false, false, false, false)),
    b("v1", "secrets", "Secret", true, &[], (false, false, false, false)),
    b("v1", "serviceaccounts", "ServiceAccount", true, &["sa"], (false, false, false, false)),
    b("apps/v1", "deployments", "Deployment", true, &["deploy"], (true, true, true, true)),
    b("apps/v1", "replicasets", "ReplicaSet", true, &["rs"], (true, true, true, true)),
    b("apps/v1", "daemonsets", "DaemonSet", true, &["ds"], (true, false, true, true)),
    b("apps/v1", "statefulsets", "StatefulSet", true, &["sts"], (true, true, true, true)),
    b("apps/v1", "controllerrevisions", "ControllerRevision", true, &[], (false, false, false, false)),
    b("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", true, &["pdb"], (true, false, false, true)),
    b(
        "autoscaling/v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
        &["hpa"],
        // No generation: the HPA strategy never sets one (the real v1.35 answers none).
        (true, false, true, false),
    ),
    b("coordination.k8s.io/v1", "leases", "Lease", true, &[], (false, false, false, false)),
    b("events.k8s.io/v1", "events", "Event", true, &["ev"], (false, false, false, false)),
    b(
        "admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
        &[],
        (false, false, false, true),
    ),
    b(
        "admissionregistration.k8s.io/v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
        &[],
        (false, false, false, true),
    ),
    b("rbac.authorization.k8s.io/v1", "roles", "Role", true, &[], (false, false, false, false)),
    b("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", true, &[], (false, false, false, false)),
    b(
        "rbac.authorization.k8s.io/v1",
        "clusterroles",
        "ClusterRole",
        false,
        &[],
        (false, false, false, false),
    ),
    b(
        "rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        &[],
        (false, false, false, false),
    ),
    b(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        (true, false, false, true),
    ),
];

fn builtin_info(bi: &Builtin) -> ResourceInfo {
    let (group, version) = match bi.gv.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), bi.gv.to_string()),
    };
    let storage_group = if bi.plural == "events" { String::new() } else { group.clone() };
    ResourceInfo {
        group,
        version,
        plural: bi.plural.to_string(),
        singular: bi.kind.to_lowercase(),
        kind: bi.kind.to_string(),
        namespaced: bi.namespaced,
        short_names: bi.short.iter().map(|s| s.to_string()).collect(),
        categories: if bi.all { vec!["all".to_string()] } else { Vec::new() },
        status: bi.status,
        scale: bi.scale.then(|| ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".spec.selector".into()),
        }),
        builtin: true,
        printer_columns: None,
        storage_group,
        allow_unconditional_update: bi.plural != "poddisruptionbudgets",
        tracks_generation: bi.generation,
        extra_subresources: Vec::new(),
        create_only: false,
        schema: None,
    }
}

/// `authorization.k8s.io/v1`: the access reviews kubectl's `auth can-i` creates.
const REVIEWS: &[(&str, &str, bool)] = &[
    ("localsubjectaccessreviews", "LocalSubjectAccessReview", true),
    ("selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
    ("subjectaccessreviews", "SubjectAccessReview", false),
];

fn review_info((plural, kind, namespaced): &(&'static str, &'static str, bool)) -> ResourceInfo {
    let review = Builtin {
        gv: "authorization.k8s.io/v1",
        plural,
        kind,
        namespaced: *namespaced,
        short: &[],
        status: false,
        scale: false,
        all: false,
        generation: false,
    };
    ResourceInfo { create_only: true, ..builtin_info(&review) }
}

/// The set of served resources; CRDs add and remove entries at run time.
#[derive(Debug)]
pub struct Catalogue {
    entries: RwLock<Vec<Arc<ResourceInfo>>>,
}

impl Default for Catalogue {
    fn default() -> Self {
        let builtins = BUILTINS.iter().map(builtin_info).chain(REVIEWS.iter().map(review_info));
        Self { entries: RwLock::new(builtins.map(Arc::new).collect()) }
    }
}

impl Catalogue {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<ResourceInfo>>> {
        self.entries.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Arc<ResourceInfo>>> {
        self.entries.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    /// Every served resource, in registration order.
    pub fn all(&self) -> Vec<Arc<ResourceInfo>> {
        self.read().clone()
    }
    /// The resource served at `group`/`version`/`plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.read().iter().find(|r| r.group == group && r.version == version && r.plural == plural).cloned()
    }
    /// The resource for a manifest's `apiVersion` and `kind`.
    pub fn find_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        self.read().iter().find(|r| r.api_version() == api_version && r.kind == kind).cloned()
    }
    /// True when some version of `group` is served.
    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.read().iter().any(|r| r.group == group && r.version == version)
    }
    /// Adds or replaces (same group/version/plural) an entry.
    pub fn upsert(&self, info: ResourceInfo) {
        let mut entries = self.write();
        match entries
            .iter_mut()
            .find(|r| r.group == info.group && r.version == info.version && r.plural == info.plural)
        {
            Some(slot) => *slot = Arc::new(info),
            None => entries.push(Arc::new(info)),
        }
    }
    /// Removes every non-built-in entry of `group`/`plural` (a deleted CRD).
    pub fn remove_custom(&self, group: &str, plural: &str) {
        self.write().retain(|r| r.builtin || r.group != group || r.plural != plural);
    }
    /// Adds a handler-served subresource to discovery of `group`/`plural` (all versions).
    pub fn add_extra_subresource(&self, group: &str, plural: &str, sub: ExtraSubresource) {
        let mut entries = self.write();
        for slot in entries.iter_mut().filter(|r| r.group == group && r.plural == plural) {
            let mut info = (**slot).clone();
            info.extra_subresources.retain(|s| s.name != sub.name);
            info.extra_subresources.push(sub.clone());
            *slot = Arc::new(info);
        }
    }
}

/// The served versions of a CRD object as catalogue entries, under its accepted names (empty
/// while its names are not accepted, or when it is malformed).
pub fn crd_resources(crd: &Value) -> Vec<ResourceInfo> {
    if !crate::cluster_logic::crd_status::is_served(crd) {
        return Vec::new();
    }
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default().to_string();
    let names = &Value::Object(crate::cluster_logic::crd_status::served_names(crd));
    // The URL names the CRD (`<plural>.<group>`): the spec's plural.
    let plural = spec["names"]["plural"].as_str().unwrap_or_default().to_string();
    let kind = names["kind"].as_str().unwrap_or_default().to_string();
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let mut out = Vec::new();
    for version in spec["versions"].as_array().into_iter().flatten() {
        if version["served"].as_bool() == Some(false) {
            continue;
        }
        let Some(vname) = version["name"].as_str() else { continue };
        let sub = &version["subresources"];
        let scale = sub.get("scale").filter(|s| s.is_object()).map(|s| ScalePaths {
            spec_replicas: s["specReplicasPath"].as_str().unwrap_or(".spec.replicas").to_string(),
            status_replicas: s["statusReplicasPath"].as_str().unwrap_or(".status.replicas").to_string(),
            label_selector: s["labelSelectorPath"].as_str().map(String::from),
        });
        out.push(ResourceInfo {
            group: group.clone(),
            version: vname.to_string(),
            plural: plural.clone(),
            singular: names["singular"].as_str().map(String::from).unwrap_or_else(|| kind.to_lowercase()),
            kind: kind.clone(),
            namespaced,
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            status: sub.get("status").is_some_and(|s| s.is_object()),
            scale,
            builtin: false,
            printer_columns: Some(
                version["additionalPrinterColumns"].as_array().cloned().unwrap_or_default(),
            ),
            storage_group: group.clone(),
            allow_unconditional_update: true,
            tracks_generation: true,
            extra_subresources: Vec::new(),
            create_only: false,
            schema: Some(&version["schema"]["openAPIV3Schema"])
                .filter(|s| s.is_object())
                .map(|s| Arc::new(s.clone())),
        });
    }
    out
}
