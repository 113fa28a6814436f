//! Merge metadata of the built-in types kube-sim serves: for strategic merge patch and for
//! server-side apply (field ownership).
//!
//! Strategic merge reads `patchStrategy`/`patchMergeKey` struct tags from the Go types
//! (`staging/src/k8s.io/api/*/v1/types.go`, `apimachinery/.../meta/v1/types.go`). This module is a
//! hand-written copy of the tags for the fields that kubectl, controllers and tests touch. Every
//! field not listed here behaves like an untagged Go field: objects merge key by key and lists are
//! replaced wholesale. Notably upstream has NO merge key for `spec.tolerations` (pods) or
//! `spec.taints` (nodes): both are replaced, and so they are here.
//!
//! Server-side apply reads the OpenAPI extensions instead (`x-kubernetes-list-type`,
//! `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`); where a type has no list type,
//! upstream's `schemaconv` derives it from the patch strategy (a merge key makes a map keyed by
//! it, `merge` alone a set, nothing an atomic list). [`FieldMeta::apply_list`] follows that rule;
//! the exceptions (lists keyed by more fields than their merge key, keyed lists without a patch
//! strategy, `hostIPs`) and the atomic objects (`x-kubernetes-map-type: atomic`, e.g. label
//! selectors and object references) were copied from the v1.35.4 apiserver's
//! `/openapi/v3` documents. Atomic lists need no entry: they are the default.

/// A Go struct type (or a family of structs with identical tags) whose fields have patch metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schema {
    /// No metadata: objects merge, lists are replaced.
    Opaque,
    /// A kind kube-sim does not know: only `metadata` has metadata.
    GenericObject,
    Pod,
    /// `PodTemplate`: `template` is a pod template.
    PodTemplateObject,
    /// Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, ReplicationController.
    WorkloadObject,
    CronJobObject,
    NodeObject,
    ServiceObject,
    /// PodDisruptionBudget, HorizontalPodAutoscaler, Namespace, PersistentVolumeClaim: only
    /// `status.conditions` is tagged (and an atomic `spec.selector` for apply).
    ConditionsObject,
    /// Mutating/ValidatingWebhookConfiguration.
    WebhookConfigurationObject,
    /// One webhook of a webhook configuration.
    Webhook,
    ServiceAccountObject,
    /// Core Event (the storage form of both Event APIs).
    EventObject,
    /// RoleBinding and ClusterRoleBinding.
    RoleBindingObject,
    CustomResourceDefinitionObject,
    CustomResourceDefinitionStatus,
    ObjectMeta,
    PodTemplateSpec,
    PodSpec,
    /// Container and EphemeralContainer (same tags).
    Container,
    /// `resources` of a container or a pod.
    ResourceRequirements,
    EnvVar,
    EnvVarSource,
    Volume,
    /// A volume source whose `secretRef` is an atomic object reference.
    SecretRefVolumeSource,
    CsiVolumeSource,
    Affinity,
    NodeAffinity,
    TopologySpreadConstraint,
    PodStatus,
    /// The `spec` of a workload: its `template` is a pod template.
    WorkloadSpec,
    CronJobSpec,
    JobTemplateSpec,
    NodeSpec,
    NodeStatus,
    ServiceSpec,
    /// A status whose only tagged field is `conditions` (merge key `type`).
    ConditionsStatus,
    /// A `spec` whose `selector` (and PVC data sources) are atomic for apply.
    SelectorSpec,
}

/// How a list-valued field is patched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListStrategy {
    /// No `patchStrategy` tag: the patch list replaces the live one.
    Replace,
    /// `patchStrategy:"merge"` on a list of scalars: set union (finalizers, podCIDRs).
    MergeScalars,
    /// `patchStrategy:"merge" patchMergeKey:"<key>"` on a list of objects.
    MergeByKey(&'static str),
}

/// How server-side apply tracks and merges a list-valued field (`x-kubernetes-list-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ApplyList {
    /// Owned and replaced as a whole.
    Atomic,
    /// A set of scalars: items owned one by one.
    Set,
    /// Items identified (and owned) by these key fields.
    Map(&'static [&'static str]),
}

/// Patch metadata of one field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FieldMeta {
    /// The schema of the field's value (for lists: of each element).
    pub node: Schema,
    /// Meaningful only when the value is a list.
    pub list: ListStrategy,
    /// Server-side apply's list type when it is not the one the patch strategy implies.
    apply: Option<ApplyList>,
    /// For apply, the value (for a list: each item) is atomic: owned and replaced as a whole.
    pub atomic: bool,
}

impl FieldMeta {
    /// How server-side apply treats the field's list (see the module docs).
    pub(crate) fn apply_list(&self) -> ApplyList {
        // Every merging constructor below names the apply list type; the rest are atomic.
        self.apply.unwrap_or(ApplyList::Atomic)
    }
}

const OPAQUE: FieldMeta = object(Schema::Opaque);

