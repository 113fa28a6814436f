//! Decoding the protobuf bodies kubectl's typed clients send for the kinds this module
//! serves (`k8s\0` + runtime.Unknown envelope): the TokenRequest of `kubectl create token`
//! the RBAC objects of `kubectl create role|clusterrole|rolebinding|clusterrolebinding`, and the
//! SelfSubjectAccessReview of `kubectl auth can-i`. Field numbers are those of
//! `k8s.io/api/{authentication,rbac,authorization}/v1/generated.proto`; fields
//! kube-sim does not read are skipped.

use serde_json::{Map, Value, json};

const MAGIC: &[u8] = b"k8s\0";

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// Iterates `(field number, payload)` over one message; errors on truncated input.
struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.buf.get(self.pos).ok_or("truncated varint")?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(len).filter(|end| *end <= self.buf.len()).ok_or("truncated field")?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn next_field(&mut self) -> Result<Option<(u64, Field<'a>)>, String> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let field = match tag & 7 {
            0 => Field::Varint(self.varint()?),
            1 => self.take(8).map(|_| Field::Fixed)?,
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "field length overflows")?;
                Field::Bytes(self.take(len)?)
            }
            5 => self.take(4).map(|_| Field::Fixed)?,
            other => return Err(format!("unsupported wire type {other}")),
        };
        Ok(Some((tag >> 3, field)))
    }
}

fn text(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "a string field is not valid UTF-8".to_string())
}

/// The runtime.Unknown envelope of a Kubernetes protobuf body.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

