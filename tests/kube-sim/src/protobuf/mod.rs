//! Decoding the protobuf request bodies kubectl's typed clientset sends
//! (`Content-Type: application/vnd.kubernetes.protobuf`): `kubectl create <generator>` objects
//! and drain's DeleteOptions.
//!
//! The body is `k8s\0` followed by a `runtime.Unknown` envelope
//! {1: TypeMeta{1: apiVersion, 2: kind}, 2: raw, 3: contentEncoding, 4: contentType}; `raw` is
//! the object, decoded here by the field tables in `schema`.

mod schema;
mod wire;

use base64::Engine as _;
use serde_json::{Map, Value};

use schema::{Kind, Message};
use wire::{Reader, Wire};

/// The four bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

/// Decodes a `application/vnd.kubernetes.protobuf` body (`k8s\0` + runtime.Unknown envelope)
/// into the object's JSON form (with `apiVersion` and `kind`).
///
/// Supported kinds: DeleteOptions, Namespace, ConfigMap, Secret, ServiceAccount, Service, Pod,
/// Deployment, PodDisruptionBudget, Eviction, Job, CronJob. Fields outside the known tables are
/// skipped.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let envelope = body.strip_prefix(MAGIC).ok_or_else(|| {
        "protobuf body does not start with the Kubernetes magic bytes \"k8s\\0\"".to_string()
    })?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    let mut content_encoding = String::new();
    let mut reader = Reader::new(envelope);
    while let Some((number, wire)) = reader.next_field().map_err(envelope_error)? {
        match (number, wire) {
            (1, Wire::LengthDelimited(type_meta)) => {
                let mut reader = Reader::new(type_meta);
                while let Some((number, wire)) = reader.next_field().map_err(envelope_error)? {
                    match (number, wire) {
                        (1, Wire::LengthDelimited(b)) => api_version = utf8(b, "apiVersion")?,
                        (2, Wire::LengthDelimited(b)) => kind = utf8(b, "kind")?,
                        _ => {}
                    }
                }
            }
            (2, Wire::LengthDelimited(bytes)) => raw = bytes,
            (3, Wire::LengthDelimited(b)) => content_encoding = utf8(b, "contentEncoding")?,
            // contentType: the raw bytes are always protobuf here.
            (4, Wire::LengthDelimited(_)) => {}
            (1..=4, other) => {
                return Err(envelope_error(format!(
                    "field {number} is {}, expected length-delimited",
                    other.type_name()
                )));
            }
            _ => {}
        }
    }
    if kind.is_empty() {
        return Err("protobuf envelope has no kind in its TypeMeta".to_string());
    }
    if !content_encoding.is_empty() {
        return Err(format!("protobuf envelope content encoding {content_encoding:?} is not supported"));
    }
    let message = schema::top_level(&kind).ok_or_else(|| {
        format!(
            "protobuf bodies of kind {kind} are not supported by kube-sim; send JSON instead \
             (e.g. kubectl create -f FILE)"
        )
    })?;
    let mut object = decode_message(message, raw)?;
    object.insert("apiVersion".to_string(), Value::String(api_version));
    object.insert("kind".to_string(), Value::String(kind));
    Ok(Value::Object(object))
}

fn envelope_error(reason: String) -> String {
    format!("malformed protobuf envelope: {reason}")
}

fn utf8(bytes: &[u8], what: &str) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| format!("{what} is not valid UTF-8"))
}

fn decode_message(message: &Message, bytes: &[u8]) -> Result<Map<String, Value>, String> {
    let mut object = Map::new();
    let mut reader = Reader::new(bytes);
    let in_message = |reason: String| format!("{}: {reason}", message.name);
    while let Some((number, wire)) = reader.next_field().map_err(in_message)? {
        let Some(field) = message.field(number) else {
            continue;
        };
        let in_field = |reason: String| format!("{}.{}: {reason}", message.name, field.name);
        match field.kind {
            Kind::RepeatedStr => {
                let item = Value::String(utf8(length_delimited(wire).map_err(in_field)?, field.name)?);
                push(&mut object, field.name, item);
            }
            Kind::RepeatedMsg(item_message) => {
                let bytes = length_delimited(wire).map_err(in_field)?;
                let item = Value::Object(decode_message(item_message, bytes)?);
                push(&mut object, field.name, item);
            }
            Kind::StrMap | Kind::BytesMap | Kind::QuantityMap => {
                let bytes = length_delimited(wire).map_err(in_field)?;
                let (key, value) = decode_map_entry(field.kind, bytes).map_err(in_field)?;
                let entry = object.entry(field.name).or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(map) = entry {
                    map.insert(key, value);
                }
            }
            kind => match decode_single(kind, wire).map_err(in_field)? {
                Some(value) => {
                    object.insert(field.name.to_string(), value);
                }
                // A later zero value overrides an earlier one, as in protobuf's last-one-wins.
                None => {
                    object.remove(field.name);
                }
            },
        }
    }
    Ok(object)
}