/// Metadata of an object of schema `node` (no list strategy, not atomic).
pub(crate) const fn object(node: Schema) -> FieldMeta {
    FieldMeta { node, list: ListStrategy::Replace, apply: None, atomic: false }
}

/// A list merged by `keys[0]` in strategic merge patches and keyed by all of `keys` for apply.
const fn merge_by(keys: &'static [&'static str], node: Schema) -> FieldMeta {
    FieldMeta {
        node,
        list: ListStrategy::MergeByKey(keys[0]),
        apply: Some(ApplyList::Map(keys)),
        atomic: false,
    }
}

/// A list keyed by `keys` for apply (`+listType=map`) that has no patch strategy (replaced by
/// strategic merge patches).
const fn keyed_for_apply(keys: &'static [&'static str], node: Schema) -> FieldMeta {
    FieldMeta { node, list: ListStrategy::Replace, apply: Some(ApplyList::Map(keys)), atomic: false }
}

/// The same metadata, with the value (or each list item) atomic for apply.
const fn atomic(meta: FieldMeta) -> FieldMeta {
    FieldMeta { atomic: true, ..meta }
}

const ATOMIC: FieldMeta = atomic(OPAQUE);

const MERGE_SCALARS: FieldMeta = FieldMeta {
    node: Schema::Opaque,
    list: ListStrategy::MergeScalars,
    apply: Some(ApplyList::Set),
    atomic: false,
};

const CONDITIONS: FieldMeta = merge_by(&["type"], Schema::Opaque);

/// The schema of a whole object of `kind` (a built-in kind; unknown kinds get `GenericObject`).
pub(crate) fn root_for_kind(kind: &str) -> Schema {
    match kind {
        "Pod" => Schema::Pod,
        "PodTemplate" => Schema::PodTemplateObject,
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job" | "ReplicationController" => {
            Schema::WorkloadObject
        }
        "CronJob" => Schema::CronJobObject,
        "Node" => Schema::NodeObject,
        "Service" => Schema::ServiceObject,
        "PodDisruptionBudget" | "HorizontalPodAutoscaler" | "Namespace" | "PersistentVolumeClaim" => {
            Schema::ConditionsObject
        }
        "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
            Schema::WebhookConfigurationObject
        }
        "ServiceAccount" => Schema::ServiceAccountObject,
        "Event" => Schema::EventObject,
        "RoleBinding" | "ClusterRoleBinding" => Schema::RoleBindingObject,
        "CustomResourceDefinition" => Schema::CustomResourceDefinitionObject,
        _ => Schema::GenericObject,
    }
}

