//! Minimal, borrowing views of an AdmissionReview: only the fields the webhook acts on are
//! decoded (everything else is skipped without allocating), and the response is written by
//! hand. Full Kubernetes types are decoded only off the request path, for the handler.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

pub(crate) const REVIEW_API_VERSION: &str = "admission.k8s.io/v1";
pub(crate) const REVIEW_KIND: &str = "AdmissionReview";

/// The review envelope, generic over the part of `request` a path needs.
#[derive(Deserialize)]
pub(crate) struct Envelope<'a, R> {
    #[serde(rename = "apiVersion", borrow, default)]
    pub api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    // No `default` here: it would demand `R: Default`; a missing Option is None anyway.
    pub request: Option<R>,
}

/// What an eviction review carries that the webhook uses.
#[derive(Deserialize)]
pub(crate) struct EvictionRequest<'a> {
    #[serde(borrow, default)]
    pub uid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub operation: Option<Cow<'a, str>>,
    #[serde(rename = "userInfo", borrow, default)]
    pub user_info: Option<UserInfo<'a>>,
    #[serde(borrow, default)]
    pub object: Option<EvictionObject<'a>>,
    #[serde(rename = "dryRun", default)]
    pub dry_run: Option<bool>,
}

#[derive(Deserialize)]
pub(crate) struct UserInfo<'a> {
    #[serde(borrow, default)]
    pub username: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub groups: Option<Vec<Cow<'a, str>>>,
}

#[derive(Deserialize)]
pub(crate) struct EvictionObject<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    pub api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub metadata: Option<ObjectMetaView<'a>>,
    #[serde(rename = "deleteOptions", default)]
    pub delete_options: Option<DeleteOptionsView>,
}

#[derive(Deserialize)]
pub(crate) struct ObjectMetaView<'a> {
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub namespace: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct DeleteOptionsView {
    /// `deleteOptions.dryRun` is a list (`["All"]`); only whether it is non-empty matters.
    #[serde(rename = "dryRun", default)]
    pub dry_run: Option<NonEmptyList>,
}

/// Whether a JSON array has at least one element, decoded without allocating.
pub(crate) struct NonEmptyList(pub bool);

impl<'de> Deserialize<'de> for NonEmptyList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = NonEmptyList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NonEmptyList, A::Error> {
                let mut any = false;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    any = true;
                }
                Ok(NonEmptyList(any))
            }
            fn visit_unit<E: de::Error>(self) -> Result<NonEmptyList, E> {
                Ok(NonEmptyList(false))
            }
        }
        deserializer.deserialize_any(ListVisitor)
    }
}

/// The request part of a Deployment or PDB review: envelope facts and the object's type.
#[derive(Deserialize)]
pub(crate) struct ObjectRequest<'a> {
    #[serde(borrow, default)]
    pub uid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub operation: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub object: Option<TypeView<'a>>,
    #[serde(rename = "dryRun", default)]
    pub dry_run: Option<bool>,
}

#[derive(Deserialize)]
pub(crate) struct TypeView<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    pub api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub kind: Option<Cow<'a, str>>,
}

/// Off the request path: the full object, for the handler.
#[derive(Deserialize)]
pub(crate) struct FullEnvelope<T> {
    pub request: FullRequest<T>,
}

#[derive(Deserialize)]
pub(crate) struct FullRequest<T> {
    pub object: T,
}

/// The whole response body of an allowing review for `uid`.
pub(crate) fn allow_response(uid: &str) -> Vec<u8> {
    const HEAD: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":""#;
    const TAIL: &str = r#"","allowed":true}}"#;
    let mut out = String::with_capacity(HEAD.len() + uid.len() + TAIL.len() + 8);
    out.push_str(HEAD);
    push_json_escaped(&mut out, uid);
    out.push_str(TAIL);
    out.into_bytes()
}

/// Escapes `text` for the inside of a JSON string (RFC 8259 §7).
fn push_json_escaped(out: &mut String, text: &str) {
    // UIDs are UUIDs: nothing to escape, so copy them whole.
    if !text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                use std::fmt::Write as _;
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_echoes_uid_escaped_as_json() {
        let body = allow_response("a\"b\\c\nd");
        let parsed: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(parsed["response"]["uid"], "a\"b\\c\nd");
        assert_eq!(parsed["response"]["allowed"], true);
        assert_eq!(parsed["apiVersion"], REVIEW_API_VERSION);
        assert_eq!(parsed["kind"], REVIEW_KIND);
    }

    #[test]
    fn escaped_strings_in_the_review_still_decode() {
        let json = br#"{"apiVersion":"admission.k8s.io\/v1","request":{"uid":"u\u0031","object":{"deleteOptions":{"dryRun":["All"]}}}}"#;
        let review: Envelope<EvictionRequest> =
            serde_json::from_slice(json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(review.api_version.as_deref(), Some("admission.k8s.io/v1"));
        let request = review.request.unwrap_or_else(|| panic!("request"));
        assert_eq!(request.uid.as_deref(), Some("u1"));
        let dry = request.object.and_then(|o| o.delete_options).and_then(|d| d.dry_run);
        assert!(dry.is_some_and(|d| d.0));
    }
}
