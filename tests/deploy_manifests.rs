//! The install manifests (deploy/): every kustomization we ship or document renders with the
//! real `kubectl kustomize` and is wired the way the binary expects — its own parser reads each
//! mode's ConfigMap, and the ports, names, certificate paths and security settings line up.
//! (`e2e_manifests` applies them to a real cluster; `doc_references` checks the code paths
//! their comments name.)

#[path = "deploy_manifests/renderings.rs"]
mod renderings;
#[path = "deploy_manifests/wiring.rs"]
mod wiring;

use renderings::{BIN, CASES, Certs, Expected, Kubectl, NAMESPACE, render};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kustomization_is_wired_the_way_the_binary_expects() {
    let kubectl = Kubectl::new(None);
    for &(source, expected) in CASES {
        let rendered = render(&kubectl, source).await;
        wiring::check_objects(&rendered.name, &rendered.objects, expected);
        wiring::check_with_binary(&rendered.name, &rendered.objects, expected);
    }
}

/// The final stage of deploy/Dockerfile: its instructions (continuation lines joined, comments
/// dropped) as (instruction, arguments).
fn dockerfile_final_stage() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/Dockerfile"))
        .expect("deploy/Dockerfile");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with('#')).collect();
    let joined = lines.join("\n").replace("\\\n", " ");
    let instructions: Vec<(String, String)> = joined
        .lines()
        .filter_map(|l| l.trim().split_once(' '))
        .map(|(instruction, arguments)| (instruction.to_uppercase(), arguments.trim().to_owned()))
        .collect();
    let last_from = instructions.iter().rposition(|(i, _)| i == "FROM").expect("a FROM");
    instructions[last_from..].to_vec()
}

/// `k="v" k2=v2 …` of a LABEL or ARG line.
fn pairs(arguments: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = arguments.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let (value, next) = match after.strip_prefix('"') {
            Some(quoted) => quoted.split_once('"').expect("a closing quote"),
            None => after.split_once(' ').unwrap_or((after, "")),
        };
        out.push((key.trim().to_owned(), value.to_owned()));
        rest = next.trim();
    }
    out
}

#[test]
fn the_dockerfile_builds_what_make_image_builds() {
    use eviction_autoscaler_image::{BINARY_PATH, CMD, GLIBC_TUNABLES, Metadata, PORTS, USER, labels};
    let stage = dockerfile_final_stage();
    let one = |instruction: &str| -> String {
        let found: Vec<&String> = stage.iter().filter(|(i, _)| i == instruction).map(|(_, a)| a).collect();
        assert_eq!(found.len(), 1, "one {instruction} in the Dockerfile's final stage: {found:?}");
        found[0].clone()
    };
    assert_eq!(one("USER"), USER);
    assert_eq!(one("ENV"), format!("GLIBC_TUNABLES={GLIBC_TUNABLES}"), "the same allocator settings");
    let entrypoint: Vec<String> = serde_json::from_str(&one("ENTRYPOINT")).expect("ENTRYPOINT in JSON form");
    assert_eq!(entrypoint, [BINARY_PATH]);
    let cmd: Vec<String> = serde_json::from_str(&one("CMD")).expect("CMD in JSON form");
    assert_eq!(cmd, CMD);
    let mut exposed: Vec<String> = one("EXPOSE").split_whitespace().map(|p| format!("{p}/tcp")).collect();
    let mut ports: Vec<String> = PORTS.iter().map(|p| (*p).to_owned()).collect();
    exposed.sort();
    ports.sort();
    assert_eq!(exposed, ports);
    assert!(one("COPY").ends_with(&format!(" {BINARY_PATH}")), "the binary is copied to {BINARY_PATH}");

    // The same labels, the varying ones from build arguments, the version's default the crate's.
    let args: std::collections::BTreeMap<String, String> =
        stage.iter().filter(|(i, _)| i == "ARG").flat_map(|(_, a)| pairs(a)).collect();
    assert_eq!(
        args.get("VERSION").map(String::as_str),
        Some(env!("CARGO_PKG_VERSION")),
        "ARG VERSION defaults to the crate version"
    );
    let metadata = Metadata {
        name: "eviction-autoscaler".to_owned(),
        version: "${VERSION}".to_owned(),
        revision: "${REVISION}".to_owned(),
        created: 0,
        architecture: "amd64".to_owned(),
        licenses: env!("CARGO_PKG_LICENSE").to_owned(),
    };
    let mut expected = labels(&metadata);
    expected.insert("org.opencontainers.image.created".to_owned(), "${CREATED}".to_owned());
    let dockerfile: std::collections::BTreeMap<String, String> = pairs(&one("LABEL")).into_iter().collect();
    assert_eq!(dockerfile, expected);
}
