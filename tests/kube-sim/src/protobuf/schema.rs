//! Field numbers of the Kubernetes types kubectl's generators send, from k8s.io/api and
//! k8s.io/apimachinery `generated.proto`. Fields not listed here are skipped.

/// How one field is encoded and how it becomes JSON.
///
/// Go's protobuf encoder writes every non-pointer scalar, so zero values of plain fields are
/// dropped (matching `omitempty` JSON); pointer fields (`Opt*`) are only written when set, so
/// their zero values are kept (`replicas: 0`, `gracePeriodSeconds: 0`).
#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    Str,
    OptStr,
    Int,
    OptInt,
    Bool,
    OptBool,
    /// `meta/v1.Time` {seconds=1, nanos=2}, as RFC 3339; the zero time is dropped.
    Time,
    /// `intstr.IntOrString` {type=1, intVal=2, strVal=3}.
    IntOrString,
    Msg(&'static Message),
    RepeatedMsg(&'static Message),
    RepeatedStr,
    /// `map<string, string>`: entries {key=1, value=2}.
    StrMap,
    /// `map<string, bytes>`, values base64 as in JSON.
    BytesMap,
    /// `map<string, resource.Quantity>`, Quantity being {string=1}.
    QuantityMap,
}

#[derive(Debug)]
pub(super) struct Field {
    pub(super) number: u64,
    pub(super) name: &'static str,
    pub(super) kind: Kind,
}

#[derive(Debug)]
pub(super) struct Message {
    pub(super) name: &'static str,
    pub(super) fields: &'static [Field],
}

impl Message {
    pub(super) fn field(&self, number: u64) -> Option<&Field> {
        self.fields.iter().find(|f| f.number == number)
    }
}

const fn f(number: u64, name: &'static str, kind: Kind) -> Field {
    Field { number, name, kind }
}

use Kind::*;

/// The top-level message for a kind, by the envelope's `kind`.
pub(super) fn top_level(kind: &str) -> Option<&'static Message> {
    Some(match kind {
        "DeleteOptions" => &DELETE_OPTIONS,
        "Namespace" => &NAMESPACE,
        "ConfigMap" => &CONFIG_MAP,
        "Secret" => &SECRET,
        "ServiceAccount" => &SERVICE_ACCOUNT,
        "Service" => &SERVICE,
        "Pod" => &POD,
        "Deployment" => &DEPLOYMENT,
        "PodDisruptionBudget" => &POD_DISRUPTION_BUDGET,
        "Eviction" => &EVICTION,
        "Job" => &JOB,
        "CronJob" => &CRON_JOB,
        _ => return None,
    })
}

/// A message whose content is not needed: decodes to `{}`.
static EMPTY: Message = Message { name: "status", fields: &[] };

// --- k8s.io/apimachinery/pkg/apis/meta/v1 ---

pub(super) static OBJECT_META: Message = Message {
    name: "ObjectMeta",
    fields: &[
        f(1, "name", Str),
        f(2, "generateName", Str),
        f(3, "namespace", Str),
        f(4, "selfLink", Str),
        f(5, "uid", Str),
        f(6, "resourceVersion", Str),
        f(7, "generation", Int),
        f(8, "creationTimestamp", Time),
        f(9, "deletionTimestamp", Time),
        f(10, "deletionGracePeriodSeconds", OptInt),
        f(11, "labels", StrMap),
        f(12, "annotations", StrMap),
        f(13, "ownerReferences", RepeatedMsg(&OWNER_REFERENCE)),
        f(14, "finalizers", RepeatedStr),
    ],
};

static OWNER_REFERENCE: Message = Message {
    name: "OwnerReference",
    fields: &[
        f(1, "kind", Str),
        f(3, "name", Str),
        f(4, "uid", Str),
        f(5, "apiVersion", Str),
        f(6, "controller", OptBool),
        f(7, "blockOwnerDeletion", OptBool),
    ],
};

static LABEL_SELECTOR: Message = Message {
    name: "LabelSelector",
    fields: &[
        f(1, "matchLabels", StrMap),
        f(2, "matchExpressions", RepeatedMsg(&LABEL_SELECTOR_REQUIREMENT)),
    ],
};

static LABEL_SELECTOR_REQUIREMENT: Message = Message {
    name: "LabelSelectorRequirement",
    fields: &[f(1, "key", Str), f(2, "operator", Str), f(3, "values", RepeatedStr)],
};

