//! A custom resource checked against its CRD's OpenAPI v3 schema, as apiextensions-apiserver
//! v1.35 does it with kube-openapi's `validate.SchemaValidator` (the version its go.mod
//! requires, `v0.0.0-20250910181357-589584f1c912`) and, on updates, its ratcheting wrapper.
//!
//! Each schema node runs kube-openapi's validators in its order — type (with `nullable` and
//! `x-kubernetes-int-or-string`), `anyOf`/`oneOf`/`allOf`/`not`, string (`maxLength`,
//! `minLength`, `pattern`: the first failure only), `format`, number (`multipleOf`, `minimum`,
//! `maximum`), array (`items`, then `minItems`, `maxItems`, `uniqueItems`), `enum`, object
//! (`minProperties`, `maxProperties`, `additionalProperties`, `properties`, `required`) — each
//! on the value's JSON kind, not on the declared type (a string under `type: integer` still
//! meets `maxLength`). Errors repeating an earlier message are dropped, as kube-openapi's
//! `Result` does. Of failing `anyOf`/`oneOf` alternatives the one that got furthest (its
//! `MatchCount`, which each node returns here) adds its errors.
//!
//! Upstream walks `properties` and the keys of an object in Go's random map order, so sibling
//! errors come in a random order there; here they come in key order. Not checked:
//! `x-kubernetes-validations` (CEL) and `pattern`s using regex syntax [`pattern`] does not know
//! (accepted).

mod errors;
mod formats;
mod number;
mod pattern;
mod ratchet;

use std::collections::HashSet;

use serde_json::{Map, Value};

pub(crate) use errors::{Error, render_value, to_field_errors};
use number::Num;

use crate::go_fmt;

/// Deeper than this the walk stops (a guard; decoded bodies are depth-limited by their parsers).
const MAX_DEPTH: usize = 256;

/// Validates `data` against `schema` (a version's `openAPIV3Schema`, or its `status` property
/// for the status subresource); `old` is the stored value on updates, for ratcheting.
pub(crate) fn validate(schema: &Value, data: &Value, old: Option<&Value>) -> Vec<Error> {
    let mut walk = Walk::default();
    walk.node(&Schema::new(schema), data, old, "", 0);
    walk.errors
}

/// A schema node, read as apiextensions converts it to kube-openapi's `spec.Schema`.
#[derive(Clone, Copy)]
pub(super) struct Schema<'a> {
    raw: &'a Value,
}

impl<'a> Schema<'a> {
    fn new(raw: &'a Value) -> Self {
        Self { raw }
    }
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.raw.get(key)
    }
    fn flag(&self, key: &str) -> bool {
        self.get(key).and_then(Value::as_bool).unwrap_or(false)
    }
    fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(Value::as_i64)
    }
    fn float(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }
    /// The allowed types: `x-kubernetes-int-or-string` makes them `integer,string`.
    fn types(&self) -> Vec<&'a str> {
        if self.flag("x-kubernetes-int-or-string") {
            return vec!["integer", "string"];
        }
        self.get("type").and_then(Value::as_str).filter(|t| !t.is_empty()).into_iter().collect()
    }
    /// The format upstream keeps (unsupported ones are stripped).
    fn format(&self) -> &'a str {
        self.get("format").and_then(Value::as_str).map_or("", formats::effective)
    }
    fn properties(&self) -> Option<&'a Map<String, Value>> {
        self.get("properties").and_then(Value::as_object)
    }
    /// The schema of `key`'s value: its property, else an `additionalProperties` schema.
    fn child(&self, key: &str) -> Option<Schema<'a>> {
        match self.properties().and_then(|p| p.get(key)) {
            Some(property) => Some(Schema::new(property)),
            None => self.get("additionalProperties").filter(|a| a.is_object()).map(Schema::new),
        }
    }
    fn items(&self) -> Option<Schema<'a>> {
        self.get("items").filter(|i| i.is_object()).map(Schema::new)
    }
}

/// The errors of one validation, in order, without repeated messages.
#[derive(Default)]
struct Walk {
    errors: Vec<Error>,
    seen: HashSet<String>,
}

impl Walk {
    fn push(&mut self, error: Error) {
        if self.seen.insert(error.message.clone()) {
            self.errors.push(error);
        }
    }
    fn push_all(&mut self, errors: Vec<Error>) {
        for error in errors {
            self.push(error);
        }
    }

