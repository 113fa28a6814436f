//! `meta.k8s.io/v1` Table responses for `kubectl get`, with the columns and cells of
//! kube-apiserver's printers (pkg/printers/internalversion/printers.go), the apiextensions
//! custom-resource table convertor, and the default convertor.
//!
//! The apiserver always prints with `Wide: true`, so every row has a cell for every column,
//! priority-1 (`-o wide`) columns included.

mod duration;
mod jsonpath;
mod printers;

pub use duration::human_duration;
pub use jsonpath::JsonPath;

use serde_json::{Value, json};

pub(crate) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub(crate) const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// One column definition.
pub(crate) struct Column {
    pub name: &'static str,
    pub kind: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    pub priority: u8,
}

impl Column {
    pub(crate) const fn new(name: &'static str, kind: &'static str, description: &'static str) -> Self {
        Self { name, kind, format: "", description, priority: 0 }
    }
    pub(crate) const fn name() -> Self {
        Self { name: "Name", kind: "string", format: "name", description: NAME_DESCRIPTION, priority: 0 }
    }
    pub(crate) const fn age() -> Self {
        Self::new("Age", "string", AGE_DESCRIPTION)
    }
    /// A `-o wide` column.
    pub(crate) const fn wide(self) -> Self {
        Self { priority: 1, ..self }
    }
    fn to_json(&self) -> Value {
        json!({"name": self.name, "type": self.kind, "format": self.format,
            "description": self.description, "priority": self.priority})
    }
}

/// Renders objects of one resource as a Table.
///
/// * `group`/`plural`: the resource (`""`/`pods`, `apps`/`deployments`, ...).
/// * `printer_columns`: a CRD's `additionalPrinterColumns` (possibly none) for custom
///   resources, `None` for the built-in kinds.
/// * `list_metadata`: the list's `metadata` (resourceVersion, continue) copied to the Table.
/// * `include_object`: `includeObject` query value (`None`, `Metadata` (default), `Object`);
///   `None` omits `rows[].object`, anything but `None`/`Object` means `Metadata`.
/// * `now`: for the Age column.
pub fn render(
    group: &str,
    plural: &str,
    printer_columns: Option<&[Value]>,
    list_metadata: Value,
    objects: &[Value],
    include_object: &str,
    now: jiff::Timestamp,
) -> Value {
    let (columns, rows): (Vec<Value>, Vec<Value>) = match printer_columns {
        Some(custom) => custom_resource_table(custom, objects, now),
        None => {
            let printer = printers::for_resource(group, plural);
            let columns = printer.columns.iter().map(Column::to_json).collect();
            let rows = objects
                .iter()
                .map(|object| {
                    let mut row = json!({"cells": (printer.cells)(object, now)});
                    if let Some(conditions) = (printer.conditions)(object) {
                        row["conditions"] = conditions;
                    }
                    row
                })
                .collect();
            (columns, rows)
        }
    };
    let rows: Vec<Value> = rows
        .into_iter()
        .zip(objects)
        .map(|(mut row, object)| {
            match include_object {
                "None" => {}
                "Object" => row["object"] = object.clone(),
                _ => {
                    row["object"] = json!({"kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({}))});
                }
            }
            row
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_metadata,
        "columnDefinitions": columns, "rows": rows})
}

/// Custom resources, as the apiextensions table convertor prints them: Name, then the CRD's
/// printer columns; a CRD without any gets an Age column (`serveDefaultColumnsIfEmpty`).
fn custom_resource_table(
    printer_columns: &[Value],
    objects: &[Value],
    now: jiff::Timestamp,
) -> (Vec<Value>, Vec<Value>) {
    let default_columns = [json!({"name": "Age", "type": "date", "description": AGE_DESCRIPTION,
        "jsonPath": ".metadata.creationTimestamp"})];
    let printer_columns = if printer_columns.is_empty() { &default_columns[..] } else { printer_columns };
    let text = |c: &Value, key: &str| c.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let specs: Vec<(String, Option<JsonPath>)> = printer_columns
        .iter()
        .map(|c| {
            // An unparsable path prints as an empty cell rather than failing the whole list.
            (text(c, "type"), JsonPath::parse(&text(c, "jsonPath")).ok())
        })
        .collect();
    let mut columns = vec![Column::name().to_json()];
    columns.extend(printer_columns.iter().map(|c| {
        let description = match text(c, "description") {
            d if d.is_empty() => {
                format!("Custom resource definition column (in JSONPath format): {}", text(c, "jsonPath"))
            }
            d => d,
        };
        json!({"name": text(c, "name"), "type": text(c, "type"), "format": text(c, "format"),
            "description": description,
            "priority": c.get("priority").and_then(Value::as_i64).unwrap_or(0)})
    }));
    let rows = objects
        .iter()
        .map(|object| {
            let mut cells = vec![json!(printers::name(object))];
            for (kind, path) in &specs {
                let value = path.as_ref().and_then(|p| p.first(object));
                cells.push(custom_cell(kind, value, now));
            }
            json!({"cells": cells})
        })
        .collect();
    (columns, rows)
}

/// upstream apiextensions `cellForJSONValue` (and `PrintResults` for strings).
fn custom_cell(kind: &str, value: Option<&Value>, now: jiff::Timestamp) -> Value {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Value::Null;
    };
    match (kind, value) {
        ("string", Value::String(s)) => json!(s),
        ("string", other) => json!(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            // Go truncates a float64 to int64.
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => match s.parse::<jiff::Timestamp>() {
            Ok(t) => json!(human_duration(now.duration_since(t))),
            Err(_) => json!("<invalid>"),
        },
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests;