static DELETE_OPTIONS: Message = Message {
    name: "DeleteOptions",
    fields: &[
        f(1, "gracePeriodSeconds", OptInt),
        f(2, "preconditions", Msg(&PRECONDITIONS)),
        f(3, "orphanDependents", OptBool),
        f(4, "propagationPolicy", OptStr),
        f(5, "dryRun", RepeatedStr),
        f(6, "ignoreStoreReadErrorWithClusterBreakingPotential", OptBool),
    ],
};

static PRECONDITIONS: Message =
    Message { name: "Preconditions", fields: &[f(1, "uid", OptStr), f(2, "resourceVersion", OptStr)] };

// --- k8s.io/api/core/v1 ---

static NAMESPACE: Message = Message {
    name: "Namespace",
    fields: &[
        f(1, "metadata", Msg(&OBJECT_META)),
        f(2, "spec", Msg(&NAMESPACE_SPEC)),
        f(3, "status", Msg(&NAMESPACE_STATUS)),
    ],
};

static NAMESPACE_SPEC: Message =
    Message { name: "NamespaceSpec", fields: &[f(1, "finalizers", RepeatedStr)] };

static NAMESPACE_STATUS: Message = Message { name: "NamespaceStatus", fields: &[f(1, "phase", Str)] };

static CONFIG_MAP: Message = Message {
    name: "ConfigMap",
    fields: &[
        f(1, "metadata", Msg(&OBJECT_META)),
        f(2, "data", StrMap),
        f(3, "binaryData", BytesMap),
        f(4, "immutable", OptBool),
    ],
};

static SECRET: Message = Message {
    name: "Secret",
    fields: &[
        f(1, "metadata", Msg(&OBJECT_META)),
        f(2, "data", BytesMap),
        f(3, "type", Str),
        f(4, "stringData", StrMap),
        f(5, "immutable", OptBool),
    ],
};

static SERVICE_ACCOUNT: Message = Message {
    name: "ServiceAccount",
    fields: &[
        f(1, "metadata", Msg(&OBJECT_META)),
        f(2, "secrets", RepeatedMsg(&OBJECT_REFERENCE)),
        f(3, "imagePullSecrets", RepeatedMsg(&LOCAL_OBJECT_REFERENCE)),
        f(4, "automountServiceAccountToken", OptBool),
    ],
};

static OBJECT_REFERENCE: Message = Message {
    name: "ObjectReference",
    fields: &[
        f(1, "kind", Str),
        f(2, "namespace", Str),
        f(3, "name", Str),
        f(4, "uid", Str),
        f(5, "apiVersion", Str),
        f(6, "resourceVersion", Str),
        f(7, "fieldPath", Str),
    ],
};

static LOCAL_OBJECT_REFERENCE: Message =
    Message { name: "LocalObjectReference", fields: &[f(1, "name", Str)] };

static SERVICE: Message = Message {
    name: "Service",
    fields: &[
        f(1, "metadata", Msg(&OBJECT_META)),
        f(2, "spec", Msg(&SERVICE_SPEC)),
        f(3, "status", Msg(&EMPTY)),
    ],
};

static SERVICE_SPEC: Message = Message {
    name: "ServiceSpec",
    fields: &[
        f(1, "ports", RepeatedMsg(&SERVICE_PORT)),
        f(2, "selector", StrMap),
        f(3, "clusterIP", Str),
        f(4, "type", Str),
        f(5, "externalIPs", RepeatedStr),
        f(7, "sessionAffinity", Str),
        f(8, "loadBalancerIP", Str),
        f(9, "loadBalancerSourceRanges", RepeatedStr),
        f(10, "externalName", Str),
        f(11, "externalTrafficPolicy", Str),
        f(12, "healthCheckNodePort", Int),
        f(13, "publishNotReadyAddresses", Bool),
        f(17, "ipFamilyPolicy", OptStr),
        f(18, "clusterIPs", RepeatedStr),
        f(19, "ipFamilies", RepeatedStr),
        f(20, "allocateLoadBalancerNodePorts", OptBool),
        f(21, "loadBalancerClass", OptStr),
        f(22, "internalTrafficPolicy", OptStr),
    ],
};

