//! The ValidatingWebhookConfiguration's `caBundle`s: read what is published, and set every
//! webhook's bundle to the Secret's `ca.crt` with one merge patch of the whole `webhooks` list
//! carrying the resourceVersion read (a concurrent change gets 409 and is re-read next round).

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

/// What reading the configuration gave.
pub(crate) enum Read {
    Found(Box<ValidatingWebhookConfiguration>),
    Absent,
}

/// The configuration of one name.
pub(crate) struct WebhookConfiguration {
    api: Api<ValidatingWebhookConfiguration>,
    pub(crate) name: String,
}

impl WebhookConfiguration {
    pub(crate) fn new(client: kube::Client, name: &str) -> Self {
        Self { api: Api::all(client), name: name.to_owned() }
    }

    /// GET by name.
    pub(crate) async fn read(&self) -> Result<Read, kube::Error> {
        Ok(match self.api.get_opt(&self.name).await? {
            Some(found) => Read::Found(Box::new(found)),
            None => Read::Absent,
        })
    }

    /// PATCH (merge) every webhook's `caBundle` to `bundle` when one differs. Returns how many
    /// webhooks were changed (0: nothing to do; a lost race is an error to retry next round).
    pub(crate) async fn sync(
        &self,
        current: &ValidatingWebhookConfiguration,
        bundle: &[u8],
    ) -> Result<usize, kube::Error> {
        let mut webhooks = current.webhooks.clone().unwrap_or_default();
        let mut changed = 0;
        for webhook in &mut webhooks {
            if webhook.client_config.ca_bundle.as_ref().map(|b| b.0.as_slice()) != Some(bundle) {
                webhook.client_config.ca_bundle = Some(ByteString(bundle.to_vec()));
                changed += 1;
            }
        }
        if changed == 0 {
            return Ok(0);
        }
        let patch = json!({
            "metadata": { "resourceVersion": current.metadata.resource_version },
            "webhooks": webhooks,
        });
        self.api.patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        Ok(changed)
    }
}

/// The `caBundle` of each webhook of a configuration (empty when blank).
pub(crate) fn bundles(configuration: &ValidatingWebhookConfiguration) -> Vec<Vec<u8>> {
    configuration
        .webhooks
        .iter()
        .flatten()
        .map(|w| w.client_config.ca_bundle.as_ref().map(|b| b.0.clone()).unwrap_or_default())
        .collect()
}