    /// `SchemaValidator.Validate` of one node at `path` (kube-openapi's names: `spec.size`,
    /// `spec.items[0]`; the root is `""`). Returns kube-openapi's `MatchCount` of the node (one
    /// per validator that applied, plus what they count), which picks among failing
    /// alternatives.
    fn node(
        &mut self,
        schema: &Schema<'_>,
        data: &Value,
        old: Option<&Value>,
        path: &str,
        depth: usize,
    ) -> usize {
        if depth > MAX_DEPTH {
            return 0;
        }
        // Ratcheting: an unchanged, correlated value keeps whatever errors it had.
        if let Some(old) = old
            && ratchet::unchanged(schema, old, data, depth)
        {
            return 0;
        }
        if data.is_null() {
            // Only the type and enum validators look at a null.
            let error = null_type(schema, path);
            let count = usize::from(error.is_none());
            if let Some(error) = error {
                self.push(error);
            }
            self.enumeration(schema, data, path);
            return count;
        }
        let mut count = 1;
        if !schema.types().is_empty() || !schema.format().is_empty() {
            match type_of(schema, data, path) {
                Some(error) => self.push(error),
                None => count += 1,
            }
            count += 1;
        }
        count += self.composition(schema, data, path, depth) + 1;
        match data {
            Value::String(text) => {
                if let Some(error) = string(schema, text, path) {
                    self.push(error);
                }
                count += 1;
                let format = schema.format();
                if !format.is_empty() {
                    if !formats::valid(format, text) {
                        self.push(Error::invalid_type(path, format, text));
                    }
                    count += 1;
                }
            }
            Value::Number(n) => {
                self.number(schema, Num::of(n), path);
                count += 2;
            }
            Value::Array(items) => {
                let old = old.and_then(Value::as_array).map(Vec::as_slice);
                count += self.array(schema, items, old, path, depth) + 2;
            }
            _ => {}
        }
        self.enumeration(schema, data, path);
        count += 1;
        if let Value::Object(map) = data {
            count += self.object(schema, map, old.and_then(Value::as_object), path, depth) + 1;
        }
        count
    }

    /// A fresh validation of `data` against an alternative (upstream's sub-validators carry
    /// no ratcheting): its errors and count.
    fn alternative(schema: &Value, data: &Value, path: &str, depth: usize) -> (Vec<Error>, usize) {
        let mut walk = Walk::default();
        let count = walk.node(&Schema::new(schema), data, None, path, depth + 1);
        (walk.errors, count)
    }

