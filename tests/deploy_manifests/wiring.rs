//! Checks on one rendering: what a user would hit if two manifests disagreed (a port, a name,
//! a path, a permission), and the ConfigMap and command line read by the binary itself.

use std::process::Command;

use e2e_support::metrics::metric_names;
use serde_json::Value;

use super::{BIN, Certs, Expected, NAMESPACE};

const PRODUCT: &str = "eviction-autoscaler";
const TLS_SECRET: &str = "eviction-autoscaler-tls";

/// The object of `kind` named `name` (the rendering must hold exactly one).
fn find<'a>(case: &str, objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> =
        of_kind(objects, kind).into_iter().filter(|o| text(o, "/metadata/name") == name).collect();
    match found.as_slice() {
        [one] => one,
        other => panic!("{case}: expected one {kind} {name}, found {}", other.len()),
    }
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn items<'a>(value: &'a Value, pointer: &str) -> &'a [Value] {
    value.pointer(pointer).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// Does `selector` (a matchLabels map) select `labels`?
fn selects(selector: &Value, labels: &Value) -> bool {
    let Some(wanted) = selector.as_object() else { return false };
    !wanted.is_empty() && wanted.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The product's container and pod spec in the rendered Deployment.
struct Pod<'a> {
    spec: &'a Value,
    labels: &'a Value,
    container: &'a Value,
}

impl<'a> Pod<'a> {
    fn of(case: &str, objects: &'a [Value]) -> Self {
        let deployment = find(case, objects, "Deployment", PRODUCT);
        assert_eq!(text(deployment, "/metadata/namespace"), NAMESPACE, "{case}");
        let spec = &deployment["spec"]["template"]["spec"];
        let containers = items(spec, "/containers");
        assert_eq!(containers.len(), 1, "{case}: one container");
        Pod { spec, labels: &deployment["spec"]["template"]["metadata"]["labels"], container: &containers[0] }
    }

    /// The container port `port` (a number or a port name) refers to.
    fn port(&self, case: &str, port: &Value) -> u64 {
        let ports = items(self.container, "/ports");
        let found = match port {
            Value::String(name) => ports.iter().find(|p| p["name"] == name.as_str()),
            Value::Number(n) => ports.iter().find(|p| p["containerPort"].as_u64() == n.as_u64()),
            _ => None,
        };
        found
            .and_then(|p| p["containerPort"].as_u64())
            .unwrap_or_else(|| panic!("{case}: no container port {port}"))
    }

    fn volume(&self, case: &str, name: &str) -> &'a Value {
        items(self.spec, "/volumes")
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("{case}: no volume {name}"))
    }

    fn mount(&self, case: &str, volume: &str) -> &'a Value {
        items(self.container, "/volumeMounts")
            .iter()
            .find(|m| m["name"] == volume)
            .unwrap_or_else(|| panic!("{case}: no mount of volume {volume}"))
    }

    /// The literal value of env var `name`, `None` if unset.
    fn env(&self, name: &str) -> Option<&'a str> {
        items(self.container, "/env").iter().find(|e| e["name"] == name).map(|e| text(e, "/value"))
    }
}

/// Names, ports, paths, security settings and permissions agree across the rendering.
pub fn check_objects(case: &str, objects: &[Value], expected: Expected) {
    let pod = Pod::of(case, objects);
    let deployment = find(case, objects, "Deployment", PRODUCT);
    assert_eq!(deployment["spec"]["replicas"], 2, "{case}: two replicas");
    assert_eq!(
        text(pod.container, "/image"),
        format!("{PRODUCT}:{}", env!("CARGO_PKG_VERSION")),
        "{case}: the image tag is the crate version"
    );
    check_security(case, &pod);
    check_service_and_webhook(case, objects, &pod);
    check_rbac(case, objects, &pod);
    match expected.certs {
        Certs::SelfManaged => check_self_managed(case, objects, &pod),
        Certs::CertManager => check_cert_manager(case, objects, &pod),
    }
    check_monitoring(case, objects, expected.monitoring);

    let pdb = find(case, objects, "PodDisruptionBudget", PRODUCT);
    assert_eq!(pdb["spec"]["maxUnavailable"], 1, "{case}: its own PDB never blocks a drain alone");
    assert!(selects(&pdb["spec"]["selector"]["matchLabels"], pod.labels), "{case}: its PDB covers its pods");
}

