//! The certificate Secret: reading it, making the content an [`Action`] calls for, and writing
//! it with optimistic concurrency (a create or an update carrying the resourceVersion; the
//! loser of a race gets 409 and re-reads).

use std::collections::BTreeMap;

use eviction_autoscaler_shared::keys::SECRET_OWNER_LABEL;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};

use super::decide::{
    self, Action, CA_CRT, CA_KEY, SecretData, TLS_CRT, TLS_KEY, Wanted, backdate, ca_common_name,
    verifies_against_signing_ca,
};
use crate::certs::{IssuedPem, issue_serving, new_ca};

/// The data of a Secret, by key.
pub(crate) type Data = BTreeMap<String, ByteString>;

/// The four keys of a Secret's data, borrowed for [`decide::decide`].
pub(crate) fn view(data: &Data) -> SecretData<'_> {
    let get = |key: &str| data.get(key).map(|v| v.0.as_slice());
    SecretData { tls_crt: get(TLS_CRT), tls_key: get(TLS_KEY), ca_crt: get(CA_CRT), ca_key: get(CA_KEY) }
}

/// How a write ended.
pub(crate) enum Written {
    Done,
    /// Someone else wrote first (409): read again.
    Lost,
}

/// The Secret of one namespace and name.
pub(crate) struct SecretStore {
    api: Api<Secret>,
    name: String,
}

impl SecretStore {
    pub(crate) fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        Self { api: Api::namespaced(client, namespace), name: name.to_owned() }
    }

    /// GET; `None` when it does not exist.
    pub(crate) async fn get(&self) -> Result<Option<Secret>, kube::Error> {
        self.api.get_opt(&self.name).await
    }

    /// CREATE a `kubernetes.io/tls` Secret with our label.
    pub(crate) async fn create(&self, data: Data) -> Result<Written, kube::Error> {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: Some(BTreeMap::from([(
                    SECRET_OWNER_LABEL.0.to_owned(),
                    SECRET_OWNER_LABEL.1.to_owned(),
                )])),
                ..ObjectMeta::default()
            },
            type_: Some("kubernetes.io/tls".into()),
            data: Some(data),
            ..Secret::default()
        };
        lost_on_conflict(self.api.create(&PostParams::default(), &secret).await.map(|_| ()))
    }

    /// UPDATE (PUT) `current` with new data; `current` carries the resourceVersion read.
    pub(crate) async fn replace(&self, current: &Secret, data: Data) -> Result<Written, kube::Error> {
        let mut secret = current.clone();
        secret.data = Some(data);
        secret.string_data = None;
        lost_on_conflict(self.api.replace(&self.name, &PostParams::default(), &secret).await.map(|_| ()))
    }
}

fn lost_on_conflict(result: Result<(), kube::Error>) -> Result<Written, kube::Error> {
    match result {
        Ok(()) => Ok(Written::Done),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Written::Lost),
        Err(error) => Err(error),
    }
}

/// The Secret data an action calls for, or `None` when the action writes nothing. A renewal
/// that cannot be made from the present CA falls back to a whole new CA (and says why).
/// Replacing the CA of a Secret that is not `ours` is refused: the error says why and what to do.
pub(crate) fn next_data(
    action: &Action,
    current: &Data,
    now: i64,
    wanted: &Wanted,
    ours: bool,
) -> Result<Option<Data>, String> {
    let replace = |reason: &str| {
        if ours {
            fresh(now, wanted).map(Some)
        } else {
            let (key, value) = SECRET_OWNER_LABEL;
            Err(format!(
                "{reason}; the Secret was not made by eviction-autoscaler (no label {key}={value}), so it is \
                 left as it is: fix it, or delete it to have a new one made"
            ))
        }
    };
    match action {
        Action::Use { .. } | Action::WaitForBundle { .. } => Ok(None),
        Action::Create => fresh(now, wanted).map(Some),
        Action::Replace { reason } => replace(reason),
        Action::Renew { .. } => match renewed(current, now, wanted) {
            Ok(data) => Ok(Some(data)),
            Err(reason) if ours => {
                tracing::warn!(%reason, "cannot renew from the present CA; making a new CA");
                fresh(now, wanted).map(Some)
            }
            Err(reason) => replace(&format!("cannot renew from the present CA: {reason}")),
        },
        Action::AddNextCa { .. } => {
            let ca = make_ca(now, wanted)?;
            let old = current.get(CA_CRT).map_or(&[][..], |v| v.0.as_slice());
            let mut data = current.clone();
            data.insert(CA_CRT.into(), bytes(&decide::bundle_with_next_ca(&ca.cert_pem, old, now)));
            data.insert(CA_KEY.into(), bytes(&ca.key_pem));
            Ok(Some(data))
        }
    }
}

fn bytes(text: &str) -> ByteString {
    ByteString(text.as_bytes().to_vec())
}

fn make_ca(now: i64, wanted: &Wanted) -> Result<IssuedPem, String> {
    new_ca(now - backdate(wanted.ca_validity), now.saturating_add(wanted.ca_validity))
        .map_err(|e| e.to_string())
}

/// A new CA and a serving certificate from it.
fn fresh(now: i64, wanted: &Wanted) -> Result<Data, String> {
    let ca = make_ca(now, wanted)?;
    let serving = serving_from(&ca.cert_pem, &ca.key_pem, now, wanted)?;
    Ok(BTreeMap::from([
        (TLS_CRT.into(), bytes(&serving.cert_pem)),
        (TLS_KEY.into(), bytes(&serving.key_pem)),
        (CA_CRT.into(), bytes(&ca.cert_pem)),
        (CA_KEY.into(), bytes(&ca.key_pem)),
    ]))
}

/// The current data with a new serving certificate from the signing CA.
fn renewed(current: &Data, now: i64, wanted: &Wanted) -> Result<Data, String> {
    let text = |key: &str| {
        current
            .get(key)
            .and_then(|v| std::str::from_utf8(&v.0).ok())
            .map(str::to_owned)
            .ok_or_else(|| format!("{key} is missing or not text"))
    };
    let (ca_crt, ca_key) = (text(CA_CRT)?, text(CA_KEY)?);
    let serving = serving_from(&ca_crt, &ca_key, now, wanted)?;
    let mut data = current.clone();
    data.insert(TLS_CRT.into(), bytes(&serving.cert_pem));
    data.insert(TLS_KEY.into(), bytes(&serving.key_pem));
    Ok(data)
}

/// A serving certificate from the first CA of `ca_crt`, never outliving it, checked to verify.
fn serving_from(ca_crt: &str, ca_key: &str, now: i64, wanted: &Wanted) -> Result<IssuedPem, String> {
    let common_name = ca_common_name(ca_crt.as_bytes()).ok_or("ca.crt names no CA common name")?;
    let not_after = decide::ca_not_after(ca_crt.as_bytes())
        .ok_or("ca.crt has no readable validity")?
        .min(now.saturating_add(wanted.serving_validity));
    let serving = issue_serving(
        &common_name,
        ca_key,
        &wanted.dns_names,
        now - backdate(wanted.serving_validity),
        not_after,
    )
    .map_err(|e| e.to_string())?;
    verifies_against_signing_ca(serving.cert_pem.as_bytes(), ca_crt.as_bytes(), &wanted.dns_names, now)
        .map_err(|e| format!("the new serving certificate does not verify against ca.crt: {e}"))?;
    Ok(serving)
}
