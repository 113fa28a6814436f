//! README's "Switching from the Go project" states what the binary and the manifests do: the
//! facts it names that can be checked without a cluster are checked here
//! (`e2e_from_go_project` does the switch itself).

use eviction_autoscaler_controller::pdb::default_pdb_name;
use eviction_autoscaler_shared::config::{Config, SettingsArgs, setting_names};
use serde_json::Value;

fn read(relative: &str) -> String {
    std::fs::read_to_string(format!("{}/{relative}", env!("CARGO_MANIFEST_DIR"))).expect(relative)
}

/// The README's section, from its heading to the next.
fn section() -> String {
    let readme = read("README.md");
    let start = readme.find("## Switching from the Go project").expect("the section exists");
    let rest = &readme[start + 3..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_owned()
}

fn yaml(relative: &str) -> Value {
    serde_saphyr::from_str(&read(relative)).expect("YAML")
}

#[test]
fn the_settings_it_names_are_the_binarys() {
    let text = section();
    for env in [
        "CONTROLLER_ENABLED",
        "PDB_CREATE",
        "ACTIONED_NAMESPACES",
        "ENABLED_BY_DEFAULT",
        "ZERO_SURGE_OVERRIDE",
        "ENABLE_PDB_FLOOR_MUTATION",
    ] {
        assert!(text.contains(&format!("`{env}`")), "the section names {env}");
        assert!(setting_names().any(|(_, e, _, _)| e == env), "the binary reads {env}");
    }
    let default = setting_names().find(|(flag, ..)| *flag == "pdb-create").map(|(.., d)| d);
    assert_eq!(default, Some("false"));
    assert!(text.contains("| `pdb.create` default | `true` (its chart) | `false`"), "the stated default");
}

#[test]
fn the_default_pdb_name_it_states_is_the_one_made() {
    assert!(section().contains("`<deployment>-eviction-autoscaler`"));
    // The planner's name (`desired_pdb` names every default PDB with it), which the end-to-end
    // tests also wait for on the real control plane.
    assert_eq!(default_pdb_name("web"), "web-eviction-autoscaler");
    assert_eq!(e2e_support::pdbs::ours("web"), default_pdb_name("web"));
}

#[test]
fn the_refused_value_is_said_in_the_words_it_quotes() {
    let file = "controllerConfig:\n  pdbFloorMutation:\n    enabled: true\n";
    let config = Config::resolve(&SettingsArgs::default(), Some(("config.yaml", file))).expect("accepted");
    let said = config.not_honoured().expect("said not to be honoured");
    let quoted = "pdbFloorMutation.enabled=true is not honoured";
    assert!(section().contains(quoted) && said.contains(quoted), "{said}");
    let notes = read("deploy/helm/eviction-autoscaler/templates/NOTES.txt");
    assert!(notes.contains(&format!("controllerConfig.{quoted}")), "NOTES say it too");
}

#[test]
fn the_ports_and_the_metrics_service_it_states_are_shipped() {
    let text = section();
    let service = yaml("deploy/base/metrics-service.yaml");
    assert_eq!(service["metadata"]["name"], "eviction-autoscaler-metrics-service");
    assert_eq!(service["metadata"]["labels"]["app.kubernetes.io/component"], "metrics");
    let port = &service["spec"]["ports"][0];
    assert_eq!(
        (port["name"].as_str(), port["port"].as_u64(), port["targetPort"].as_str()),
        (Some("http"), Some(8080), Some("metrics"))
    );
    assert!(text.contains("`eviction-autoscaler-metrics-service`, port `http` 8080 → 8081"));
    let deployment = yaml("deploy/base/deployment.yaml");
    let ports: Vec<(String, u64)> = deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_owned(),
                p["containerPort"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(ports, [("webhook".to_owned(), 9443), ("metrics".to_owned(), 8081)]);
    assert!(text.contains("port 8081 (`metrics`)") && text.contains("port 9443"));
}