fn check_security(case: &str, pod: &Pod) {
    let pod_security = &pod.spec["securityContext"];
    assert_eq!(pod_security["runAsNonRoot"], true, "{case}");
    // The image's user (`make image`, deploy/Dockerfile), so the pod runs as the image expects.
    let image_user = eviction_autoscaler_image::USER.split(':').next().and_then(|u| u.parse::<u64>().ok());
    assert_eq!(pod_security["runAsUser"].as_u64(), image_user, "{case}: the pod runs as the image's user");
    assert_eq!(text(pod_security, "/seccompProfile/type"), "RuntimeDefault", "{case}");
    let security = &pod.container["securityContext"];
    assert_eq!(security["allowPrivilegeEscalation"], false, "{case}");
    assert_eq!(security["readOnlyRootFilesystem"], true, "{case}");
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]), "{case}");
    assert!(security["capabilities"].get("add").is_none(), "{case}: no capability added");
    assert_eq!(pod.spec["enableServiceLinks"], false, "{case}: no EVICTION_AUTOSCALER_* service env vars");
    for (kind, value) in [("requests", "cpu"), ("requests", "memory"), ("limits", "memory")] {
        assert!(pod.container["resources"][kind].get(value).is_some(), "{case}: resources.{kind}.{value}");
    }
    let spread = items(pod.spec, "/topologySpreadConstraints");
    assert!(
        spread.iter().any(|c| c["topologyKey"] == "kubernetes.io/hostname"
            && selects(&c["labelSelector"]["matchLabels"], pod.labels)),
        "{case}: replicas spread over nodes"
    );
    // The self-managed mode creates the Secret after the pod starts: the pod must not wait.
    let tls = pod.volume(case, "tls");
    assert_eq!(text(tls, "/secret/secretName"), TLS_SECRET, "{case}");
    assert_eq!(tls["secret"]["optional"], true, "{case}: the certificate Secret is optional");
}

fn check_service_and_webhook(case: &str, objects: &[Value], pod: &Pod) {
    let service = find(case, objects, "Service", PRODUCT);
    assert!(selects(&service["spec"]["selector"], pod.labels), "{case}: the Service selects the pods");
    let webhook_config = find(case, objects, "ValidatingWebhookConfiguration", PRODUCT);
    let webhooks = items(webhook_config, "/webhooks");
    assert_eq!(webhooks.len(), 3, "{case}");
    for hook in webhooks {
        let hook_name = text(hook, "/name");
        let target = &hook["clientConfig"]["service"];
        assert_eq!(text(target, "/name"), text(service, "/metadata/name"), "{case}: {hook_name}");
        assert_eq!(text(target, "/namespace"), text(service, "/metadata/namespace"), "{case}: {hook_name}");
        let port = items(service, "/spec/ports")
            .iter()
            .find(|p| p["port"] == target["port"])
            .unwrap_or_else(|| panic!("{case}: {hook_name} calls a port the Service lacks"));
        let container_port = pod.port(case, &port["targetPort"]);
        assert_eq!(
            pod.port(case, &Value::from("webhook")),
            container_port,
            "{case}: {hook_name} reaches the webhook port"
        );
        let excluded = items(hook, "/namespaceSelector/matchExpressions").iter().any(|e| {
            e["key"] == "kubernetes.io/metadata.name"
                && e["operator"] == "NotIn"
                && items(e, "/values").iter().any(|v| v == NAMESPACE)
        });
        assert!(excluded, "{case}: {hook_name} is never called for the product's own namespace");
    }
    let metrics = items(service, "/spec/ports").iter().find(|p| p["name"] == "metrics");
    let metrics = metrics.unwrap_or_else(|| panic!("{case}: the Service has no metrics port"));
    assert_eq!(pod.port(case, &metrics["targetPort"]), pod.port(case, &Value::from("metrics")), "{case}");
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        let get = &pod.container[probe]["httpGet"];
        assert_eq!(text(get, "/path"), path, "{case}: {probe}");
        assert_eq!(pod.port(case, &get["port"]), pod.port(case, &Value::from("metrics")), "{case}: {probe}");
    }
}

