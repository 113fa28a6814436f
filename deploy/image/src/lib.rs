//! The product's OCI image as one archive file, written with no daemon and no registry.
//!
//! Pure: [`root_filesystem`] lays out what the binary needs, [`write_archive`] turns it into the
//! bytes of an OCI image layout in a tar, with Docker's `manifest.json` beside the OCI index
//! (as `docker save` writes it), so `docker load`, `podman load`, `ctr images import`,
//! `kind load image-archive` and `skopeo copy oci-archive:…` all read it. Reproducible by
//! construction: every timestamp is the given `created`, owners and modes are fixed, entries
//! are sorted, gzip carries no time and no file name. `main.rs` does the reading and writing.

use std::collections::BTreeMap;
use std::io::Write as _;

use flate2::{Compression, GzBuilder};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// Where the binary lives in the image: the entrypoint.
pub const BINARY_PATH: &str = "/usr/local/bin/eviction-autoscaler";
/// The image's user, `nonroot` as distroless names it; the shipped Deployment runs as it.
pub const USER: &str = "65532:65532";
/// The default command after the entrypoint.
pub const CMD: &[&str] = &["run"];
/// The webhook (TLS) and the health and metrics port.
pub const PORTS: &[&str] = &["9443/tcp", "8081/tcp"];
/// glibc's allocator settings for the product (`GLIBC_TUNABLES`): one arena instead of one per
/// thread (at most eight per core), and blocks over 128 KiB (list pages, grown read buffers)
/// mapped on their own and unmapped when freed, instead of the threshold rising with every such
/// block freed and their pages staying in the heap. ~6 MiB less at 5,000 Deployments.
pub const GLIBC_TUNABLES: &str =
    "glibc.malloc.arena_max=1:glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072";
const DESCRIPTION: &str = "Surges a Deployment whose PodDisruptionBudget blocks a node drain, and gives Deployments a default PodDisruptionBudget";
/// Where the CA certificates go (Debian's path, which rustls-native-certs reads).
pub const CA_CERTIFICATES_PATH: &str = "/etc/ssl/certs/ca-certificates.crt";

const INDEX: &str = "application/vnd.oci.image.index.v1+json";
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// What names and dates the image.
#[derive(Clone, Debug)]
pub struct Metadata {
    /// Repository name, e.g. `eviction-autoscaler` or `registry.example/team/eviction-autoscaler`.
    pub name: String,
    /// The tag and `org.opencontainers.image.version`: the crate version.
    pub version: String,
    /// `org.opencontainers.image.revision`: the commit.
    pub revision: String,
    /// Seconds since the epoch, for every timestamp in the archive (the commit's time).
    pub created: i64,
    /// OCI architecture (`amd64`, `arm64`).
    pub architecture: String,
    pub licenses: String,
}

/// One entry of the image's root filesystem; `path` is absolute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub mode: u32,
    pub owner: u32,
    pub kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Directory,
    File(Vec<u8>),
}

/// What the binary needs at run time, read from the machine that built it.
#[derive(Clone, Debug)]
pub struct Runtime {
    pub binary: Vec<u8>,
    /// The shared libraries it links, by the absolute path the dynamic loader looks them up
    /// at (`ldd`'s answer, [`linked_libraries`]), the loader itself among them.
    pub libraries: Vec<(String, Vec<u8>)>,
    pub ca_certificates: Vec<u8>,
}

/// The written archive and what a user or a test asks about it.
#[derive(Clone, Debug)]
pub struct Archive {
    pub bytes: Vec<u8>,
    /// `sha256:…` of the image manifest: what `docker images --digests`, a registry and
    /// `ctr images ls` show.
    pub manifest_digest: String,
    /// The one layer's compressed size (what a node pulls) and uncompressed size.
    pub layer_size: u64,
    pub unpacked_size: u64,
}

/// The files `ldd` says the binary loads, in its output's order: `name => /path (addr)` lines
/// and the loader's `/path (addr)`; the kernel's vDSO has no file. A library `ldd` cannot find
/// is an error naming it.
pub fn linked_libraries(ldd: &str) -> Result<Vec<String>, String> {
    let mut paths = Vec::new();
    for line in ldd.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains("not found") {
            return Err(format!("a library the binary links is missing on this machine: {line}"));
        }
        if line == "statically linked" || line == "not a dynamic executable" {
            continue;
        }
        let path = match line.split_once("=>") {
            Some((_, target)) => target.trim(),
            None => line,
        };
        let path = path.split_whitespace().next().unwrap_or_default();
        if path.starts_with('/') {
            paths.push(path.to_owned());
        } else if !path.starts_with("linux-vdso") && !path.starts_with("linux-gate") {
            return Err(format!("unexpected ldd line: {line}"));
        }
    }
    Ok(paths)
}