    /// `schemaPropsValidator`: `anyOf`, `oneOf`, `allOf`, `not`, in that order; returns its
    /// count.
    fn composition(&mut self, schema: &Schema<'_>, data: &Value, path: &str, depth: usize) -> usize {
        let list = |key: &str| schema.get(key).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let mut count = 1;
        let any_of = list("anyOf");
        if !any_of.is_empty() {
            // The first success, else the failure that got furthest (the first among equals).
            let mut best: Option<(Vec<Error>, usize)> = None;
            let mut succeeded = false;
            for alternative in any_of {
                let (errors, n) = Self::alternative(alternative, data, path, depth);
                if errors.is_empty() {
                    best = Some((errors, n));
                    succeeded = true;
                    break;
                }
                if best.as_ref().is_none_or(|(_, b)| n > *b) {
                    best = Some((errors, n));
                }
            }
            if !succeeded {
                self.push(Error::composite(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_fmt::quote(path)
                )));
            }
            if let Some((errors, n)) = best {
                self.push_all(errors);
                count += n;
            }
        }
        let one_of = list("oneOf");
        if !one_of.is_empty() {
            let mut valid = 0;
            let mut first_success: Option<usize> = None;
            let mut best: Option<(Vec<Error>, usize)> = None;
            for alternative in one_of {
                let (errors, n) = Self::alternative(alternative, data, path, depth);
                if errors.is_empty() {
                    valid += 1;
                    best = None;
                    first_success.get_or_insert(n);
                    continue;
                }
                if valid == 0 && best.as_ref().is_none_or(|(_, b)| n > *b) {
                    best = Some((errors, n));
                }
            }
            if valid == 1 {
                count += first_success.unwrap_or(0);
            } else {
                let found = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                let message =
                    format!("{} must validate one and only one schema (oneOf). {found}", go_fmt::quote(path));
                self.push(Error::composite(message));
                if let Some((errors, n)) = best {
                    self.push_all(errors);
                    count += n;
                }
            }
        }
        let all_of = list("allOf");
        if !all_of.is_empty() {
            let mut valid = 0;
            for alternative in all_of {
                let (errors, n) = Self::alternative(alternative, data, path, depth);
                valid += usize::from(errors.is_empty());
                self.push_all(errors);
                count += n;
            }
            if valid != all_of.len() {
                let none = if valid == 0 { ". None validated" } else { "" };
                self.push(Error::composite(format!(
                    "{} must validate all the schemas (allOf){none}",
                    go_fmt::quote(path)
                )));
            }
        }
        if let Some(not) = schema.get("not").filter(|n| n.is_object())
            && Self::alternative(not, data, path, depth).0.is_empty()
        {
            self.push(Error::composite(format!(
                "{} must not validate the schema (not)",
                go_fmt::quote(path)
            )));
        }
        count
    }

    fn number(&mut self, schema: &Schema<'_>, value: Num, path: &str) {
        if let Some(factor) = schema.float("multipleOf")
            && let Some(error) = number::multiple_of(path, value, factor)
        {
            self.push(error);
        }
        if let Some(min) = schema.float("minimum")
            && let Some(error) = number::minimum(path, value, min, schema.flag("exclusiveMinimum"))
        {
            self.push(error);
        }
        if let Some(max) = schema.float("maximum")
            && let Some(error) = number::maximum(path, value, max, schema.flag("exclusiveMaximum"))
        {
            self.push(error);
        }
    }

    /// `schemaSliceValidator`; returns the items' counts.
    fn array(
        &mut self,
        schema: &Schema<'_>,
        items: &[Value],
        old: Option<&[Value]>,
        path: &str,
        depth: usize,
    ) -> usize {
        let mut count = 0;
        if let Some(item_schema) = schema.items() {
            for (i, item) in items.iter().enumerate() {
                let old_item = old.and_then(|o| ratchet::index(schema, o, items, i));
                count += self.node(&item_schema, item, old_item, &format!("{path}[{i}]"), depth + 1);
            }
        }
        let size = i64::try_from(items.len()).unwrap_or(i64::MAX);
        if let Some(min) = schema.int("minItems")
            && size < min
        {
            self.push(Error::too_few_items(path, min, size));
        }
        if let Some(max) = schema.int("maxItems")
            && size > max
        {
            self.push(Error::too_many_items(path, max, size));
        }
        if schema.flag("uniqueItems") && items.iter().enumerate().any(|(i, a)| items[..i].contains(a)) {
            self.push(Error::duplicate_items(path));
        }
        count
    }

    /// `basicCommonValidator`: `enum`, with Go's conversions.
    fn enumeration(&mut self, schema: &Schema<'_>, data: &Value, path: &str) {
        let Some(allowed) = schema.get("enum").and_then(Value::as_array).filter(|a| !a.is_empty()) else {
            return;
        };
        if !allowed.iter().any(|a| enum_matches(data, a)) {
            self.push(Error::enum_fail(path, data, allowed));
        }
    }

    /// `objectValidator`; returns the children's counts.
    fn object(
        &mut self,
        schema: &Schema<'_>,
        map: &Map<String, Value>,
        old: Option<&Map<String, Value>>,
        path: &str,
        depth: usize,
    ) -> usize {
        let size = i64::try_from(map.len()).unwrap_or(i64::MAX);
        if let Some(min) = schema.int("minProperties")
            && size < min
        {
            self.push(Error::too_few_properties(path, min, size));
        }
        if let Some(max) = schema.int("maxProperties")
            && size > max
        {
            self.push(Error::too_many_properties(path, max, size));
        }
        let properties = schema.properties();
        let declared = |key: &str| properties.is_some_and(|p| p.contains_key(key));
        let root = path.is_empty();
        let correlated = |key: &str| old.and_then(|o| ratchet::key(schema, o, map, key, root));
        let mut count = 0;
        match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => {
                for key in map.keys().filter(|k| !declared(k)) {
                    self.push(Error::property_not_allowed(path, key));
                }
            }
            Some(additional @ Value::Object(_)) => {
                for (key, value) in map.iter().filter(|(k, _)| !declared(k)) {
                    let at = format!("{path}.{key}");
                    count += self.node(&Schema::new(additional), value, correlated(key), &at, depth + 1);
                }
            }
            _ => {}
        }
        for (name, property) in properties.into_iter().flatten() {
            if let Some(value) = map.get(name) {
                let at = if root { name.clone() } else { format!("{path}.{name}") };
                count += self.node(&Schema::new(property), value, correlated(name), &at, depth + 1);
            }
        }
        let required = schema.get("required").and_then(Value::as_array);
        for name in required.into_iter().flatten().filter_map(Value::as_str) {
            if !map.contains_key(name) {
                self.push(Error::required(&format!("{path}.{name}")));
            }
        }
        count
    }
}