fn check_rbac(case: &str, objects: &[Value], pod: &Pod) {
    let account = text(pod.spec, "/serviceAccountName");
    let account_object = find(case, objects, "ServiceAccount", account);
    assert_eq!(text(account_object, "/metadata/namespace"), NAMESPACE, "{case}");
    for binding in of_kind(objects, "ClusterRoleBinding").into_iter().chain(of_kind(objects, "RoleBinding")) {
        let binding_name = text(binding, "/metadata/name");
        for subject in items(binding, "/subjects") {
            assert_eq!(
                (text(subject, "/kind"), text(subject, "/name"), text(subject, "/namespace")),
                ("ServiceAccount", account, NAMESPACE),
                "{case}: {binding_name} binds only the product's ServiceAccount"
            );
        }
        let role_kind = text(binding, "/roleRef/kind");
        let role = find(case, objects, role_kind, text(binding, "/roleRef/name"));
        if role_kind == "Role" {
            assert_eq!(text(role, "/metadata/namespace"), text(binding, "/metadata/namespace"), "{case}");
        }
    }
    for role in of_kind(objects, "ClusterRole").into_iter().chain(of_kind(objects, "Role")) {
        let role_name = text(role, "/metadata/name");
        let cluster_wide = role["kind"] == "ClusterRole";
        for rule in items(role, "/rules") {
            for field in ["verbs", "resources", "apiGroups"] {
                assert!(
                    !items(rule, &format!("/{field}")).contains(&Value::from("*")),
                    "{case}: {role_name}: no *"
                );
            }
            let resources = items(rule, "/resources");
            if resources.contains(&Value::from("secrets")) {
                assert!(!cluster_wide, "{case}: {role_name}: Secrets only in the product's namespace");
                let names = items(rule, "/resourceNames");
                assert!(
                    items(rule, "/verbs") == [Value::from("create")] || names == [Value::from(TLS_SECRET)],
                    "{case}: {role_name}: Secrets other than {TLS_SECRET} are never read"
                );
            }
        }
    }
}

/// The verbs a rule grants on `resource`, limited to `name` if the rule has resourceNames.
fn granted(objects: &[Value], kind: &str, resource: &str, name: &str) -> Vec<String> {
    of_kind(objects, kind)
        .into_iter()
        .flat_map(|role| items(role, "/rules"))
        .filter(|rule| items(rule, "/resources").contains(&Value::from(resource)))
        .filter(|rule| {
            let names = items(rule, "/resourceNames");
            names.is_empty() || names.contains(&Value::from(name))
        })
        .flat_map(|rule| items(rule, "/verbs").iter().filter_map(Value::as_str).map(str::to_owned))
        .collect()
}

fn check_self_managed(case: &str, objects: &[Value], pod: &Pod) {
    assert_eq!(pod.env("EVICTION_AUTOSCALER_CERT_SECRET"), Some(TLS_SECRET), "{case}: self-managed mode");
    assert!(of_kind(objects, "Certificate").is_empty(), "{case}: no cert-manager objects");
    let webhook_config = find(case, objects, "ValidatingWebhookConfiguration", PRODUCT);
    assert!(
        webhook_config.pointer("/metadata/annotations/cert-manager.io~1inject-ca-from").is_none(),
        "{case}"
    );
    let secret_verbs = granted(objects, "Role", "secrets", TLS_SECRET);
    for verb in ["get", "create", "update", "watch"] {
        assert!(secret_verbs.iter().any(|v| v == verb), "{case}: may {verb} the certificate Secret");
    }
    let webhook_verbs = granted(objects, "ClusterRole", "validatingwebhookconfigurations", PRODUCT);
    assert!(webhook_verbs.iter().any(|v| v == "patch"), "{case}: may patch the caBundle");
}

