//! The binary's command line: every setting rejects a bad value, whichever way it is given,
//! with a message naming the setting and the value; good values are honoured in order
//! flag > env > file > default.

use std::process::{Command, Output};

use eviction_autoscaler_shared::config::setting_names;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_eviction-autoscaler");

/// A bad value for every setting, by flag name.
const BAD: &[(&str, &str)] = &[
    ("controller-enabled", "maybe"),
    ("pdb-create", "yes"),
    ("pdb-floor-mutation", "enabled"),
    ("actioned-namespaces", "prod,Bad_NS"),
    ("enabled-by-default", "2"),
    ("zero-surge-override", "-1"),
    ("surge-trigger", "sometimes"),
    ("cooldown", "soon"),
    ("signal-window", "3s"),
    ("max-hold", "0s"),
    ("eviction-hold", "26s"),
    ("drain-taints", "bad key!"),
    ("unhealthy-pod-eviction-policy", "Never"),
    ("webhook-addr", "localhost"),
    ("health-addr", "nope:80"),
    ("tls-cert-file", "/etc/tls/"),
    ("tls-key-file", "/etc/tls/"),
    ("tls-reload-interval", "0s"),
    ("cert-secret", "Bad_Secret"),
    ("webhook-configuration", "Not A Name"),
    ("webhook-service", "svc.with.dots"),
    ("namespace", "Bad_NS"),
    ("cert-validity", "9s"),
    ("leader-elect", "perhaps"),
    ("lease-namespace", "Bad_NS"),
    ("lease-name", "UPPER"),
    ("log-format", "xml"),
    ("kube-api-qps", "0"),
    ("kube-api-burst", "1.5"),
];

/// Runs the binary with a clean environment (no inherited settings) plus `env`.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the binary runs")
}

fn assert_rejected(out: &Output, flag: &str, value: &str, how: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{how}: --{flag}={value:?} was accepted");
    assert!(
        stderr.contains(flag) && stderr.contains(value),
        "{how}: message must name {flag} and {value:?}, got: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{how}: {stderr}");
}

/// The YAML for one dotted key, e.g. `surge.cooldown` → nested mappings.
fn yaml_for(key: &str, value: &str) -> String {
    let parts: Vec<&str> = key.split('.').collect();
    let mut out = String::from("controllerConfig:\n");
    for (depth, part) in parts.iter().enumerate() {
        let indent = "  ".repeat(depth + 1);
        if depth + 1 == parts.len() {
            out += &format!("{indent}{part}: {value:?}\n");
        } else {
            out += &format!("{indent}{part}:\n");
        }
    }
    out
}

#[test]
fn every_setting_is_covered_by_the_bad_value_table() {
    for (flag, ..) in setting_names() {
        assert!(BAD.iter().any(|(f, _)| *f == flag), "no bad value for --{flag}");
    }
}

#[test]
fn bad_value_as_flag_env_or_file_stops_with_a_message_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, env, key, _) in setting_names() {
        let value = BAD.iter().find(|(f, _)| *f == flag).map(|(_, v)| *v).unwrap();

        let out = run(&["run", &format!("--{flag}={value}")], &[]);
        assert_rejected(&out, flag, value, "flag");

        let out = run(&["run"], &[(env, value)]);
        assert_rejected(&out, flag, value, "env");
        assert!(String::from_utf8_lossy(&out.stderr).contains(env), "env error names {env}");

        let file = dir.path().join(format!("{flag}.yaml"));
        std::fs::write(&file, yaml_for(key, value)).unwrap();
        let out = run(&["run", "--config", file.to_str().unwrap()], &[]);
        assert_rejected(&out, flag, value, "file");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("controllerConfig.{key}")),
            "file error names the key {key}"
        );
    }
}

#[test]
fn unreadable_or_malformed_config_file_is_named() {
    let out = run(&["run", "--config", "/nonexistent/eas.yaml"], &[]);
    assert_rejected(&out, "/nonexistent/eas.yaml", "cannot read", "missing file");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typo.yaml");
    std::fs::write(&file, "controllerConfig:\n  namespace:\n    enabledByDefault: true\n").unwrap();
    let out = run(&["run", "--config", file.to_str().unwrap()], &[]);
    assert_rejected(&out, "typo.yaml", "controllerConfig.namespace.enabledByDefault", "unknown key");
}

