//! `SetDefaults_CustomResourceDefinitionSpec` and `SetDefaults_ServiceReference`
//! (`apiextensions-apiserver/pkg/apis/apiextensions/v1/defaults.go`). The status a CRD is
//! created with is the strategy's ([`crate::cluster_logic::crd_status`]).

use serde_json::{Value, json};

fn unset(obj: &Value, key: &str) -> bool {
    obj.get(key).is_none_or(|v| v.is_null() || v.as_str() == Some(""))
}

/// Defaults a CRD in place: the singular and list names from the kind, `conversion:
/// {strategy: None}`, a conversion webhook service's port 443.
pub fn crd(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else { return };
    if spec["names"].is_object() {
        let kind = spec["names"]["kind"].as_str().unwrap_or_default().to_string();
        let names = &mut spec["names"];
        if unset(names, "singular") {
            names["singular"] = json!(kind.to_lowercase());
        }
        if unset(names, "listKind") && !kind.is_empty() {
            names["listKind"] = json!(format!("{kind}List"));
        }
    }
    if spec["conversion"].is_null() {
        spec["conversion"] = json!({"strategy": "None"});
    }
    if let Some(service) =
        spec.pointer_mut("/conversion/webhook/clientConfig/service").filter(|s| s.is_object())
        && service["port"].is_null()
    {
        service["port"] = json!(443);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_conversion_get_the_v1_defaults() {
        // The real v1.35 apiserver's answer to a CRD naming only plural, kind and a short name.
        let mut widgets = json!({"spec": {"group": "life-probe.example.com",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]}, "scope": "Namespaced"}});
        crd(&mut widgets);
        assert_eq!(
            widgets["spec"]["names"],
            json!({"plural": "widgets", "singular": "widget", "shortNames": ["wd"], "kind": "Widget", "listKind": "WidgetList"})
        );
        assert_eq!(widgets["spec"]["conversion"], json!({"strategy": "None"}));
        let mut hooked = json!({"spec": {"names": {"plural": "gadgets", "singular": "gizmo", "kind": "Gadget",
            "listKind": "Gadgets"}, "conversion": {"strategy": "Webhook",
            "webhook": {"clientConfig": {"service": {"namespace": "n", "name": "s"}}, "conversionReviewVersions": ["v1"]}}}});
        crd(&mut hooked);
        assert_eq!(hooked["spec"]["names"]["singular"], "gizmo");
        assert_eq!(hooked["spec"]["names"]["listKind"], "Gadgets");
        assert_eq!(hooked["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"], 443);
    }
}
