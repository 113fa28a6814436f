use std::collections::BTreeMap;
use std::io::Read as _;

use serde_json::Value;

use super::*;

/// `ldd target/release/eviction-autoscaler` on Debian 12.
const LDD: &str = "\tlinux-vdso.so.1 (0x00007ffd5a3f2000)
\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f0c1a1d1000)
\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f0c17d20000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0c17b3e000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f0c1a204000)
";

fn metadata() -> Metadata {
    Metadata {
        name: "eviction-autoscaler".to_owned(),
        version: "0.1.0".to_owned(),
        revision: "0123456789abcdef0123456789abcdef01234567".to_owned(),
        created: 1_764_892_800,
        architecture: "amd64".to_owned(),
        licenses: "MIT".to_owned(),
    }
}

fn runtime() -> Runtime {
    Runtime {
        binary: b"\x7fELF the binary".to_vec(),
        libraries: linked_libraries(LDD)
            .unwrap()
            .into_iter()
            .map(|path| {
                let contents = path.as_bytes().to_vec();
                (path, contents)
            })
            .collect(),
        ca_certificates: b"-----BEGIN CERTIFICATE-----".to_vec(),
    }
}

/// Every entry of a tar: path → (header fields, contents).
fn entries(tar: &[u8]) -> BTreeMap<String, (u32, u64, u64, Vec<u8>)> {
    let mut archive = tar::Archive::new(tar);
    let mut out = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let header = entry.header().clone();
        let mut contents = Vec::new();
        entry.read_to_end(&mut contents).unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        out.insert(path, (header.mode().unwrap(), header.uid().unwrap(), header.mtime().unwrap(), contents));
    }
    out
}

fn json(files: &BTreeMap<String, (u32, u64, u64, Vec<u8>)>, path: &str) -> Value {
    serde_json::from_slice(&files[path].3).unwrap()
}

/// The archive's files, its config, and its layer's entries.
#[allow(clippy::type_complexity)]
fn unpack(
    archive: &Archive,
) -> (BTreeMap<String, (u32, u64, u64, Vec<u8>)>, Value, BTreeMap<String, (u32, u64, u64, Vec<u8>)>) {
    let files = entries(&archive.bytes);
    let index = json(&files, "index.json");
    let manifest_path = format!("blobs/sha256/{}", &index["manifests"][0]["digest"].as_str().unwrap()[7..]);
    let manifest: Value = serde_json::from_slice(&files[&manifest_path].3).unwrap();
    let blob = |d: &Value| files[&format!("blobs/sha256/{}", &d["digest"].as_str().unwrap()[7..])].3.clone();
    let config: Value = serde_json::from_slice(&blob(&manifest["config"])).unwrap();
    let mut layer = Vec::new();
    flate2::read::GzDecoder::new(&blob(&manifest["layers"][0])[..]).read_to_end(&mut layer).unwrap();
    (files, config, entries(&layer))
}

#[test]
fn ldd_output_gives_the_libraries_and_the_loader_but_not_the_vdso() {
    assert_eq!(
        linked_libraries(LDD).unwrap(),
        [
            "/lib/x86_64-linux-gnu/libgcc_s.so.1",
            "/lib/x86_64-linux-gnu/libm.so.6",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib64/ld-linux-x86-64.so.2"
        ]
    );
    assert_eq!(linked_libraries("\tstatically linked\n").unwrap(), Vec::<String>::new());
}

#[test]
fn a_library_ldd_cannot_find_is_an_error_naming_it() {
    let error = linked_libraries("\tlibssl.so.3 => not found\n").unwrap_err();
    assert!(error.contains("libssl.so.3 => not found"), "{error}");
}

#[test]
fn names_without_a_registry_are_docker_hubs() {
    assert_eq!(
        references("eviction-autoscaler", "0.1.0"),
        ("eviction-autoscaler".to_owned(), "docker.io/library/eviction-autoscaler:0.1.0".to_owned())
    );
    assert_eq!(references("team/ea", "1").1, "docker.io/team/ea:1");
    assert_eq!(references("registry.example/team/ea", "1").1, "registry.example/team/ea:1");
    assert_eq!(references("localhost:5000/ea", "1").1, "localhost:5000/ea:1");
}

