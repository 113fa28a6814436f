//! deploy/base/webhook.yaml registers what the router serves, the way the design requires.

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;

fn configuration() -> ValidatingWebhookConfiguration {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/base/webhook.yaml");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn every_webhook_fails_open_fast_and_is_dry_run_safe() {
    let configuration = configuration();
    assert_eq!(configuration.webhooks.as_ref().map(Vec::len), Some(3));
    for webhook in configuration.webhooks.unwrap_or_default() {
        let name = &webhook.name;
        assert_eq!(webhook.failure_policy.as_deref(), Some("Ignore"), "{name}");
        assert_eq!(webhook.side_effects, "NoneOnDryRun", "{name}");
        // The eviction webhook may hold an eviction (up to 15 s, the bound the design allows);
        // the others answer at once.
        let longest = if name.starts_with("eviction.") { 15 } else { 5 };
        assert!(webhook.timeout_seconds.is_some_and(|t| (1..=longest).contains(&t)), "{name}");
        assert_eq!(webhook.admission_review_versions, ["v1"], "{name}");
        let service = webhook.client_config.service.unwrap_or_else(|| panic!("{name}: no service"));
        assert_eq!(
            (service.namespace.as_str(), service.name.as_str()),
            ("eviction-autoscaler", "eviction-autoscaler")
        );
        assert_eq!(service.port, Some(443), "{name}");
        let rules = webhook.rules.unwrap_or_default();
        assert_eq!(rules.len(), 1, "{name}");
        let rule = &rules[0];
        let resources = rule.resources.clone().unwrap_or_default();
        let operations = rule.operations.clone().unwrap_or_default();
        let groups = rule.api_groups.clone().unwrap_or_default();
        let path = service.path.unwrap_or_default();
        match resources.as_slice() {
            [r] if r == "pods/eviction" => {
                assert_eq!(path, "/validate-eviction");
                assert_eq!(operations, ["CREATE"]);
                assert_eq!(groups, [""], "evictions are a subresource of core pods");
                assert!(
                    webhook.object_selector.is_none(),
                    "an objectSelector would see the Eviction, not the pod"
                );
            }
            [r] if r == "deployments" => {
                assert_eq!(path, "/validate-deployment");
                assert_eq!(operations, ["CREATE"]);
                assert_eq!(groups, ["apps"]);
            }
            [r] if r == "poddisruptionbudgets" => {
                assert_eq!(path, "/validate-pdb");
                assert_eq!(operations, ["CREATE", "UPDATE"]);
                assert_eq!(groups, ["policy"]);
            }
            other => panic!("{name}: unexpected resources {other:?}"),
        }
    }
}