fn push(object: &mut Map<String, Value>, name: &str, item: Value) {
    let entry = object.entry(name).or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(items) = entry {
        items.push(item);
    }
}

fn length_delimited(wire: Wire<'_>) -> Result<&[u8], String> {
    match wire {
        Wire::LengthDelimited(bytes) => Ok(bytes),
        other => Err(format!("expected length-delimited, got {}", other.type_name())),
    }
}

fn varint(wire: Wire<'_>) -> Result<u64, String> {
    match wire {
        Wire::Varint(v) => Ok(v),
        other => Err(format!("expected varint, got {}", other.type_name())),
    }
}

/// int32 and int64 both arrive as (sign-extended) 64-bit varints.
fn as_int(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

/// A non-repeated field's JSON value; `None` when the value is a dropped zero value.
fn decode_single(kind: Kind, wire: Wire<'_>) -> Result<Option<Value>, String> {
    Ok(match kind {
        Kind::Str => {
            let s = utf8(length_delimited(wire)?, "string")?;
            (!s.is_empty()).then_some(Value::String(s))
        }
        Kind::OptStr => Some(Value::String(utf8(length_delimited(wire)?, "string")?)),
        Kind::Int => {
            let v = as_int(varint(wire)?);
            (v != 0).then_some(Value::from(v))
        }
        Kind::OptInt => Some(Value::from(as_int(varint(wire)?))),
        Kind::Bool => (varint(wire)? != 0).then_some(Value::Bool(true)),
        Kind::OptBool => Some(Value::Bool(varint(wire)? != 0)),
        Kind::Time => decode_time(length_delimited(wire)?)?,
        Kind::IntOrString => Some(decode_int_or_string(length_delimited(wire)?)?),
        Kind::Msg(message) => Some(Value::Object(decode_message(message, length_delimited(wire)?)?)),
        Kind::RepeatedMsg(_) | Kind::RepeatedStr | Kind::StrMap | Kind::BytesMap | Kind::QuantityMap => {
            return Err("internal: repeated kind decoded as single".to_string());
        }
    })
}

/// A map entry {1: key, 2: value}; map values keep their zero values (`data: {k: ""}`).
fn decode_map_entry(kind: Kind, bytes: &[u8]) -> Result<(String, Value), String> {
    let mut key = String::new();
    let mut value = match kind {
        Kind::QuantityMap => Value::String("0".to_string()),
        _ => Value::String(String::new()),
    };
    let mut reader = Reader::new(bytes);
    while let Some((number, wire)) = reader.next_field()? {
        match number {
            1 => key = utf8(length_delimited(wire)?, "map key")?,
            2 => {
                let bytes = length_delimited(wire)?;
                value = match kind {
                    Kind::BytesMap => Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
                    Kind::QuantityMap => decode_quantity(bytes)?,
                    _ => Value::String(utf8(bytes, "map value")?),
                };
            }
            _ => {}
        }
    }
    Ok((key, value))
}

fn decode_time(bytes: &[u8]) -> Result<Option<Value>, String> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let (mut seconds, mut nanos) = (0i64, 0i64);
    let mut reader = Reader::new(bytes);
    while let Some((number, wire)) = reader.next_field()? {
        match number {
            1 => seconds = as_int(varint(wire)?),
            2 => nanos = as_int(varint(wire)?),
            _ => {}
        }
    }
    let nanos = i32::try_from(nanos).map_err(|_| format!("time nanos {nanos} out of range"))?;
    let timestamp =
        jiff::Timestamp::new(seconds, nanos).map_err(|e| format!("time {seconds}s out of range: {e}"))?;
    Ok(Some(Value::String(timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())))
}

fn decode_int_or_string(bytes: &[u8]) -> Result<Value, String> {
    let (mut is_string, mut int_value, mut str_value) = (false, 0i64, String::new());
    let mut reader = Reader::new(bytes);
    while let Some((number, wire)) = reader.next_field()? {
        match number {
            1 => is_string = varint(wire)? == 1,
            2 => int_value = as_int(varint(wire)?),
            3 => str_value = utf8(length_delimited(wire)?, "IntOrString strVal")?,
            _ => {}
        }
    }
    Ok(if is_string { Value::String(str_value) } else { Value::from(int_value) })
}

fn decode_quantity(bytes: &[u8]) -> Result<Value, String> {
    let mut quantity = "0".to_string();
    let mut reader = Reader::new(bytes);
    while let Some((number, wire)) = reader.next_field()? {
        if number == 1 {
            quantity = utf8(length_delimited(wire)?, "quantity")?;
        }
    }
    Ok(Value::String(quantity))
}

#[cfg(test)]
mod tests;
