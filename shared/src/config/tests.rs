use super::*;

#[test]
fn defaults_follow_the_aks_basic_install() {
    let c = Config::resolve(&SettingsArgs::default(), None).unwrap();
    assert!(!c.pdb_create);
    assert!(!c.enabled_by_default);
    assert_eq!(c.actioned_namespaces, ["kube-system"]);
    assert_eq!(c.cooldown, Duration::from_secs(60));
    assert_eq!(c.signal_window, Duration::from_secs(90));
    assert_eq!(c.max_hold, Duration::from_secs(3600));
    assert_eq!(c.surge_trigger, SurgeTrigger::Drain);
    assert_eq!(c.unhealthy_pod_eviction_policy, UnhealthyPodEvictionPolicy::AlwaysAllow);
    assert_eq!(c.lease_namespace, "kube-system");
    assert_eq!(c.zero_surge_override, None);
    assert_eq!(c.drain_taints.len(), 3);
}

#[test]
fn precedence_is_flag_over_file_over_default() {
    let file = "controllerConfig:\n  pdb:\n    create: true\n  namespaces:\n    actionedNamespaces: [a, b]\n  surge:\n    cooldown: 5m\n";
    let args = SettingsArgs { cooldown: Some("2s".into()), ..Default::default() };
    let c = Config::resolve(&args, Some(("f.yaml", file))).unwrap();
    assert!(c.pdb_create, "file beats default");
    assert_eq!(c.actioned_namespaces, ["a", "b"]);
    assert_eq!(c.cooldown, Duration::from_secs(2), "flag beats file");
}

#[test]
fn pod_namespace_is_the_lease_namespace_default() {
    let args = SettingsArgs { pod_namespace: Some("ops".into()), ..Default::default() };
    assert_eq!(Config::resolve(&args, None).unwrap().lease_namespace, "ops");
}

#[test]
fn zero_surge_override_forms() {
    for (v, want) in [
        ("", None),
        ("0", None),
        ("0%", None),
        ("2", Some(IntOrString::Int(2))),
        ("50%", Some(IntOrString::String("50%".into()))),
    ] {
        assert_eq!(parse_surge_override(v), Ok(want), "{v:?}");
    }
    for bad in ["-1", "x", "-5%", "1.5", "%"] {
        assert!(parse_surge_override(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn file_errors_name_the_file_and_key() {
    let err = Config::resolve(&SettingsArgs::default(), Some(("c.yaml", "pdb:\n  creat: true\n")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("c.yaml") && err.contains("pdb.creat"), "{err}");
    let ok = Config::resolve(&SettingsArgs::default(), Some(("c.yaml", "metrics:\n  enabled: true\n")));
    assert!(ok.is_ok(), "Go chart keys are accepted");
}

#[test]
fn cert_settings_defaults_and_conflict() {
    let c = Config::resolve(&SettingsArgs::default(), None).unwrap();
    assert_eq!(c.cert_secret, "");
    assert_eq!(c.webhook_configuration, "eviction-autoscaler");
    assert_eq!(c.webhook_service, "eviction-autoscaler");
    assert_eq!(c.namespace_or("from-client"), "from-client");
    assert_eq!(c.cert_validity, Duration::from_secs(8760 * 3600));
    let args = SettingsArgs { pod_namespace: Some("ops".into()), ..Default::default() };
    assert_eq!(Config::resolve(&args, None).unwrap().namespace_or("from-client"), "ops");

    let args = SettingsArgs { cert_secret: Some("eas-tls".into()), ..Default::default() };
    assert!(Config::resolve(&args, None).is_ok(), "the default file paths do not conflict");
    let args = SettingsArgs {
        cert_secret: Some("eas-tls".into()),
        tls_cert_file: Some("/tls/tls.crt".into()),
        ..Default::default()
    };
    let err = Config::resolve(&args, None).unwrap_err().to_string();
    assert!(err.contains("cert-secret") && err.contains("tls-cert-file"), "{err}");
    let args = SettingsArgs { cert_validity: Some("9s".into()), ..Default::default() };
    assert!(Config::resolve(&args, None).is_err());
}

#[test]
fn invalid_value_names_setting_value_and_source() {
    let args = SettingsArgs { signal_window: Some("3s".into()), ..Default::default() };
    let err = Config::resolve(&args, None).unwrap_err().to_string();
    assert!(err.contains("signal-window") && err.contains("\"3s\"") && err.contains("5s"), "{err}");
}

#[test]
fn the_two_listening_addresses_must_differ_unless_the_system_picks_the_ports() {
    let same = SettingsArgs {
        webhook_addr: Some("127.0.0.1:9443".into()),
        health_addr: Some("127.0.0.1:9443".into()),
        ..Default::default()
    };
    let err = Config::resolve(&same, None).unwrap_err().to_string();
    assert!(err.contains("health-addr") && err.contains("must differ"), "{err}");
    // Port 0 on both: each listener gets its own free port (tests and local runs use this).
    let any = SettingsArgs {
        webhook_addr: Some("127.0.0.1:0".into()),
        health_addr: Some("127.0.0.1:0".into()),
        ..Default::default()
    };
    assert!(Config::resolve(&any, None).is_ok());
}

/// A duration beyond any deadline a clock can hold (`500000000000y` parses) once made the TLS
/// file watcher's interval panic on its second tick; every duration is capped at 100 years.
#[test]
fn durations_beyond_a_hundred_years_are_refused_naming_the_setting() {
    use clap::Parser as _;
    let durations: Vec<&str> = setting_names()
        .filter(|(.., default)| humantime::parse_duration(default).is_ok())
        .map(|(flag, ..)| flag)
        .collect();
    assert!(durations.len() >= 5, "{durations:?}");
    for flag in durations {
        let args = Flags::try_parse_from(["x", &format!("--{flag}=500000000000y")]).expect("parses").settings;
        match Config::resolve(&args, None) {
            Err(error @ ConfigError::Invalid { setting, .. }) if setting == flag => {
                assert!(error.to_string().contains("at most 100 years"), "{error}");
            }
            Err(error) => panic!("--{flag}: an error about another setting: {error}"),
            Ok(_) => panic!("--{flag}=500000000000y accepted"),
        }
    }
    let args = SettingsArgs { max_hold: Some("100y".into()), ..Default::default() };
    assert!(Config::resolve(&args, None).is_ok(), "100 years is still a valid (if odd) hold");
}

#[derive(clap::Parser)]
struct Flags {
    #[command(flatten)]
    settings: SettingsArgs,
}