fn check_cert_manager(case: &str, objects: &[Value], pod: &Pod) {
    assert_eq!(pod.env("EVICTION_AUTOSCALER_CERT_SECRET").unwrap_or_default(), "", "{case}: files mode");
    let webhook_config = find(case, objects, "ValidatingWebhookConfiguration", PRODUCT);
    let inject = text(webhook_config, "/metadata/annotations/cert-manager.io~1inject-ca-from");
    let (namespace, name) =
        inject.split_once('/').unwrap_or_else(|| panic!("{case}: inject-ca-from {inject:?} is not NS/NAME"));
    let certificate = find(case, objects, "Certificate", name);
    assert_eq!(text(certificate, "/metadata/namespace"), namespace, "{case}");
    assert_eq!(text(certificate, "/spec/secretName"), TLS_SECRET, "{case}: the mounted Secret is issued");
    let service_dns = format!("{PRODUCT}.{NAMESPACE}.svc");
    assert!(items(certificate, "/spec/dnsNames").contains(&Value::from(service_dns)), "{case}: dnsNames");
    let issuer = find(case, objects, "Issuer", text(certificate, "/spec/issuerRef/name"));
    assert_eq!(text(issuer, "/metadata/namespace"), NAMESPACE, "{case}");
}

fn check_monitoring(case: &str, objects: &[Value], wanted: bool) {
    let monitors = of_kind(objects, "ServiceMonitor");
    let rules = of_kind(objects, "PrometheusRule");
    if !wanted {
        assert!(monitors.is_empty() && rules.is_empty(), "{case}: monitoring is opt-in");
        return;
    }
    let service = find(case, objects, "Service", PRODUCT);
    let [monitor] = monitors.as_slice() else { panic!("{case}: one ServiceMonitor") };
    assert!(selects(&monitor["spec"]["selector"]["matchLabels"], &service["metadata"]["labels"]), "{case}");
    for endpoint in items(monitor, "/spec/endpoints") {
        let port = &endpoint["port"];
        assert!(items(service, "/spec/ports").iter().any(|p| p["name"] == *port), "{case}: port {port}");
    }
    let [rule] = rules.as_slice() else { panic!("{case}: one PrometheusRule") };
    let alerts: Vec<&Value> = items(rule, "/spec/groups").iter().flat_map(|g| items(g, "/rules")).collect();
    let names: Vec<&str> = alerts.iter().map(|a| text(a, "/alert")).collect();
    for wanted in [
        "EvictionAutoscalerDown",
        "EvictionAutoscalerNoLeader",
        "EvictionAutoscalerSurgeOverdue",
        "EvictionAutoscalerDegraded",
        "EvictionAutoscalerDrainBlocked",
    ] {
        assert!(names.contains(&wanted), "{case}: alert {wanted} in {names:?}");
    }
    let exposed = product_metrics();
    check_dashboard(case, objects, &exposed);
    for alert in alerts {
        let name = text(alert, "/alert");
        // An alert on a metric the product does not expose would never fire.
        for metric in metric_names(text(alert, "/expr")) {
            assert!(exposes(&exposed, metric), "{case}: {name} uses unknown {metric}");
        }
        assert!(text(alert, "/expr").contains(&format!("job=\"{PRODUCT}\"")), "{case}: {name} uses the job");
        assert!(!text(alert, "/labels/severity").is_empty(), "{case}: {name} severity");
        for field in ["summary", "description", "runbook"] {
            assert!(!text(alert, &format!("/annotations/{field}")).is_empty(), "{case}: {name} {field}");
        }
    }
}