static SERVICE_PORT: Message = Message {
    name: "ServicePort",
    fields: &[
        f(1, "name", Str),
        f(2, "protocol", Str),
        f(3, "port", Int),
        f(4, "targetPort", IntOrString),
        f(5, "nodePort", Int),
        f(6, "appProtocol", OptStr),
    ],
};

static POD: Message = Message {
    name: "Pod",
    fields: &[f(1, "metadata", Msg(&OBJECT_META)), f(2, "spec", Msg(&POD_SPEC)), f(3, "status", Msg(&EMPTY))],
};

static POD_TEMPLATE_SPEC: Message = Message {
    name: "PodTemplateSpec",
    fields: &[f(1, "metadata", Msg(&OBJECT_META)), f(2, "spec", Msg(&POD_SPEC))],
};

static POD_SPEC: Message = Message {
    name: "PodSpec",
    fields: &[
        f(2, "containers", RepeatedMsg(&CONTAINER)),
        f(3, "restartPolicy", Str),
        f(4, "terminationGracePeriodSeconds", OptInt),
        f(5, "activeDeadlineSeconds", OptInt),
        f(6, "dnsPolicy", Str),
        f(7, "nodeSelector", StrMap),
        f(8, "serviceAccountName", Str),
        f(9, "serviceAccount", Str),
        f(10, "nodeName", Str),
        f(11, "hostNetwork", Bool),
        f(12, "hostPID", Bool),
        f(13, "hostIPC", Bool),
        f(15, "imagePullSecrets", RepeatedMsg(&LOCAL_OBJECT_REFERENCE)),
        f(16, "hostname", Str),
        f(17, "subdomain", Str),
        f(19, "schedulerName", Str),
        f(20, "initContainers", RepeatedMsg(&CONTAINER)),
        f(21, "automountServiceAccountToken", OptBool),
        f(24, "priorityClassName", Str),
    ],
};

static CONTAINER: Message = Message {
    name: "Container",
    fields: &[
        f(1, "name", Str),
        f(2, "image", Str),
        f(3, "command", RepeatedStr),
        f(4, "args", RepeatedStr),
        f(5, "workingDir", Str),
        f(6, "ports", RepeatedMsg(&CONTAINER_PORT)),
        f(7, "env", RepeatedMsg(&ENV_VAR)),
        f(8, "resources", Msg(&RESOURCE_REQUIREMENTS)),
        f(13, "terminationMessagePath", Str),
        f(14, "imagePullPolicy", Str),
        f(16, "stdin", Bool),
        f(17, "stdinOnce", Bool),
        f(18, "tty", Bool),
        f(20, "terminationMessagePolicy", Str),
        f(24, "restartPolicy", OptStr),
    ],
};

static CONTAINER_PORT: Message = Message {
    name: "ContainerPort",
    fields: &[
        f(1, "name", Str),
        f(2, "hostPort", Int),
        f(3, "containerPort", Int),
        f(4, "protocol", Str),
        f(5, "hostIP", Str),
    ],
};

static ENV_VAR: Message = Message { name: "EnvVar", fields: &[f(1, "name", Str), f(2, "value", Str)] };

static RESOURCE_REQUIREMENTS: Message = Message {
    name: "ResourceRequirements",
    fields: &[f(1, "limits", QuantityMap), f(2, "requests", QuantityMap)],
};

// --- k8s.io/api/apps/v1 ---

static DEPLOYMENT: Message = Message {
    name: "Deployment",
    fields: &[
        f(1, "metadata", Msg(&OBJECT_META)),
        f(2, "spec", Msg(&DEPLOYMENT_SPEC)),
        f(3, "status", Msg(&DEPLOYMENT_STATUS)),
    ],
};

static DEPLOYMENT_SPEC: Message = Message {
    name: "DeploymentSpec",
    fields: &[
        f(1, "replicas", OptInt),
        f(2, "selector", Msg(&LABEL_SELECTOR)),
        f(3, "template", Msg(&POD_TEMPLATE_SPEC)),
        f(4, "strategy", Msg(&DEPLOYMENT_STRATEGY)),
        f(5, "minReadySeconds", Int),
        f(6, "revisionHistoryLimit", OptInt),
        f(7, "paused", Bool),
        f(9, "progressDeadlineSeconds", OptInt),
    ],
};

static DEPLOYMENT_STRATEGY: Message = Message {
    name: "DeploymentStrategy",
    fields: &[f(1, "type", Str), f(2, "rollingUpdate", Msg(&ROLLING_UPDATE_DEPLOYMENT))],
};