/// The image's files: the binary, its libraries, CA certificates, the users and groups of
/// distroless (`root`, `nonroot` 65532) and an empty `/tmp`. No shell and no package manager.
pub fn root_filesystem(runtime: Runtime) -> Vec<Entry> {
    let file = |path: &str, mode: u32, contents: Vec<u8>| Entry {
        path: path.to_owned(),
        mode,
        owner: 0,
        kind: Kind::File(contents),
    };
    let mut entries = vec![
        file(BINARY_PATH, 0o755, runtime.binary),
        file(CA_CERTIFICATES_PATH, 0o644, runtime.ca_certificates),
        file(
            "/etc/passwd",
            0o644,
            b"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n".to_vec(),
        ),
        file("/etc/group", 0o644, b"root:x:0:\nnonroot:x:65532:\n".to_vec()),
        // Without it glibc asks DNS before /etc/hosts.
        file("/etc/nsswitch.conf", 0o644, b"hosts: files dns\n".to_vec()),
        Entry { path: "/tmp".to_owned(), mode: 0o1777, owner: 0, kind: Kind::Directory },
        Entry { path: "/home/nonroot".to_owned(), mode: 0o700, owner: 65532, kind: Kind::Directory },
    ];
    entries.extend(runtime.libraries.into_iter().map(|(path, contents)| file(&path, 0o755, contents)));
    entries
}

/// The OCI image layout in a tar: `oci-layout`, `index.json`, Docker's `manifest.json` and the
/// blobs (the layer, its config, the manifest).
pub fn write_archive(metadata: &Metadata, entries: &[Entry]) -> std::io::Result<Archive> {
    let layer_tar = layer(entries, metadata.created)?;
    let diff_id = digest(&layer_tar);
    let mut gzip = GzBuilder::new().mtime(0).write(Vec::new(), Compression::default());
    gzip.write_all(&layer_tar)?;
    let layer_gz = gzip.finish()?;

    let config = serde_json::to_vec(&config(metadata, &diff_id)).expect("JSON");
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": descriptor(CONFIG, &config),
        "layers": [descriptor(LAYER, &layer_gz)],
    }))
    .expect("JSON");
    let manifest_digest = digest(&manifest);
    let (repository, reference) = references(&metadata.name, &metadata.version);
    let mut manifest_descriptor = descriptor(MANIFEST, &manifest);
    manifest_descriptor["annotations"] = json!({
        "io.containerd.image.name": reference,
        "org.opencontainers.image.ref.name": metadata.version,
    });
    manifest_descriptor["platform"] = json!({"architecture": metadata.architecture, "os": "linux"});
    let index = json!({"schemaVersion": 2, "mediaType": INDEX, "manifests": [manifest_descriptor]});
    let docker_manifest = json!([{
        "Config": blob_path(&config),
        "RepoTags": [format!("{repository}:{}", metadata.version)],
        "Layers": [blob_path(&layer_gz)],
    }]);

    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for blob in [&layer_gz, &config, &manifest] {
        files.insert(blob_path(blob), blob.clone());
    }
    files.insert("oci-layout".to_owned(), br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec());
    files.insert("index.json".to_owned(), serde_json::to_vec(&index).expect("JSON"));
    files.insert("manifest.json".to_owned(), serde_json::to_vec(&docker_manifest).expect("JSON"));
    let mut outer = tar::Builder::new(Vec::new());
    for dir in ["blobs/", "blobs/sha256/"] {
        append(&mut outer, dir, 0o755, 0, metadata.created, tar::EntryType::Directory, &[])?;
    }
    for (path, contents) in &files {
        append(&mut outer, path, 0o644, 0, metadata.created, tar::EntryType::Regular, contents)?;
    }
    Ok(Archive {
        bytes: outer.into_inner()?,
        manifest_digest,
        layer_size: layer_gz.len() as u64,
        unpacked_size: layer_tar.len() as u64,
    })
}