/// The type validator on a null: refused unless the type is empty or the node `nullable`.
fn null_type(schema: &Schema<'_>, path: &str) -> Option<Error> {
    let types = schema.types();
    (!types.is_empty() && !types.contains(&"null") && !schema.flag("nullable"))
        .then(|| Error::invalid_type(path, &types.join(","), "null"))
}

/// `typeValidator.Validate` on a non-null value, with Go's type names: an integral float passes
/// as an integer, an integer as a number; a declared format makes a mismatch name it (and lets
/// arrays through).
fn type_of(schema: &Schema<'_>, data: &Value, path: &str) -> Option<Error> {
    let types = schema.types();
    let format = schema.format();
    let (found, found_format) = match data {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) => match Num::of(n) {
            Num::Int(_) => ("integer", "int64"),
            Num::Float(_) => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        _ => ("object", ""),
    };
    let has = |t: &str| types.contains(&t);
    let float_int = match data.as_number().map(Num::of) {
        Some(Num::Float(f)) => number::is_json_integer(f) && has("integer"),
        _ => false,
    };
    let int_float = found == "integer" && has("number");
    let matches = has(found) || float_int || int_float;
    let stringish = matches!(data, Value::String(_) | Value::Array(_));
    if !format.is_empty() {
        // A formatted value that is no string nor array must have the type or the format.
        if !(stringish || matches || found_format == format) {
            return Some(Error::invalid_type(path, format, found_format));
        }
        // Strings and arrays pass, unless the type is numeric.
        if stringish && !(has("number") || has("integer")) {
            return None;
        }
    }
    (!matches).then(|| Error::invalid_type(path, &types.join(","), found))
}

/// `stringValidator`: `maxLength`, `minLength` (in characters), then `pattern`; the first
/// failure only.
fn string(schema: &Schema<'_>, text: &str, path: &str) -> Option<Error> {
    let length = i64::try_from(text.chars().count()).unwrap_or(i64::MAX);
    if let Some(max) = schema.int("maxLength")
        && length > max
    {
        return Some(Error::too_long(path, max));
    }
    if let Some(min) = schema.int("minLength")
        && length < min
    {
        return Some(Error::too_short(path, min, text));
    }
    let pattern = schema.get("pattern").and_then(Value::as_str).unwrap_or_default();
    if !pattern.is_empty() && pattern::matches(pattern, text) == Some(false) {
        return Some(Error::failed_pattern(path, pattern, text));
    }
    None
}

/// Whether `data` equals the enum value `allowed` as Go's `reflect` compares them: equal, or
/// equal once converted to the enum value's type — a float truncated to an integer, an
/// integer to a number, an integer to the one-character string of that code point. A null
/// never matches (upstream skips it), and nested numbers keep their types.
fn enum_matches(data: &Value, allowed: &Value) -> bool {
    match (data, allowed) {
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Number(d), Value::Number(a)) => match (Num::of(d), Num::of(a)) {
            (Num::Int(x), Num::Int(y)) => x == y,
            (Num::Int(x), Num::Float(y)) => x as f64 == y,
            (Num::Float(x), Num::Int(y)) => number::go_int64(x) == y,
            (Num::Float(x), Num::Float(y)) => x == y,
        },
        (Value::Number(d), Value::String(a)) => match Num::of(d) {
            // Go's `string(rune(i))`: invalid code points become U+FFFD.
            Num::Int(i) => {
                let c = u32::try_from(i).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}');
                a.chars().eq(std::iter::once(c))
            }
            Num::Float(_) => false,
        },
        (d, a) => d == a,
    }
}

#[cfg(test)]
mod tests;