#[test]
fn good_config_file_is_honoured_and_flag_and_env_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("eas.yaml");
    std::fs::write(
        &file,
        "controllerConfig:\n  pdb:\n    create: true\n  namespaces:\n    actionedNamespaces: [kube-system, production]\n    enabledByDefault: false\n  surge:\n    cooldown: 5m\n    maxHold: 2h\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let out =
        run(&["config", "--config", path, "--cooldown", "2s"], &[("EVICTION_AUTOSCALER_MAX_HOLD", "30m")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(config["pdbCreate"], true, "file honoured");
    assert_eq!(config["actionedNamespaces"], serde_json::json!(["kube-system", "production"]));
    assert_eq!(config["cooldown"], "2s", "flag beats file");
    assert_eq!(config["maxHold"], "30m", "env beats file");
    assert_eq!(config["signalWindow"], "1m 30s", "default where nothing is given");
}

#[test]
fn crd_subcommand_matches_the_shipped_manifest() {
    let out = run(&["crd"], &[]);
    assert!(out.status.success());
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/base/crd.yaml"))
        .expect("deploy/base/crd.yaml exists (make crd)");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        shipped,
        "deploy/base/crd.yaml is out of date: run `make crd`"
    );
}

#[test]
fn cleanup_takes_the_product_settings_and_refuses_a_bad_one_before_any_cluster_call() {
    let help = run(&["cleanup", "--help"], &[]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("The product's settings, as `run` takes them"), "{help}");
    let args = ["cleanup", "--stop-deployment", "ops/eviction-autoscaler", "--leader-elect", "maybe"];
    let out = run(&args, &[("KUBECONFIG", "/nonexistent")]);
    assert_rejected(&out, "leader-elect", "maybe", "a setting cleanup reads");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("/nonexistent"), "no cluster was contacted");
}

#[test]
fn cleanup_refuses_a_stop_deployment_that_is_not_namespace_slash_name() {
    // Parsed before any cluster is contacted.
    let out =
        run(&["cleanup", "--stop-deployment", "eviction-autoscaler"], &[("KUBECONFIG", "/nonexistent")]);
    assert_rejected(&out, "--stop-deployment", "eviction-autoscaler", "a name without its namespace");
    assert!(String::from_utf8_lossy(&out.stderr).contains("NAMESPACE/NAME"), "says the form");
}

/// The Go chart's `pdbFloorMutation.enabled` is accepted (its values files keep working) and not
/// honoured: set true, by the file or the Go project's env var, the log says so before anything
/// else happens (here: no cluster to find); set false, nothing is said.
#[test]
fn a_go_floor_mutation_setting_is_accepted_and_said_not_to_be_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.yaml");
    std::fs::write(&file, "controllerConfig:\n  pdbFloorMutation:\n    enabled: true\n").unwrap();
    let config = format!("--config={}", file.display());
    let no_cluster = [("KUBECONFIG", "/nonexistent")];
    for out in [
        run(&["run", &config], &no_cluster),
        run(&["run"], &[no_cluster[0], ("ENABLE_PDB_FLOOR_MUTATION", "true")]),
    ] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("pdbFloorMutation.enabled=true is not honoured"), "{stderr}");
        assert!(stderr.contains("SurgeCannotOpenBudget"), "names where blocked PDBs show: {stderr}");
        assert!(stderr.contains("cannot find the cluster"), "the setting itself was accepted: {stderr}");
    }
    let out = run(&["run"], &[no_cluster[0], ("ENABLE_PDB_FLOOR_MUTATION", "false")]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("not honoured"));
}

#[test]
fn audit_prints_its_schema_and_refuses_bad_arguments_with_exit_code_two() {
    let out = run(&["audit", "--schema"], &[]);
    assert!(out.status.success());
    let schema: Value = serde_json::from_slice(&out.stdout).expect("the schema is JSON");
    assert_eq!(schema["title"], "eviction-autoscaler audit -o json");

    for (args, named) in [
        (&["audit", "-o", "yaml"][..], "yaml"),
        (&["audit", "-A", "-n", "apps"][..], "--namespace"),
        (&["audit", "--config-map", "eviction-autoscaler-config"][..], "NAMESPACE/NAME"),
    ] {
        let out = run(args, &[("KUBECONFIG", "/nonexistent")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?} names {named}: {stderr}");
    }
    // No cluster to reach: an error (2), never "would stall" (1).
    let out = run(&["audit", "-A"], &[("KUBECONFIG", "/nonexistent"), ("HOME", "/nonexistent")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: ") && !stderr.contains("panicked"), "{stderr}");
}