#[test]
fn the_archive_is_an_oci_layout_with_dockers_manifest_beside_it() {
    let archive = write_archive(&metadata(), &root_filesystem(runtime())).unwrap();
    let (files, _, _) = unpack(&archive);
    let index = json(&files, "index.json");
    let manifest = &index["manifests"][0];
    assert_eq!(manifest["digest"], archive.manifest_digest.as_str());
    assert_eq!(
        manifest["annotations"]["io.containerd.image.name"],
        "docker.io/library/eviction-autoscaler:0.1.0"
    );
    assert_eq!(manifest["annotations"]["org.opencontainers.image.ref.name"], "0.1.0");
    assert_eq!(json(&files, "oci-layout")["imageLayoutVersion"], "1.0.0");
    let docker = json(&files, "manifest.json");
    assert_eq!(docker[0]["RepoTags"], serde_json::json!(["eviction-autoscaler:0.1.0"]));
    for path in [&docker[0]["Config"], &docker[0]["Layers"][0]] {
        assert!(files.contains_key(path.as_str().unwrap()), "{path} is in the archive");
    }
    // Every blob is stored under its own digest.
    for (path, (_, _, _, contents)) in
        files.iter().filter(|(p, _)| p.starts_with("blobs/sha256/") && p.len() > 13)
    {
        assert_eq!(&path[13..], &digest(contents)[7..], "{path}");
    }
}

#[test]
fn the_config_runs_the_binary_as_nonroot_with_the_labels() {
    let archive = write_archive(&metadata(), &root_filesystem(runtime())).unwrap();
    let (_, config, _) = unpack(&archive);
    let process = &config["config"];
    assert_eq!(process["User"], "65532:65532");
    assert_eq!(process["Entrypoint"], serde_json::json!(["/usr/local/bin/eviction-autoscaler"]));
    assert_eq!(process["Cmd"], serde_json::json!(["run"]));
    assert_eq!(process["ExposedPorts"], serde_json::json!({"8081/tcp": {}, "9443/tcp": {}}));
    let labels = &process["Labels"];
    assert_eq!(labels["org.opencontainers.image.version"], "0.1.0");
    assert_eq!(labels["org.opencontainers.image.revision"], "0123456789abcdef0123456789abcdef01234567");
    assert_eq!(labels["org.opencontainers.image.created"], "2025-12-05T00:00:00Z");
    assert_eq!(config["created"], "2025-12-05T00:00:00Z");
}

#[test]
fn the_layer_holds_only_the_binary_its_libraries_certificates_and_users_all_at_the_given_time() {
    let archive = write_archive(&metadata(), &root_filesystem(runtime())).unwrap();
    let (_, _, layer) = unpack(&archive);
    let paths: Vec<&str> = layer.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        [
            "etc/",
            "etc/group",
            "etc/nsswitch.conf",
            "etc/passwd",
            "etc/ssl/",
            "etc/ssl/certs/",
            "etc/ssl/certs/ca-certificates.crt",
            "home/",
            "home/nonroot/",
            "lib/",
            "lib/x86_64-linux-gnu/",
            "lib/x86_64-linux-gnu/libc.so.6",
            "lib/x86_64-linux-gnu/libgcc_s.so.1",
            "lib/x86_64-linux-gnu/libm.so.6",
            "lib64/",
            "lib64/ld-linux-x86-64.so.2",
            "tmp/",
            "usr/",
            "usr/local/",
            "usr/local/bin/",
            "usr/local/bin/eviction-autoscaler",
        ]
    );
    let (mode, owner, mtime, contents) = &layer["usr/local/bin/eviction-autoscaler"];
    assert_eq!((*mode, *owner, *mtime), (0o755, 0, 1_764_892_800));
    assert_eq!(contents, b"\x7fELF the binary");
    assert_eq!(layer["home/nonroot/"].1, 65532, "nonroot's home is its own");
    assert_eq!(layer["tmp/"].0, 0o1777);
    assert!(layer.values().all(|(_, _, mtime, _)| *mtime == 1_764_892_800));
}

#[test]
fn the_same_inputs_give_the_same_bytes_and_another_time_another_digest() {
    let first = write_archive(&metadata(), &root_filesystem(runtime())).unwrap();
    let again = write_archive(&metadata(), &root_filesystem(runtime())).unwrap();
    assert_eq!(first.bytes, again.bytes);
    let later =
        write_archive(&Metadata { created: 1_764_892_801, ..metadata() }, &root_filesystem(runtime()))
            .unwrap();
    assert_ne!(first.manifest_digest, later.manifest_digest, "the time is in the image");
}