/// The name Docker and Podman tag the image with, and the full reference containerd (and so a
/// kubelet looking for `image: eviction-autoscaler:0.1.0`) knows it by: a name without a
/// registry is Docker Hub's, one without a path is in `library/`.
pub fn references(name: &str, tag: &str) -> (String, String) {
    let first = name.split('/').next().unwrap_or_default();
    let has_registry =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let full = match (has_registry, name.contains('/')) {
        (true, _) => name.to_owned(),
        (false, true) => format!("docker.io/{name}"),
        (false, false) => format!("docker.io/library/{name}"),
    };
    (name.to_owned(), format!("{full}:{tag}"))
}

/// The `org.opencontainers.image.*` labels.
pub fn labels(metadata: &Metadata) -> BTreeMap<String, String> {
    [
        ("title", "eviction-autoscaler".to_owned()),
        ("description", DESCRIPTION.to_owned()),
        ("version", metadata.version.clone()),
        ("revision", metadata.revision.clone()),
        ("created", rfc3339(metadata.created)),
        ("licenses", metadata.licenses.clone()),
    ]
    .into_iter()
    .map(|(key, value)| (format!("org.opencontainers.image.{key}"), value))
    .collect()
}

/// The image config: the process (user, entrypoint, command, ports) and the labels.
fn config(metadata: &Metadata, diff_id: &str) -> Value {
    let created = rfc3339(metadata.created);
    let ports: BTreeMap<&str, Value> = PORTS.iter().map(|p| (*p, json!({}))).collect();
    json!({
        "created": created,
        "architecture": metadata.architecture,
        "os": "linux",
        "config": {
            "User": USER,
            "Entrypoint": [BINARY_PATH],
            "Cmd": CMD,
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin", format!("GLIBC_TUNABLES={GLIBC_TUNABLES}")],
            "ExposedPorts": ports,
            "WorkingDir": "/",
            "Labels": labels(metadata),
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": created, "created_by": "make image"}],
    })
}

/// The root filesystem as one uncompressed tar: every parent directory present, sorted.
fn layer(entries: &[Entry], mtime: i64) -> std::io::Result<Vec<u8>> {
    let mut all: BTreeMap<String, &Entry> = BTreeMap::new();
    let parent = Entry { path: String::new(), mode: 0o755, owner: 0, kind: Kind::Directory };
    for entry in entries {
        let relative = entry.path.trim_start_matches('/');
        let mut prefix = String::new();
        for part in relative
            .split('/')
            .collect::<Vec<_>>()
            .split_last()
            .map(|(_, parents)| parents)
            .unwrap_or_default()
        {
            prefix.push_str(part);
            prefix.push('/');
            all.entry(prefix.clone()).or_insert(&parent);
        }
        let key = match entry.kind {
            Kind::Directory => format!("{relative}/"),
            Kind::File(_) => relative.to_owned(),
        };
        all.insert(key, entry);
    }
    let mut builder = tar::Builder::new(Vec::new());
    for (path, entry) in all {
        match &entry.kind {
            Kind::Directory => {
                append(&mut builder, &path, entry.mode, entry.owner, mtime, tar::EntryType::Directory, &[])?
            }
            Kind::File(contents) => append(
                &mut builder,
                &path,
                entry.mode,
                entry.owner,
                mtime,
                tar::EntryType::Regular,
                contents,
            )?,
        }
    }
    builder.into_inner()
}

fn append(
    builder: &mut tar::Builder<Vec<u8>>,
    path: &str,
    mode: u32,
    owner: u32,
    mtime: i64,
    kind: tar::EntryType,
    contents: &[u8],
) -> std::io::Result<()> {
    let mut header = tar::Header::new_ustar();
    header.set_path(path)?;
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_uid(owner.into());
    header.set_gid(owner.into());
    header.set_mtime(mtime.max(0) as u64);
    header.set_size(contents.len() as u64);
    header.set_cksum();
    builder.append(&header, contents)
}

fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds).map(|t| t.to_string()).unwrap_or_default()
}

fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    format!("sha256:{}", hash.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn descriptor(media_type: &str, bytes: &[u8]) -> Value {
    json!({"mediaType": media_type, "digest": digest(bytes), "size": bytes.len()})
}

fn blob_path(bytes: &[u8]) -> String {
    format!("blobs/sha256/{}", &digest(bytes)["sha256:".len()..])
}

#[cfg(test)]
mod tests;
