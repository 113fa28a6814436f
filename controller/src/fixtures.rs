//! Objects for the crate's unit tests, as the API server would return them.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

/// `pairs` as a label or annotation map.
pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// The one Deployment builder: `namespace/name` (uid `<name>-uid`, resourceVersion `7`) at
/// `replicas`, its selector and pod template labelled `pod_labels` (none: neither has labels),
/// carrying `annotations`.
pub fn deployment(
    namespace: &str,
    name: &str,
    replicas: i32,
    pod_labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
) -> Deployment {
    let pod_labels = (!pod_labels.is_empty()).then(|| labels(pod_labels));
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            uid: Some(format!("{name}-uid")),
            resource_version: Some("7".into()),
            annotations: (!annotations.is_empty()).then(|| labels(annotations)),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector { match_labels: pod_labels.clone(), match_expressions: None },
            template: PodTemplateSpec {
                metadata: pod_labels
                    .map(|labels| ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                spec: None,
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}
