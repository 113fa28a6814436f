//! Seeding: reading YAML/JSON manifests (multi-document, `List` kinds, directories) and
//! creating their objects at start.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::cluster::{Cluster, Gvr, WriteOptions};
use crate::error::ApiError;

/// A seed failure, naming the file or object.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// Reading a file or directory.
    #[error("cannot read {0}: {1}")]
    Read(PathBuf, std::io::Error),
    /// Parsing a file.
    #[error("cannot parse {0}: {1}")]
    Parse(PathBuf, String),
    /// An object without a served apiVersion/kind.
    #[error("{0}: no resource is served for apiVersion {1:?} kind {2:?}")]
    UnknownKind(String, String, String),
    /// The API refused an object.
    #[error("{0}: {1}")]
    Rejected(String, ApiError),
}

fn collect_files(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), SeedError> {
    let meta = std::fs::metadata(path).map_err(|e| SeedError::Read(path.to_path_buf(), e))?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| SeedError::Read(path.to_path_buf(), e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            let is_manifest = entry.is_dir()
                || matches!(entry.extension().and_then(|x| x.to_str()), Some("yaml" | "yml" | "json"));
            if is_manifest {
                collect_files(&entry, out)?;
            }
        }
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}

fn flatten(doc: Value, out: &mut Vec<Value>) {
    let is_list = doc["kind"].as_str().is_some_and(|k| k.ends_with("List")) && doc["items"].is_array();
    if is_list {
        if let Value::Object(mut m) = doc
            && let Some(Value::Array(items)) = m.remove("items")
        {
            for item in items {
                flatten(item, out);
            }
        }
    } else if doc.is_object() {
        out.push(doc);
    }
}

/// Parses manifest text (JSON, or YAML with any number of documents).
pub fn parse_manifests(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        for doc in stream.by_ref() {
            match doc.map_err(|e| e.to_string())? {
                Value::Array(items) => items.into_iter().for_each(|d| flatten(d, &mut out)),
                d => flatten(d, &mut out),
            }
        }
        return Ok(out);
    }
    let options = serde_saphyr::options! { budget: None };
    let docs: Vec<Value> =
        serde_saphyr::from_multiple_with_options(text, options).map_err(|e| e.to_string())?;
    for doc in docs {
        flatten(doc, &mut out);
    }
    Ok(out)
}

/// Reads every manifest under `paths` (files, or directories searched for .yaml/.yml/.json).
pub fn load(paths: &[PathBuf]) -> Result<Vec<Value>, SeedError> {
    let mut files = Vec::new();
    for p in paths {
        collect_files(p, &mut files)?;
    }
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| SeedError::Read(file.clone(), e))?;
        out.extend(parse_manifests(&text).map_err(|e| SeedError::Parse(file.clone(), e))?);
    }
    Ok(out)
}

fn describe(object: &Value) -> String {
    format!(
        "{} {}/{}",
        object["kind"].as_str().unwrap_or("?"),
        object["metadata"]["namespace"].as_str().unwrap_or_default(),
        object["metadata"]["name"].as_str().unwrap_or_default()
    )
}

/// Creates (or replaces) the objects: namespaces and CRDs first, missing namespaces created
/// on the fly, `status` kept as given, no admission.
pub async fn apply(cluster: &Cluster, objects: Vec<Value>) -> Result<usize, SeedError> {
    let rank = |o: &Value| match o["kind"].as_str() {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    };
    let mut objects = objects;
    objects.sort_by_key(rank);
    let opts = WriteOptions { keep_status: true, skip_admission: true, ..WriteOptions::default() };
    let mut count = 0;
    for object in objects {
        let api_version = object["apiVersion"].as_str().unwrap_or_default().to_string();
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        let info = cluster
            .catalogue()
            .find_kind(&api_version, &kind)
            .ok_or_else(|| SeedError::UnknownKind(describe(&object), api_version.clone(), kind.clone()))?;
        let gvr = Gvr::new(&info.group, &info.version, &info.plural);
        let ns = if info.namespaced {
            Some(
                object["metadata"]["namespace"]
                    .as_str()
                    .filter(|n| !n.is_empty())
                    .unwrap_or("default")
                    .to_string(),
            )
        } else {
            None
        };
        if let Some(ns) = &ns {
            ensure_namespace(cluster, ns).await.map_err(|e| SeedError::Rejected(describe(&object), e))?;
        }
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let what = describe(&object);
        let result = match cluster.create(&gvr, ns.as_deref(), object.clone(), &opts).await {
            Err(e) if e.reason == "AlreadyExists" => {
                cluster.update(&gvr, ns.as_deref(), &name, None, object, &opts).await
            }
            other => other,
        };
        result.map_err(|e| SeedError::Rejected(what, e))?;
        count += 1;
    }
    Ok(count)
}

async fn ensure_namespace(cluster: &Cluster, ns: &str) -> Result<(), ApiError> {
    let gvr = Gvr::new("", "v1", "namespaces");
    if cluster.get(&gvr, None, ns).is_ok() {
        return Ok(());
    }
    let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    match cluster
        .create(&gvr, None, object, &WriteOptions { skip_admission: true, ..WriteOptions::default() })
        .await
    {
        Err(e) if e.reason != "AlreadyExists" => Err(e),
        _ => Ok(()),
    }
}
