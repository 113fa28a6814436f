//! Strategic-merge metadata for the built-in types kube-sim serves.
//!
//! Upstream reads `patchStrategy`/`patchMergeKey` struct tags from the Go types
//! (`staging/src/k8s.io/api/*/v1/types.go`, `apimachinery/.../meta/v1/types.go`). This module is a
//! hand-written copy of the tags for the fields that kubectl, controllers and tests touch. Every
//! field not listed here behaves like an untagged Go field: objects merge key by key and lists are
//! replaced wholesale. Notably upstream has NO merge key for `spec.tolerations` (pods) or
//! `spec.taints` (nodes): both are replaced, and so they are here.

/// A Go struct type (or a family of structs with identical tags) whose fields have patch metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Schema {
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
    /// `status.conditions` is tagged.
    ConditionsObject,
    /// Mutating/ValidatingWebhookConfiguration.
    WebhookConfigurationObject,
    ObjectMeta,
    PodTemplateSpec,
    PodSpec,
    /// Container and EphemeralContainer (same tags).
    Container,
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
}

/// How a list-valued field is patched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ListStrategy {
    /// No `patchStrategy` tag: the patch list replaces the live one.
    Replace,
    /// `patchStrategy:"merge"` on a list of scalars: set union (finalizers, podCIDRs).
    MergeScalars,
    /// `patchStrategy:"merge" patchMergeKey:"<key>"` on a list of objects.
    MergeByKey(&'static str),
}

/// Patch metadata of one field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FieldMeta {
    /// The schema of the field's value (for lists: of each element).
    pub node: Schema,
    /// Meaningful only when the value is a list.
    pub list: ListStrategy,
}

const OPAQUE: FieldMeta = FieldMeta { node: Schema::Opaque, list: ListStrategy::Replace };

const fn object(node: Schema) -> FieldMeta {
    FieldMeta { node, list: ListStrategy::Replace }
}

const fn merge_by(key: &'static str, node: Schema) -> FieldMeta {
    FieldMeta { node, list: ListStrategy::MergeByKey(key) }
}

const MERGE_SCALARS: FieldMeta = FieldMeta { node: Schema::Opaque, list: ListStrategy::MergeScalars };

const CONDITIONS: FieldMeta = merge_by("type", Schema::Opaque);

/// The schema of a whole object of `kind` (a built-in kind; unknown kinds get `GenericObject`).
pub(super) fn root_for_kind(kind: &str) -> Schema {
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
        _ => Schema::GenericObject,
    }
}

/// Patch metadata of field `key` inside a value of schema `node`.
pub(super) fn field(node: Schema, key: &str) -> FieldMeta {
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
            | Schema::WebhookConfigurationObject,
            "metadata",
        ) => object(Schema::ObjectMeta),

        (Schema::Pod, "spec") => object(Schema::PodSpec),
        (Schema::Pod, "status") => object(Schema::PodStatus),
        (Schema::PodTemplateObject, "template") => object(Schema::PodTemplateSpec),
        (Schema::WorkloadObject, "spec") => object(Schema::WorkloadSpec),
        (Schema::WorkloadObject | Schema::ConditionsObject, "status") => object(Schema::ConditionsStatus),
        (Schema::CronJobObject, "spec") => object(Schema::CronJobSpec),
        (Schema::NodeObject, "spec") => object(Schema::NodeSpec),
        (Schema::NodeObject, "status") => object(Schema::NodeStatus),
        (Schema::ServiceObject, "spec") => object(Schema::ServiceSpec),
        (Schema::ServiceObject, "status") => object(Schema::ConditionsStatus),
        (Schema::WebhookConfigurationObject, "webhooks") => merge_by("name", Schema::Opaque),

        // metav1.ObjectMeta
        (Schema::ObjectMeta, "finalizers") => MERGE_SCALARS,
        (Schema::ObjectMeta, "ownerReferences") => merge_by("uid", Schema::Opaque),

        (Schema::PodTemplateSpec, "metadata") => object(Schema::ObjectMeta),
        (Schema::PodTemplateSpec, "spec") => object(Schema::PodSpec),

        // core/v1 PodSpec
        (Schema::PodSpec, "volumes") => merge_by("name", Schema::Opaque), // merge,retainKeys
        (Schema::PodSpec, "initContainers" | "containers" | "ephemeralContainers") => {
            merge_by("name", Schema::Container)
        }
        (Schema::PodSpec, "imagePullSecrets") => merge_by("name", Schema::Opaque),
        (Schema::PodSpec, "hostAliases") => merge_by("ip", Schema::Opaque),
        (Schema::PodSpec, "topologySpreadConstraints") => merge_by("topologyKey", Schema::Opaque),
        (Schema::PodSpec, "schedulingGates") => merge_by("name", Schema::Opaque),
        (Schema::PodSpec, "resourceClaims") => merge_by("name", Schema::Opaque), // merge,retainKeys

        // core/v1 Container / EphemeralContainerCommon
        (Schema::Container, "ports") => merge_by("containerPort", Schema::Opaque),
        (Schema::Container, "env") => merge_by("name", Schema::Opaque),
        (Schema::Container, "volumeMounts") => merge_by("mountPath", Schema::Opaque),
        (Schema::Container, "volumeDevices") => merge_by("devicePath", Schema::Opaque),

        // core/v1 PodStatus
        (Schema::PodStatus, "conditions") => CONDITIONS,
        (Schema::PodStatus, "podIPs" | "hostIPs") => merge_by("ip", Schema::Opaque),
        (Schema::PodStatus, "resourceClaimStatuses") => merge_by("name", Schema::Opaque),

        (Schema::WorkloadSpec, "template") => object(Schema::PodTemplateSpec),
        (Schema::CronJobSpec, "jobTemplate") => object(Schema::JobTemplateSpec),
        (Schema::JobTemplateSpec, "metadata") => object(Schema::ObjectMeta),
        (Schema::JobTemplateSpec, "spec") => object(Schema::WorkloadSpec),

        // core/v1 NodeSpec / NodeStatus (taints: no tag upstream, replaced)
        (Schema::NodeSpec, "podCIDRs") => MERGE_SCALARS,
        (Schema::NodeStatus, "conditions") => CONDITIONS,
        (Schema::NodeStatus, "addresses") => merge_by("type", Schema::Opaque),

        // core/v1 ServiceSpec
        (Schema::ServiceSpec, "ports") => merge_by("port", Schema::Opaque),

        (Schema::ConditionsStatus, "conditions") => CONDITIONS,

        _ => OPAQUE,
    }
}