/// The envelope, when `body` is a Kubernetes protobuf body.
fn envelope(body: &[u8]) -> Result<Option<Envelope<'_>>, String> {
    let Some(rest) = body.strip_prefix(MAGIC) else { return Ok(None) };
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    let mut fields = Fields::new(rest);
    while let Some((number, field)) = fields.next_field()? {
        match (number, field) {
            (1, Field::Bytes(type_meta)) => {
                let mut meta = Fields::new(type_meta);
                while let Some((n, f)) = meta.next_field()? {
                    match (n, f) {
                        (1, Field::Bytes(b)) => api_version = text(b)?,
                        (2, Field::Bytes(b)) => kind = text(b)?,
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(bytes)) => raw = bytes,
            _ => {}
        }
    }
    Ok(Some(Envelope { api_version, kind, raw }))
}

/// `Some(object JSON)` when `body` is a protobuf TokenRequest, Role, ClusterRole,
/// RoleBinding or ClusterRoleBinding; None for anything else (other kinds go to the general
/// protobuf decoder).
pub(crate) fn decode(body: &[u8]) -> Option<Result<Value, String>> {
    let Envelope { api_version, kind, raw } = match envelope(body) {
        Ok(Some(envelope)) => envelope,
        Ok(None) => return None,
        Err(e) => return Some(Err(format!("malformed protobuf body: {e}"))),
    };
    let decoded = match kind.as_str() {
        "TokenRequest" => token_request(raw),
        "Role" | "ClusterRole" => role(raw),
        "RoleBinding" | "ClusterRoleBinding" => role_binding(raw),
        "SelfSubjectAccessReview" => self_subject_access_review(raw),
        _ => return None,
    };
    Some(
        decoded
            .map(|mut v| {
                v["apiVersion"] = json!(api_version);
                v["kind"] = json!(kind);
                v
            })
            .map_err(|e| format!("malformed protobuf {kind}: {e}")),
    )
}

/// ObjectMeta: name, generateName, namespace, labels, annotations.
fn object_meta(bytes: &[u8]) -> Result<Value, String> {
    let mut meta = Map::new();
    let (mut labels, mut annotations) = (Map::new(), Map::new());
    let mut fields = Fields::new(bytes);
    while let Some((number, field)) = fields.next_field()? {
        let Field::Bytes(b) = field else { continue };
        match number {
            1 if !b.is_empty() => _ = meta.insert("name".into(), json!(text(b)?)),
            2 if !b.is_empty() => _ = meta.insert("generateName".into(), json!(text(b)?)),
            3 if !b.is_empty() => _ = meta.insert("namespace".into(), json!(text(b)?)),
            11 => {
                let (k, v) = map_entry(b)?;
                labels.insert(k, json!(v));
            }
            12 => {
                let (k, v) = map_entry(b)?;
                annotations.insert(k, json!(v));
            }
            _ => {}
        }
    }
    if !labels.is_empty() {
        meta.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        meta.insert("annotations".into(), Value::Object(annotations));
    }
    Ok(Value::Object(meta))
}

fn map_entry(bytes: &[u8]) -> Result<(String, String), String> {
    let (mut key, mut value) = (String::new(), String::new());
    let mut fields = Fields::new(bytes);
    while let Some((number, field)) = fields.next_field()? {
        match (number, field) {
            (1, Field::Bytes(b)) => key = text(b)?,
            (2, Field::Bytes(b)) => value = text(b)?,
            _ => {}
        }
    }
    Ok((key, value))
}

/// A message of string fields, by field number → JSON name; `repeated` names are arrays
/// (where `""` is a value, e.g. the core API group); empty single strings are omitted, as Go's
/// `omitempty` does.
fn strings(bytes: &[u8], names: &[(u64, &str, bool)]) -> Result<Value, String> {
    let mut out = Map::new();
    let mut fields = Fields::new(bytes);
    while let Some((number, field)) = fields.next_field()? {
        let (Some(&(_, name, repeated)), Field::Bytes(b)) =
            (names.iter().find(|(n, _, _)| *n == number), field)
        else {
            continue;
        };
        if !repeated && b.is_empty() {
            continue;
        }
        let value = json!(text(b)?);
        if repeated {
            match out.entry(name).or_insert_with(|| json!([])) {
                Value::Array(items) => items.push(value),
                _ => return Err(format!("field {name} is both repeated and single")),
            }
        } else {
            out.insert(name.into(), value);
        }
    }
    Ok(Value::Object(out))
}

/// Role / ClusterRole: metadata, rules (aggregationRule is skipped: not computed).
fn role(raw: &[u8]) -> Result<Value, String> {
    const POLICY_RULE: &[(u64, &str, bool)] = &[
        (1, "verbs", true),
        (2, "apiGroups", true),
        (3, "resources", true),
        (4, "resourceNames", true),
        (5, "nonResourceURLs", true),
    ];
    let mut out = json!({"metadata": {}, "rules": []});
    let mut fields = Fields::new(raw);
    while let Some((number, field)) = fields.next_field()? {
        match (number, field) {
            (1, Field::Bytes(b)) => out["metadata"] = object_meta(b)?,
            (2, Field::Bytes(b)) => {
                if let Value::Array(rules) = &mut out["rules"] {
                    rules.push(strings(b, POLICY_RULE)?);
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// RoleBinding / ClusterRoleBinding: metadata, subjects, roleRef.
fn role_binding(raw: &[u8]) -> Result<Value, String> {
    const SUBJECT: &[(u64, &str, bool)] =
        &[(1, "kind", false), (2, "apiGroup", false), (3, "name", false), (4, "namespace", false)];
    const ROLE_REF: &[(u64, &str, bool)] = &[(1, "apiGroup", false), (2, "kind", false), (3, "name", false)];
    let mut out = json!({"metadata": {}, "subjects": [], "roleRef": {}});
    let mut fields = Fields::new(raw);
    while let Some((number, field)) = fields.next_field()? {
        match (number, field) {
            (1, Field::Bytes(b)) => out["metadata"] = object_meta(b)?,
            (2, Field::Bytes(b)) => {
                if let Value::Array(subjects) = &mut out["subjects"] {
                    subjects.push(strings(b, SUBJECT)?);
                }
            }
            (3, Field::Bytes(b)) => out["roleRef"] = strings(b, ROLE_REF)?,
            _ => {}
        }
    }
    Ok(out)
}

fn token_request(raw: &[u8]) -> Result<Value, String> {
    let mut out = json!({"metadata": {}, "spec": {}});
    let mut fields = Fields::new(raw);
    while let Some((number, field)) = fields.next_field()? {
        match (number, field) {
            (1, Field::Bytes(meta)) => {
                let mut meta = Fields::new(meta);
                while let Some((n, f)) = meta.next_field()? {
                    match (n, f) {
                        (1, Field::Bytes(b)) if !b.is_empty() => out["metadata"]["name"] = json!(text(b)?),
                        (3, Field::Bytes(b)) if !b.is_empty() => {
                            out["metadata"]["namespace"] = json!(text(b)?)
                        }
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(spec)) => out["spec"] = token_request_spec(spec)?,
            _ => {}
        }
    }
    Ok(out)
}

fn token_request_spec(spec: &[u8]) -> Result<Value, String> {
    let mut out = Map::new();
    let mut audiences = Vec::new();
    let mut fields = Fields::new(spec);
    while let Some((number, field)) = fields.next_field()? {
        match (number, field) {
            (1, Field::Bytes(b)) => audiences.push(json!(text(b)?)),
            (3, Field::Bytes(reference)) => {
                let mut bound = Map::new();
                let mut f = Fields::new(reference);
                while let Some((n, field)) = f.next_field()? {
                    let key = match n {
                        1 => "kind",
                        2 => "apiVersion",
                        3 => "name",
                        4 => "uid",
                        _ => continue,
                    };
                    if let Field::Bytes(b) = field {
                        bound.insert(key.into(), json!(text(b)?));
                    }
                }
                out.insert("boundObjectRef".into(), Value::Object(bound));
            }
            // int64 on the wire: two's complement in a varint.
            (4, Field::Varint(v)) => {
                out.insert("expirationSeconds".into(), json!(i64::from_ne_bytes(v.to_ne_bytes())));
            }
            _ => {}
        }
    }
    if !audiences.is_empty() {
        out.insert("audiences".into(), Value::Array(audiences));
    }
    Ok(Value::Object(out))
}

/// SelfSubjectAccessReview: metadata and the spec's resource or non-resource attributes (the
/// field and label selector attributes are skipped: not authorized on).
fn self_subject_access_review(raw: &[u8]) -> Result<Value, String> {
    const RESOURCE: &[(u64, &str, bool)] = &[
        (1, "namespace", false),
        (2, "verb", false),
        (3, "group", false),
        (4, "version", false),
        (5, "resource", false),
        (6, "subresource", false),
        (7, "name", false),
    ];
    const NON_RESOURCE: &[(u64, &str, bool)] = &[(1, "path", false), (2, "verb", false)];
    let mut out = json!({"metadata": {}, "spec": {}});
    let mut fields = Fields::new(raw);
    while let Some((number, field)) = fields.next_field()? {
        match (number, field) {
            (1, Field::Bytes(b)) => out["metadata"] = object_meta(b)?,
            (2, Field::Bytes(b)) => {
                let mut spec = Fields::new(b);
                while let Some((n, f)) = spec.next_field()? {
                    match (n, f) {
                        (1, Field::Bytes(b)) => out["spec"]["resourceAttributes"] = strings(b, RESOURCE)?,
                        (2, Field::Bytes(b)) => {
                            out["spec"]["nonResourceAttributes"] = strings(b, NON_RESOURCE)?
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::decode;
    use serde_json::json;

    /// The body kubectl 1.32 sends for `kubectl create token foo` (captured with -v=9).
    const KUBECTL_BODY: &[u8] = &[
        0x6b, 0x38, 0x73, 0x00, 0x0a, 0x28, 0x0a, 0x18, 0x61, 0x75, 0x74, 0x68, 0x65, 0x6e, 0x74, 0x69, 0x63,
        0x61, 0x74, 0x69, 0x6f, 0x6e, 0x2e, 0x6b, 0x38, 0x73, 0x2e, 0x69, 0x6f, 0x2f, 0x76, 0x31, 0x12, 0x0c,
        0x54, 0x6f, 0x6b, 0x65, 0x6e, 0x52, 0x65, 0x71, 0x75, 0x65, 0x73, 0x74, 0x12, 0x1a, 0x0a, 0x10, 0x0a,
        0x00, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00, 0x12, 0x00,
        0x1a, 0x04, 0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00,
    ];

    #[test]
    fn decodes_the_kubectl_body() {
        let value = decode(KUBECTL_BODY).and_then(Result::ok);
        assert_eq!(
            value,
            Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "metadata": {}, "spec": {}}))
        );
    }

    /// The body kubectl 1.35 sends for `kubectl auth can-i create pods/eviction -n team`
    /// (captured with -v=9 from the real control plane; `pods/eviction` is TYPE/NAME there).
    const KUBECTL_ACCESS_REVIEW: &[u8] = &[
        0x6b, 0x38, 0x73, 0x00, 0x0a, 0x32, 0x0a, 0x17, 0x61, 0x75, 0x74, 0x68, 0x6f, 0x72, 0x69, 0x7a, 0x61,
        0x74, 0x69, 0x6f, 0x6e, 0x2e, 0x6b, 0x38, 0x73, 0x2e, 0x69, 0x6f, 0x2f, 0x76, 0x31, 0x12, 0x17, 0x53,
        0x65, 0x6c, 0x66, 0x53, 0x75, 0x62, 0x6a, 0x65, 0x63, 0x74, 0x41, 0x63, 0x63, 0x65, 0x73, 0x73, 0x52,
        0x65, 0x76, 0x69, 0x65, 0x77, 0x12, 0x44, 0x0a, 0x10, 0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00,
        0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00, 0x12, 0x26, 0x0a, 0x24, 0x0a, 0x04, 0x74, 0x65, 0x61,
        0x6d, 0x12, 0x06, 0x63, 0x72, 0x65, 0x61, 0x74, 0x65, 0x1a, 0x00, 0x22, 0x00, 0x2a, 0x04, 0x70, 0x6f,
        0x64, 0x73, 0x32, 0x00, 0x3a, 0x08, 0x65, 0x76, 0x69, 0x63, 0x74, 0x69, 0x6f, 0x6e, 0x1a, 0x08, 0x08,
        0x00, 0x12, 0x00, 0x1a, 0x00, 0x20, 0x00, 0x1a, 0x00, 0x22, 0x00,
    ];

    #[test]
    fn decodes_the_kubectl_access_review() {
        let value = decode(KUBECTL_ACCESS_REVIEW).and_then(Result::ok).unwrap_or_default();
        assert_eq!(
            value,
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {},
                "spec": {"resourceAttributes": {"namespace": "team", "verb": "create", "resource": "pods",
                    "name": "eviction"}}})
        );
    }

    #[test]
    fn decodes_duration_and_audiences() {
        // spec {1: "api", 4: 7200}
        let spec = [0x0a, 0x03, b'a', b'p', b'i', 0x20, 0xa0, 0x38];
        let mut raw = vec![0x12, spec.len() as u8];
        raw.extend_from_slice(&spec);
        let mut type_meta = vec![0x12, 12];
        type_meta.extend_from_slice(b"TokenRequest");
        let mut body = b"k8s\0".to_vec();
        body.extend_from_slice(&[0x0a, type_meta.len() as u8]);
        body.extend_from_slice(&type_meta);
        body.extend_from_slice(&[0x12, raw.len() as u8]);
        body.extend_from_slice(&raw);
        let value = decode(&body).and_then(Result::ok).unwrap_or_default();
        assert_eq!(value["spec"], json!({"audiences": ["api"], "expirationSeconds": 7200}));
    }

    /// `kubectl create rolebinding rb --role=r --serviceaccount=team:bot --user=u -n default`.
    const KUBECTL_ROLE_BINDING: &[u8] = &[
        0x6b, 0x38, 0x73, 0x00, 0x0a, 0x2b, 0x0a, 0x1c, 0x72, 0x62, 0x61, 0x63, 0x2e, 0x61, 0x75, 0x74, 0x68,
        0x6f, 0x72, 0x69, 0x7a, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x2e, 0x6b, 0x38, 0x73, 0x2e, 0x69, 0x6f, 0x2f,
        0x76, 0x31, 0x12, 0x0b, 0x52, 0x6f, 0x6c, 0x65, 0x42, 0x69, 0x6e, 0x64, 0x69, 0x6e, 0x67, 0x12, 0x88,
        0x01, 0x0a, 0x19, 0x0a, 0x02, 0x72, 0x62, 0x12, 0x00, 0x1a, 0x07, 0x64, 0x65, 0x66, 0x61, 0x75, 0x6c,
        0x74, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00, 0x12, 0x26, 0x0a, 0x04, 0x55, 0x73,
        0x65, 0x72, 0x12, 0x19, 0x72, 0x62, 0x61, 0x63, 0x2e, 0x61, 0x75, 0x74, 0x68, 0x6f, 0x72, 0x69, 0x7a,
        0x61, 0x74, 0x69, 0x6f, 0x6e, 0x2e, 0x6b, 0x38, 0x73, 0x2e, 0x69, 0x6f, 0x1a, 0x01, 0x75, 0x22, 0x00,
        0x12, 0x1d, 0x0a, 0x0e, 0x53, 0x65, 0x72, 0x76, 0x69, 0x63, 0x65, 0x41, 0x63, 0x63, 0x6f, 0x75, 0x6e,
        0x74, 0x12, 0x00, 0x1a, 0x03, 0x62, 0x6f, 0x74, 0x22, 0x04, 0x74, 0x65, 0x61, 0x6d, 0x1a, 0x24, 0x0a,
        0x19, 0x72, 0x62, 0x61, 0x63, 0x2e, 0x61, 0x75, 0x74, 0x68, 0x6f, 0x72, 0x69, 0x7a, 0x61, 0x74, 0x69,
        0x6f, 0x6e, 0x2e, 0x6b, 0x38, 0x73, 0x2e, 0x69, 0x6f, 0x12, 0x04, 0x52, 0x6f, 0x6c, 0x65, 0x1a, 0x01,
        0x72, 0x1a, 0x00, 0x22, 0x00,
    ];

    #[test]
    fn decodes_the_kubectl_role_binding() {
        let value = decode(KUBECTL_ROLE_BINDING).and_then(Result::ok).unwrap_or_default();
        assert_eq!(
            value,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "rb", "namespace": "default"},
                "subjects": [
                    {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "u"},
                    {"kind": "ServiceAccount", "name": "bot", "namespace": "team"}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}})
        );
    }

    #[test]
    fn decodes_role_rules() {
        fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
            let mut out = vec![number << 3 | 2, bytes.len() as u8];
            out.extend_from_slice(bytes);
            out
        }
        let rule =
            [field(1, b"get"), field(1, b"list"), field(2, b""), field(3, b"pods"), field(4, b"a")].concat();
        let meta =
            [field(1, b"r"), field(3, b"ns"), field(11, &[field(1, b"k"), field(2, b"v")].concat())].concat();
        let raw = [field(1, &meta), field(2, &rule), field(2, &field(5, b"/healthz"))].concat();
        let type_meta = [field(1, b"rbac.authorization.k8s.io/v1"), field(2, b"Role")].concat();
        let body = [b"k8s\0".to_vec(), field(1, &type_meta), field(2, &raw)].concat();
        let value = decode(&body).and_then(Result::ok).unwrap_or_default();
        assert_eq!(value["metadata"], json!({"name": "r", "namespace": "ns", "labels": {"k": "v"}}));
        assert_eq!(
            value["rules"],
            json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]},
                {"nonResourceURLs": ["/healthz"]}])
        );
    }

    #[test]
    fn other_kinds_and_json_are_left_alone() {
        assert!(decode(br#"{"kind":"TokenRequest"}"#).is_none());
        assert!(decode(&KUBECTL_BODY[..KUBECTL_BODY.len() - 3]).is_some_and(|r| r.is_err()));
    }
}