static ROLLING_UPDATE_DEPLOYMENT: Message = Message {
    name: "RollingUpdateDeployment",
    fields: &[f(1, "maxUnavailable", IntOrString), f(2, "maxSurge", IntOrString)],
};

static DEPLOYMENT_STATUS: Message = Message {
    name: "DeploymentStatus",
    fields: &[
        f(1, "observedGeneration", Int),
        f(2, "replicas", Int),
        f(3, "updatedReplicas", Int),
        f(4, "availableReplicas", Int),
        f(5, "unavailableReplicas", Int),
        f(7, "readyReplicas", Int),
        f(8, "collisionCount", OptInt),
    ],
};

// --- k8s.io/api/policy/v1 ---

static POD_DISRUPTION_BUDGET: Message = Message {
    name: "PodDisruptionBudget",
    fields: &[
        f(1, "metadata", Msg(&OBJECT_META)),
        f(2, "spec", Msg(&POD_DISRUPTION_BUDGET_SPEC)),
        f(3, "status", Msg(&POD_DISRUPTION_BUDGET_STATUS)),
    ],
};

static POD_DISRUPTION_BUDGET_SPEC: Message = Message {
    name: "PodDisruptionBudgetSpec",
    fields: &[
        f(1, "minAvailable", IntOrString),
        f(2, "selector", Msg(&LABEL_SELECTOR)),
        f(3, "maxUnavailable", IntOrString),
        f(4, "unhealthyPodEvictionPolicy", OptStr),
    ],
};

/// Status counters are plain (non-omitempty) int32s upstream, so kept even when zero.
static POD_DISRUPTION_BUDGET_STATUS: Message = Message {
    name: "PodDisruptionBudgetStatus",
    fields: &[
        f(1, "observedGeneration", Int),
        f(3, "disruptionsAllowed", OptInt),
        f(4, "currentHealthy", OptInt),
        f(5, "desiredHealthy", OptInt),
        f(6, "expectedPods", OptInt),
    ],
};

static EVICTION: Message = Message {
    name: "Eviction",
    fields: &[f(1, "metadata", Msg(&OBJECT_META)), f(2, "deleteOptions", Msg(&DELETE_OPTIONS))],
};

// --- k8s.io/api/batch/v1 ---

static JOB: Message = Message {
    name: "Job",
    fields: &[f(1, "metadata", Msg(&OBJECT_META)), f(2, "spec", Msg(&JOB_SPEC)), f(3, "status", Msg(&EMPTY))],
};

static JOB_SPEC: Message = Message {
    name: "JobSpec",
    fields: &[
        f(1, "parallelism", OptInt),
        f(2, "completions", OptInt),
        f(3, "activeDeadlineSeconds", OptInt),
        f(4, "selector", Msg(&LABEL_SELECTOR)),
        f(5, "manualSelector", OptBool),
        f(6, "template", Msg(&POD_TEMPLATE_SPEC)),
        f(7, "backoffLimit", OptInt),
        f(8, "ttlSecondsAfterFinished", OptInt),
        f(9, "completionMode", OptStr),
        f(10, "suspend", OptBool),
    ],
};

static CRON_JOB: Message = Message {
    name: "CronJob",
    fields: &[
        f(1, "metadata", Msg(&OBJECT_META)),
        f(2, "spec", Msg(&CRON_JOB_SPEC)),
        f(3, "status", Msg(&EMPTY)),
    ],
};

static CRON_JOB_SPEC: Message = Message {
    name: "CronJobSpec",
    fields: &[
        f(1, "schedule", Str),
        f(2, "startingDeadlineSeconds", OptInt),
        f(3, "concurrencyPolicy", Str),
        f(4, "suspend", OptBool),
        f(5, "jobTemplate", Msg(&JOB_TEMPLATE_SPEC)),
        f(6, "successfulJobsHistoryLimit", OptInt),
        f(7, "failedJobsHistoryLimit", OptInt),
        f(8, "timeZone", OptStr),
    ],
};

static JOB_TEMPLATE_SPEC: Message = Message {
    name: "JobTemplateSpec",
    fields: &[f(1, "metadata", Msg(&OBJECT_META)), f(2, "spec", Msg(&JOB_SPEC))],
};