/// The Grafana dashboard's ConfigMap: every panel's queries name only metrics the product
/// exposes, and select the ServiceMonitor's job as the alerts do.
fn check_dashboard(case: &str, objects: &[Value], exposed: &str) {
    let maps: Vec<&Value> = of_kind(objects, "ConfigMap")
        .into_iter()
        .filter(|m| m["data"].get("dashboard.json").is_some())
        .collect();
    let [map] = maps.as_slice() else { panic!("{case}: one dashboard ConfigMap") };
    assert_eq!(text(map, "/metadata/labels/grafana_dashboard"), "1", "{case}: the sidecar's label");
    let dashboard: Value = serde_json::from_str(text(map, "/data/dashboard.json")).expect("dashboard JSON");
    let exprs: Vec<&str> = items(&dashboard, "/panels")
        .iter()
        .flat_map(|panel| items(panel, "/targets"))
        .map(|target| text(target, "/expr"))
        .collect();
    assert!(exprs.len() >= 8, "{case}: {exprs:?}");
    for expr in exprs {
        assert!(expr.contains(&format!("job=\"{PRODUCT}\"")), "{case}: {expr} selects the job");
        for metric in metric_names(expr) {
            assert!(exposes(exposed, metric), "{case}: the dashboard uses unknown {metric}");
        }
    }
}

/// Whether `metric` is one the product exposes, as a query names it: a counter with
/// `_total`, a histogram's `_bucket`, `_count` or `_sum`.
fn exposes(exposed: &str, metric: &str) -> bool {
    let family = ["_total", "_bucket", "_count", "_sum"].iter().find_map(|s| metric.strip_suffix(s));
    [Some(metric), family].into_iter().flatten().any(|name| exposed.contains(&format!("# TYPE {name} ")))
}

/// The `# TYPE` lines of every metric the product registers (webhook and controller, with the
/// prefix `run` uses).
fn product_metrics() -> String {
    let mut registry = prometheus_client::registry::Registry::with_prefix(PRODUCT.replace('-', "_"));
    eviction_autoscaler_webhook::Metrics::new().register(&mut registry);
    let controller = eviction_autoscaler_controller::Metrics::new();
    controller.register(&mut registry);
    // A labelled family is printed only once it has a series.
    controller.set_degraded(&("default".to_owned(), "web".to_owned()), Some("MultiplePDBs"));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("metrics encode");
    text
}