/// Patch metadata of field `key` inside a value of schema `node`.
pub(crate) fn field(node: Schema, key: &str) -> FieldMeta {
    match (node, key) {
        (Schema::Opaque, _) => OPAQUE,

        // Every top-level object has ObjectMeta.
        (
            Schema::GenericObject
            | Schema::Pod
            | Schema::PodTemplateObject
            | Schema::WorkloadObject
            | Schema::CronJobObject
            | Schema::NodeObject
            | Schema::ServiceObject
            | Schema::ConditionsObject
            | Schema::WebhookConfigurationObject
            | Schema::ServiceAccountObject
            | Schema::EventObject
            | Schema::RoleBindingObject
            | Schema::CustomResourceDefinitionObject,
            "metadata",
        ) => object(Schema::ObjectMeta),

        (Schema::Pod, "spec") => object(Schema::PodSpec),
        (Schema::Pod, "status") => object(Schema::PodStatus),
        (Schema::PodTemplateObject, "template") => object(Schema::PodTemplateSpec),
        (Schema::WorkloadObject, "spec") => object(Schema::WorkloadSpec),
        (Schema::WorkloadObject | Schema::ConditionsObject, "status") => object(Schema::ConditionsStatus),
        (Schema::ConditionsObject, "spec") => object(Schema::SelectorSpec),
        (Schema::CronJobObject, "spec") => object(Schema::CronJobSpec),
        (Schema::NodeObject, "spec") => object(Schema::NodeSpec),
        (Schema::NodeObject, "status") => object(Schema::NodeStatus),
        (Schema::ServiceObject, "spec") => object(Schema::ServiceSpec),
        (Schema::ServiceObject, "status") => object(Schema::ConditionsStatus),
        (Schema::WebhookConfigurationObject, "webhooks") => merge_by(&["name"], Schema::Webhook),
        (Schema::Webhook, "matchConditions") => merge_by(&["name"], Schema::Opaque),
        (Schema::Webhook, "namespaceSelector" | "objectSelector") => ATOMIC,
        (Schema::ServiceAccountObject, "secrets") => atomic(merge_by(&["name"], Schema::Opaque)),
        (Schema::EventObject, "involvedObject" | "related") => ATOMIC,
        (Schema::RoleBindingObject, "roleRef") => ATOMIC,
        (Schema::CustomResourceDefinitionObject, "status") => object(Schema::CustomResourceDefinitionStatus),
        (Schema::CustomResourceDefinitionStatus, "conditions") => keyed_for_apply(&["type"], Schema::Opaque),

        // metav1.ObjectMeta
        (Schema::ObjectMeta, "finalizers") => MERGE_SCALARS,
        (Schema::ObjectMeta, "ownerReferences") => atomic(merge_by(&["uid"], Schema::Opaque)),

        (Schema::PodTemplateSpec, "metadata") => object(Schema::ObjectMeta),
        (Schema::PodTemplateSpec, "spec") => object(Schema::PodSpec),

        // core/v1 PodSpec
        (Schema::PodSpec, "volumes") => merge_by(&["name"], Schema::Volume), // merge,retainKeys
        (Schema::PodSpec, "initContainers" | "containers" | "ephemeralContainers") => {
            merge_by(&["name"], Schema::Container)
        }
        (Schema::PodSpec, "imagePullSecrets") => atomic(merge_by(&["name"], Schema::Opaque)),
        (Schema::PodSpec, "hostAliases") => merge_by(&["ip"], Schema::Opaque),
        (Schema::PodSpec, "topologySpreadConstraints") => {
            merge_by(&["topologyKey", "whenUnsatisfiable"], Schema::TopologySpreadConstraint)
        }
        (Schema::PodSpec, "schedulingGates") => merge_by(&["name"], Schema::Opaque),
        (Schema::PodSpec, "resourceClaims") => merge_by(&["name"], Schema::Opaque), // merge,retainKeys
        (Schema::PodSpec, "nodeSelector") => ATOMIC,
        (Schema::PodSpec, "affinity") => object(Schema::Affinity),
        (Schema::PodSpec | Schema::Container, "resources") => object(Schema::ResourceRequirements),
        (Schema::Affinity, "nodeAffinity") => object(Schema::NodeAffinity),
        (Schema::NodeAffinity, "requiredDuringSchedulingIgnoredDuringExecution") => ATOMIC,
        (Schema::TopologySpreadConstraint, "labelSelector") => ATOMIC,
        (Schema::ResourceRequirements, "claims") => keyed_for_apply(&["name"], Schema::Opaque),
        (Schema::Volume, "cephfs" | "cinder" | "flexVolume" | "iscsi" | "rbd" | "scaleIO" | "storageos") => {
            object(Schema::SecretRefVolumeSource)
        }
        (Schema::Volume, "csi") => object(Schema::CsiVolumeSource),
        (Schema::SecretRefVolumeSource, "secretRef") => ATOMIC,
        (Schema::CsiVolumeSource, "nodePublishSecretRef") => ATOMIC,

        // core/v1 Container / EphemeralContainerCommon
        (Schema::Container, "ports") => merge_by(&["containerPort", "protocol"], Schema::Opaque),
        (Schema::Container, "env") => merge_by(&["name"], Schema::EnvVar),
        (Schema::Container, "volumeMounts") => merge_by(&["mountPath"], Schema::Opaque),
        (Schema::Container, "volumeDevices") => merge_by(&["devicePath"], Schema::Opaque),
        (Schema::EnvVar, "valueFrom") => object(Schema::EnvVarSource),
        (
            Schema::EnvVarSource,
            "configMapKeyRef" | "fieldRef" | "fileKeyRef" | "resourceFieldRef" | "secretKeyRef",
        ) => ATOMIC,

        // core/v1 PodStatus (hostIPs: merge tags but `+listType=atomic`)
        (Schema::PodStatus, "conditions") => CONDITIONS,
        (Schema::PodStatus, "podIPs") => merge_by(&["ip"], Schema::Opaque),
        (Schema::PodStatus, "hostIPs") => {
            FieldMeta { apply: Some(ApplyList::Atomic), ..merge_by(&["ip"], Schema::Opaque) }
        }
        (Schema::PodStatus, "resourceClaimStatuses") => merge_by(&["name"], Schema::Opaque),

        (Schema::WorkloadSpec, "template") => object(Schema::PodTemplateSpec),
        (Schema::WorkloadSpec | Schema::SelectorSpec, "selector") => ATOMIC,
        (Schema::SelectorSpec, "dataSource" | "dataSourceRef") => ATOMIC,
        (Schema::CronJobSpec, "jobTemplate") => object(Schema::JobTemplateSpec),
        (Schema::JobTemplateSpec, "metadata") => object(Schema::ObjectMeta),
        (Schema::JobTemplateSpec, "spec") => object(Schema::WorkloadSpec),

        // core/v1 NodeSpec / NodeStatus (taints: no tag upstream, replaced)
        (Schema::NodeSpec, "podCIDRs") => MERGE_SCALARS,
        (Schema::NodeStatus, "conditions") => CONDITIONS,
        (Schema::NodeStatus, "addresses") => merge_by(&["type"], Schema::Opaque),

        // core/v1 ServiceSpec
        (Schema::ServiceSpec, "ports") => merge_by(&["port", "protocol"], Schema::Opaque),
        (Schema::ServiceSpec, "selector") => ATOMIC,

        (Schema::ConditionsStatus, "conditions") => CONDITIONS,

        _ => OPAQUE,
    }
}