/// The binary reads this rendering's ConfigMap and command line as the pod would, and its
/// effective configuration is the mode's, on the ports and paths the manifests use.
pub fn check_with_binary(case: &str, objects: &[Value], expected: Expected) {
    let pod = Pod::of(case, objects);
    let config_volume = pod.volume(case, "config");
    let config_map = find(case, objects, "ConfigMap", text(config_volume, "/configMap/name"));
    let config_text = config_map["data"]["config.yaml"]
        .as_str()
        .unwrap_or_else(|| panic!("{case}: the ConfigMap has no config.yaml"));
    let mount = pod.mount(case, "config");
    assert!(mount.get("subPath").is_none(), "{case}: a subPath mount never sees ConfigMap edits");
    let in_pod = format!("{}/config.yaml", text(mount, "/mountPath"));
    let scratch = tempfile::tempdir().expect("temp dir");
    let local = scratch.path().join("config.yaml");
    std::fs::write(&local, config_text).expect("write config.yaml");

    let args: Vec<String> =
        items(pod.container, "/args").iter().map(|a| a.as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(args.first().map(String::as_str), Some("run"), "{case}: the container runs `run`");
    let mut found_config = false;
    let mut flags: Vec<String> = Vec::new();
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let path = match arg.strip_prefix("--config=") {
            Some(path) => Some(path.to_owned()),
            None if arg == "--config" => rest.next().cloned(),
            None => None,
        };
        match path {
            Some(path) => {
                assert_eq!(path, in_pod, "{case}: --config names the mounted ConfigMap key");
                found_config = true;
                flags.push(format!("--config={}", local.display()));
            }
            None => flags.push(arg.clone()),
        }
    }
    assert!(found_config, "{case}: the container passes --config");

    let mut cmd = Command::new(BIN);
    cmd.arg("config").args(&flags).env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
    for entry in items(pod.container, "/env") {
        let name = text(entry, "/name");
        let value = match text(entry, "/valueFrom/fieldRef/fieldPath") {
            "" => text(entry, "/value").to_owned(),
            "metadata.namespace" => NAMESPACE.to_owned(),
            "metadata.name" => format!("{PRODUCT}-7d4b9c-x2k9p"),
            other => panic!("{case}: env {name} from an unexpected field {other}"),
        };
        cmd.env(name, value);
    }
    let out = cmd.output().expect("the binary runs");
    assert!(
        out.status.success(),
        "{case}: the binary rejects the shipped configuration: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config: Value = serde_json::from_slice(&out.stdout).expect("`config` prints JSON");
    check_hold_fits_the_timeout(case, objects, &config);
    assert_eq!(config["pdbCreate"], expected.pdb_create, "{case}: pdb.create");
    assert_eq!(
        config["actionedNamespaces"],
        serde_json::json!(expected.actioned),
        "{case}: actionedNamespaces"
    );
    assert_eq!(config["enabledByDefault"], expected.enabled_by_default, "{case}: enabledByDefault");
    assert_eq!(config["leaderElect"], true, "{case}: two replicas need leader election");
    assert_eq!(config["leaseNamespace"], NAMESPACE, "{case}: the Lease is where the Role allows it");
    assert_eq!(config["leaseName"], PRODUCT, "{case}: the Lease the Role names");
    let port_of = |key: &str| -> u64 {
        let addr = config[key].as_str().unwrap_or_default();
        addr.rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or_else(|| panic!("{case}: {key} {addr}"))
    };
    assert_eq!(port_of("webhookAddr"), pod.port(case, &Value::from("webhook")), "{case}: webhook port");
    assert_eq!(port_of("healthAddr"), pod.port(case, &Value::from("metrics")), "{case}: health port");
    let tls_dir = text(pod.mount(case, "tls"), "/mountPath");
    for key in ["tlsCertFile", "tlsKeyFile"] {
        let file = config[key].as_str().unwrap_or_default();
        assert_eq!(
            std::path::Path::new(file).parent(),
            Some(std::path::Path::new(tls_dir)),
            "{case}: {key} is in the mounted Secret"
        );
    }
    let want_secret = match expected.certs {
        Certs::SelfManaged => TLS_SECRET,
        Certs::CertManager => "",
    };
    assert_eq!(config["certSecret"], want_secret, "{case}: certificate mode");
    if expected.certs == Certs::SelfManaged {
        // The names the self-managed mode writes are the ones installed and permitted.
        let webhook_config = find(case, objects, "ValidatingWebhookConfiguration", PRODUCT);
        assert_eq!(config["webhookConfiguration"], text(webhook_config, "/metadata/name"), "{case}");
        assert_eq!(config["webhookService"], PRODUCT, "{case}: the Service the certificate names");
        assert_eq!(config["namespace"], NAMESPACE, "{case}: the Secret's namespace is the Role's");
    }
}

/// The eviction webhook's timeout leaves room for the shipped `--eviction-hold` and the 5 s the
/// product keeps before the apiserver's deadline; the other webhooks answer at once.
fn check_hold_fits_the_timeout(case: &str, objects: &[Value], config: &Value) {
    let hold =
        config["evictionHold"].as_str().and_then(|h| h.strip_suffix('s')).and_then(|h| h.parse::<u64>().ok());
    let hold = hold.unwrap_or_else(|| panic!("{case}: evictionHold in whole seconds: {config}"));
    let webhook_config = find(case, objects, "ValidatingWebhookConfiguration", PRODUCT);
    for hook in items(webhook_config, "/webhooks") {
        let timeout = hook["timeoutSeconds"].as_u64();
        let expected = if text(hook, "/name").starts_with("eviction.") { hold + 5 } else { 5 };
        assert_eq!(
            timeout,
            Some(expected),
            "{case}: {} timeoutSeconds (evictionHold {hold}s)",
            text(hook, "/name")
        );
    }
}
