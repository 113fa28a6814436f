//! kube-sim measured against the real apiserver (issue 21): the scenarios of
//! `tests/differential/*.yaml` run against both, step by step, and every answer is normalised
//! (identities, versions, times, generated name suffixes) and compared: status code, the
//! headers a client acts on, and the body field by field; kubectl's exit code and output line by
//! line. A difference is named `scenario/step` and must be listed in tests/kube-sim/README.md
//! ("Differences measured against the real apiserver"): a new one fails, a fixed one must go.
//! The scenario format is described in `tests/differential/README.md`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use e2e_support as support;
use http::Request;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::Deserialize;
use serde_json::{Value, json};
use support::{ClusterShape, cluster::ControlPlane, kubectl::Kubectl};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    scenario: String,
    /// What it shows (documentation only).
    #[serde(default)]
    #[allow(dead_code)]
    about: String,
    steps: Vec<Step>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Step {
    /// Unique in its scenario; its position (1, 2, ...) when unset.
    #[serde(default)]
    name: Option<String>,
    /// `METHOD /path?query`: one request, compared.
    #[serde(default)]
    request: Option<String>,
    /// kubectl's arguments: its exit code, stdout and stderr compared.
    #[serde(default)]
    kubectl: Option<Vec<String>>,
    /// `GET /path`, repeated on each server until `until` holds (not compared).
    #[serde(default)]
    wait: Option<String>,
    #[serde(default)]
    body: Option<Value>,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    accept: Option<String>,
    /// Sent as this ServiceAccount of the scenario's namespace (created on first use).
    #[serde(default, rename = "as")]
    user: Option<String>,
    /// kubectl's standard input.
    #[serde(default)]
    stdin: Option<String>,
    /// The real apiserver's status code (or kubectl's exit code): a check of the scenario itself.
    #[serde(default)]
    expect: Option<u16>,
    /// For `wait`: JSON pointers and the values they must have; `code` is the status code and a
    /// pointer ending in `/#` an array's length.
    #[serde(default)]
    until: BTreeMap<String, Value>,
    /// JSON pointers dropped from both answers before comparing (what controllers race to write).
    #[serde(default)]
    ignore: Vec<String>,
    /// kubectl output whose lines come in any order (parallel evictions).
    #[serde(default)]
    unordered: bool,
    /// Values of the answer kept per server for later steps (`$NAME`): JSON pointers into the raw
    /// body, e.g. a uid for an ownerReference or a resourceVersion for an update.
    #[serde(default)]
    capture: BTreeMap<String, String>,
}

/// Where the scenarios run: kube-sim or the real control plane.
struct Target {
    name: &'static str,
    kubeconfig: PathBuf,
    client: kube::Client,
    users: HashMap<String, kube::Client>,
    kubectl: Kubectl,
    /// Values captured by earlier steps (`$NAME` → value).
    captured: BTreeMap<String, String>,
}

/// What an answer is made of, normalised.
#[derive(Debug)]
struct Answer {
    code: u16,
    compared: Value,
    /// The body before normalising (for `capture`).
    raw: Value,
}

fn scenarios() -> Vec<(String, Scenario)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/differential")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("scenario file");
        let list: Vec<Scenario> =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let stem = file.file_stem().expect("a name").to_string_lossy().into_owned();
        all.extend(list.into_iter().map(|s| (stem.clone(), s)));
    }
    let mut names = BTreeSet::new();
    for (file, s) in &all {
        assert!(names.insert(s.scenario.clone()), "{file}: scenario {} twice", s.scenario);
        assert!(
            s.scenario.len() <= 63
                && s.scenario.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{file}: scenario {} is not a namespace name",
            s.scenario
        );
    }
    all
}

fn step_name(step: &Step, index: usize) -> String {
    step.name.clone().unwrap_or_else(|| (index + 1).to_string())
}

/// `$NS` → the scenario's namespace, `$NAME` → a captured value, everywhere in a string.
fn fill(text: &str, vars: &Vars) -> String {
    let mut text = text.replace("$NS", vars.namespace);
    for (name, value) in vars.captured {
        text = text.replace(&format!("${name}"), value);
    }
    text
}

fn fill_value(value: &Value, vars: &Vars) -> Value {
    serde_json::from_str(&fill(&value.to_string(), vars)).expect("still JSON")
}

/// What `$…` stands for in a step.
struct Vars<'a> {
    namespace: &'a str,
    captured: &'a BTreeMap<String, String>,
}

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && s.ends_with('Z')
        && b[..4].iter().all(u8::is_ascii_digit)
}

/// Name suffixes the apiserver generates (`generateName`): five of these characters.
fn is_generated_suffix(s: &str) -> bool {
    s.len() == 5 && s.bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
}

/// A `pod-template-hash`: 6 to 10 characters of the same alphabet, a digit among them.
/// kube-sim hashes the template its own way (upstream hashes a dump of the Go struct), so the
/// value is compared only as a hash, everywhere it appears (labels, ReplicaSet and pod names).
fn is_template_hash(s: &str) -> bool {
    (6..=10).contains(&s.len())
        && s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
}

/// `web-7d9f8c6b5d-x2k4p` → `web-<hash>-*`.
fn normalise_name(name: &str) -> String {
    let (stem, generated) = match name.rsplit_once('-') {
        Some((stem, suffix)) if is_generated_suffix(suffix) => (stem, true),
        _ => (name, false),
    };
    let stem = match stem.rsplit_once('-') {
        Some((base, hash)) if is_template_hash(hash) => format!("{base}-<hash>"),
        _ if is_template_hash(stem) => "<hash>".to_owned(),
        _ => stem.to_owned(),
    };
    if generated { format!("{stem}-*") } else { stem }
}

/// Drops what differs between any two servers or runs: uids, resourceVersions, managedFields,
/// times, continue tokens; generated name suffixes become `*`.
fn normalise(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in ["uid", "resourceVersion", "managedFields", "selfLink", "continue"] {
                map.remove(key);
            }
            for key in ["name", "generateName", "pod-template-hash"] {
                if let Some(Value::String(name)) = map.get_mut(key) {
                    *name = normalise_name(name);
                }
            }
            for v in map.values_mut() {
                normalise(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalise),
        Value::String(s) if is_timestamp(s) => *s = "<time>".into(),
        // Each server has its own CA (kube-root-ca.crt).
        Value::String(s) if s.starts_with("-----BEGIN CERTIFICATE-----") => *s = "<certificate>".into(),
        // Quoted names in messages (`ReplicaSet "web-7d9f8c6b5d" has successfully progressed.`).
        Value::String(s) if s.contains('"') => {
            *s = s.split('"').map(normalise_name).collect::<Vec<_>>().join("\"");
        }
        _ => {}
    }
}

/// kubectl output: ages become `<age>`, generated suffixes `*`, runs of spaces one space (column
/// widths follow the values).
fn normalise_text(text: &str, unordered: bool) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(|token| {
                    let age = token.len() > 1
                        && token.bytes().next().is_some_and(|b| b.is_ascii_digit())
                        && token.bytes().all(|b| b.is_ascii_digit() || b"smhdy".contains(&b))
                        && token.bytes().last().is_some_and(|b| b"smhdy".contains(&b));
                    if age {
                        "<age>".to_owned()
                    } else {
                        token.split('/').map(normalise_name).collect::<Vec<_>>().join("/")
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    if unordered {
        lines.sort();
    }
    lines
}

/// Removes what `pointer` names; a `*` segment stands for every element or field.
fn drop_pointer(value: &mut Value, pointer: &str) {
    let Some(rest) = pointer.strip_prefix('/') else { return };
    let (head, tail) = rest.split_once('/').map_or((rest, None), |(h, t)| (h, Some(t)));
    let head = head.replace("~1", "/").replace("~0", "~");
    match (value, tail) {
        (Value::Object(map), None) => {
            map.remove(&head);
        }
        (Value::Object(map), Some(tail)) if head == "*" => {
            map.values_mut().for_each(|v| drop_pointer(v, &format!("/{tail}")));
        }
        (Value::Object(map), Some(tail)) => {
            if let Some(v) = map.get_mut(&head) {
                drop_pointer(v, &format!("/{tail}"));
            }
        }
        (Value::Array(items), Some(tail)) if head == "*" => {
            items.iter_mut().for_each(|v| drop_pointer(v, &format!("/{tail}")));
        }
        (Value::Array(items), Some(tail)) => {
            if let Some(v) = head.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                drop_pointer(v, &format!("/{tail}"));
            }
        }
        _ => {}
    }
}

/// Paths where `a` and `b` differ (`/spec/replicas: 2 ≠ 3`).
fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                differences(
                    &format!("{path}/{k}"),
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}/{i}"), p, q, out);
            }
        }
        _ if a != b => out.push(format!("{path}: kube-sim {a} ≠ real {b}")),
        _ => {}
    }
}

async fn client_of(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    // Every answer is compared as it came: no retry of a 429 (an eviction refused).
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

/// One raw request; the body as JSON, JSON lines (a watch) as an array, protobuf decoded, or text.
async fn send(client: &kube::Client, method: &str, path: &str, step: &Step, vars: &Vars<'_>) -> Answer {
    let body = match &step.body {
        // YAML (server-side apply) is sent as written.
        Some(Value::String(text)) => fill(text, vars).into_bytes(),
        Some(body) => fill_value(body, vars).to_string().into_bytes(),
        None => Vec::new(),
    };
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::CONTENT_TYPE, step.content_type.as_deref().unwrap_or("application/json"))
        .header(http::header::ACCEPT, step.accept.as_deref().unwrap_or("application/json"))
        .body(body)
        .expect("request");
    // A request that hangs is an answer too (and must not hold the suite).
    let sent =
        tokio::time::timeout(Duration::from_secs(20), client.send(request.map(kube::client::Body::from)))
            .await;
    let Ok(Ok(response)) = sent else {
        let error = sent.map_or_else(|_| "no answer within 20 s".to_owned(), |r| format!("{:?}", r.err()));
        return Answer { code: 0, compared: json!({"error": error}), raw: Value::Null };
    };
    let code = response.status().as_u16();
    let header = |name: http::HeaderName| {
        response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    };
    let (content_type, retry_after, warning) = (
        header(http::header::CONTENT_TYPE),
        header(http::header::RETRY_AFTER),
        header(http::header::WARNING),
    );
    let bytes = http_body_util::BodyExt::collect(response.into_body()).await.expect("body").to_bytes();
    let mut body = if bytes.starts_with(b"k8s\0") {
        kube_sim::protobuf::decode(&bytes)
            .map_or_else(|e| json!({"undecodable protobuf": e}), |v| json!({"protobuf": v}))
    } else if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
        v
    } else if let Ok(lines) =
        String::from_utf8_lossy(&bytes).lines().map(serde_json::from_str).collect::<Result<Vec<Value>, _>>()
        && !lines.is_empty()
    {
        Value::Array(lines)
    } else {
        Value::String(String::from_utf8_lossy(&bytes).into_owned())
    };
    let raw = body.clone();
    normalise(&mut body);
    let media = content_type.map(|c| c.split(';').next().unwrap_or_default().trim().to_owned());
    Answer {
        code,
        compared: json!({"code": code, "contentType": media, "retryAfter": retry_after, "warning": warning, "body": body}),
        raw,
    }
}

impl Target {
    async fn client_for(
        &mut self,
        user: Option<&str>,
        namespace: &str,
        plane: &ControlPlane,
        sim: &kube_sim::Server,
    ) -> kube::Client {
        let Some(user) = user else { return self.client.clone() };
        let key = format!("{namespace}/{user}");
        if let Some(client) = self.users.get(&key) {
            return client.clone();
        }
        let path = self.kubeconfig.with_file_name(format!("{namespace}-{user}.kubeconfig"));
        if self.name == "kube-sim" {
            sim.ensure_service_account(namespace, user).await.expect("service account");
            sim.write_service_account_kubeconfig(namespace, user, &path).expect("kubeconfig");
        } else {
            let _ = plane.kubectl(&["create", "serviceaccount", user, "-n", namespace]);
            plane.write_service_account_kubeconfig(namespace, user, &path);
        }
        let client = client_of(&path).await;
        self.users.insert(key, client.clone());
        client
    }

    async fn kubectl(&self, args: &[String], stdin: Option<&str>) -> Answer {
        let mut cmd = tokio::process::Command::from(self.kubectl.command());
        cmd.args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl runs");
        let mut input = child.stdin.take().expect("stdin");
        let text = stdin.unwrap_or_default().to_owned();
        tokio::spawn(async move {
            let _ = tokio::io::AsyncWriteExt::write_all(&mut input, text.as_bytes()).await;
        });
        let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
            .await
            .expect("kubectl ends within 2 minutes")
            .expect("kubectl output");
        let code = out.status.code().unwrap_or(-1) as u16;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let raw = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        Answer {
            code,
            compared: json!({"exit": code, "stdout": stdout, "stderr": String::from_utf8_lossy(&out.stderr)}),
            raw,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_sim_answers_as_the_real_apiserver_or_the_difference_is_listed() {
    let scenarios = scenarios();
    let plane =
        tokio::task::spawn_blocking(|| ControlPlane::start(&ClusterShape { nodes: 1, pods_per_node: 110 }))
            .await
            .expect("the control plane starts");
    let dir = tempfile::tempdir().expect("temp dir");
    // Both behave as clusters: controllers, a node, the eviction subresource.
    let behaviour = kube_sim::controllers::ClusterBehaviour { nodes: 1, ..Default::default() };
    let options =
        kube_sim::ServerOptions::new(dir.path().join("kube-sim.kubeconfig")).with_behaviour(behaviour);
    let sim = kube_sim::Server::start(options).await.expect("kube-sim");
    let real_kubeconfig = dir.path().join("real.kubeconfig");
    std::fs::copy(plane.kubeconfig_path(), &real_kubeconfig).expect("copy kubeconfig");
    let mut targets = Vec::new();
    for (name, kubeconfig) in [("kube-sim", sim.kubeconfig_path().to_owned()), ("real", real_kubeconfig)] {
        let home = dir.path().join(format!("{name}-home"));
        targets.push(Target {
            name,
            client: client_of(&kubeconfig).await,
            kubectl: Kubectl::new(&kubeconfig, &home).first_on_path(plane.bin_dir()),
            kubeconfig,
            users: HashMap::new(),
            captured: BTreeMap::new(),
        });
    }
    let mut found = BTreeSet::new();
    let mut report = Vec::new();
    let mut steps = 0;
    // Scenarios whose `expect` the real apiserver contradicts: the scenario is wrong.
    let mut wrong = Vec::new();
    for (file, scenario) in &scenarios {
        let ns = &scenario.scenario;
        for target in &mut targets {
            create_namespace(&target.client, ns).await;
            target.captured.clear();
        }
        for (index, step) in scenario.steps.iter().enumerate() {
            let id = format!("{ns}/{}", step_name(step, index));
            let started = Instant::now();
            let [sim_target, real_target] = &mut targets[..] else { unreachable!() };
            let (sim_answer, real_answer) = tokio::join!(
                run(sim_target, step, ns, &plane, &sim),
                run(real_target, step, ns, &plane, &sim)
            );
            let (sim_answer, real_answer) = match (sim_answer, real_answer) {
                (Ok(Some(sim)), Ok(Some(real))) => (sim, real),
                (Ok(None), Ok(None)) => continue,
                (_, Err(e)) => {
                    // The real cluster never got there: the scenario is wrong.
                    wrong.push(format!("{file}: {id}: {e}"));
                    break;
                }
                (Err(e), _) => {
                    // kube-sim never got where the real cluster did: a difference; the scenario
                    // cannot go on.
                    report.push(format!("{id}:\n  {e}"));
                    found.insert(id.clone());
                    break;
                }
                _ => unreachable!("both run the same step"),
            };
            steps += 1;
            if let Some(expected) = step.expect.filter(|e| *e != real_answer.code) {
                wrong.push(format!(
                    "{file}: {id}: expected {expected}, the real apiserver answered {}",
                    real_answer.compared
                ));
            }
            let mut diffs = Vec::new();
            differences("", &sim_answer.compared, &real_answer.compared, &mut diffs);
            if !diffs.is_empty() {
                report.push(format!("{id}:\n  {}", diffs.join("\n  ")));
                found.insert(id.clone());
            }
            assert!(started.elapsed() < Duration::from_secs(150), "{id} took {:?}", started.elapsed());
        }
    }
    let listed = listed();
    let unlisted: Vec<&String> = found.difference(&listed).collect();
    let fixed: Vec<&String> = listed.difference(&found).collect();
    println!("{} scenarios, {steps} compared steps, {} listed differences", scenarios.len(), listed.len());
    if !wrong.is_empty() {
        report.push(format!("scenarios that do not do what they say:\n{}", wrong.join("\n")));
    }
    assert!(
        unlisted.is_empty() && fixed.is_empty() && wrong.is_empty(),
        "{} scenarios, {steps} steps; differences not listed in tests/kube-sim/README.md: {unlisted:?}; listed but no longer found: {fixed:?}\n{}",
        scenarios.len(),
        report.join("\n")
    );
}

/// Each scenario's namespace, with its `default` ServiceAccount (pods need it upstream).
async fn create_namespace(client: &kube::Client, name: &str) {
    let step = Step {
        body: Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})),
        ..Step::default()
    };
    let none = BTreeMap::new();
    let vars = Vars { namespace: name, captured: &none };
    let answer = send(client, "POST", "/api/v1/namespaces", &step, &vars).await;
    assert!(answer.code == 201 || answer.code == 409, "namespace {name}: {answer:?}");
    let path = format!("/api/v1/namespaces/{name}/serviceaccounts/default");
    assert!(
        wait_until(client, &path, &BTreeMap::from([("code".to_owned(), json!(200))]), &vars).await,
        "{path}"
    );
}

/// Runs one step on one target; `None` for steps that are not compared.
async fn run(
    target: &mut Target,
    step: &Step,
    namespace: &str,
    plane: &ControlPlane,
    sim: &kube_sim::Server,
) -> Result<Option<Answer>, String> {
    let captured = target.captured.clone();
    let vars = Vars { namespace, captured: &captured };
    let answer = if let Some(request) = &step.request {
        let (method, path) = request.split_once(' ').expect("`METHOD /path`");
        let client = target.client_for(step.user.as_deref(), namespace, plane, sim).await;
        send(&client, method, &fill(path, &vars), step, &vars).await
    } else if let Some(args) = &step.kubectl {
        let args: Vec<String> = args.iter().map(|a| fill(a, &vars)).collect();
        let stdin = step.stdin.as_deref().map(|s| fill(s, &vars));
        let mut answer = target.kubectl(&args, stdin.as_deref()).await;
        if answer.raw.is_null() {
            for stream in ["stdout", "stderr"] {
                let text = answer.compared[stream].as_str().unwrap_or_default().to_owned();
                answer.compared[stream] = json!(normalise_text(&text, step.unordered));
            }
        } else {
            // `-o json`: compared as JSON.
            let mut body = answer.raw.clone();
            normalise(&mut body);
            answer.compared["stdout"] = body;
        }
        answer
    } else {
        let wait = step.wait.as_deref().expect("a step is a request, kubectl or wait");
        let path = fill(wait.strip_prefix("GET ").expect("`GET /path`"), &vars);
        let client = target.client_for(step.user.as_deref(), namespace, plane, sim).await;
        if !wait_until(&client, &path, &step.until, &vars).await {
            return Err(format!("{}: {path} never had {:?}", target.name, step.until));
        }
        return Ok(None);
    };
    let mut answer = answer;
    step.ignore.iter().for_each(|p| drop_pointer(&mut answer.compared, p));
    for (name, pointer) in &step.capture {
        let value =
            answer.raw.pointer(pointer).ok_or_else(|| format!("{}: no {pointer} to capture", target.name))?;
        let text = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
        target.captured.insert(name.clone(), text);
    }
    Ok(Some(answer))
}

/// Polls `path` until every condition of `until` holds (30 s at most).
async fn wait_until(
    client: &kube::Client,
    path: &str,
    until: &BTreeMap<String, Value>,
    vars: &Vars<'_>,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    let step = Step::default();
    loop {
        let answer = send(client, "GET", path, &step, vars).await;
        let body = &answer.compared["body"];
        let holds = until.iter().all(|(pointer, want)| match pointer.as_str() {
            "code" => json!(answer.code) == *want,
            p if p.ends_with("/#") => {
                body.pointer(&p[..p.len() - 2]).and_then(Value::as_array).map_or(0, Vec::len) as u64
                    == want.as_u64().unwrap_or(u64::MAX)
            }
            // Absent and null are the same to a client.
            p => body.pointer(p).unwrap_or(&Value::Null) == want,
        });
        if holds {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The differences listed in kube-sim's README: `diff:scenario/step` tokens.
fn listed() -> BTreeSet<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kube-sim/README.md"))
        .expect("README");
    readme.split('`').filter_map(|t| t.strip_prefix("diff:")).map(str::to_owned).collect()
}
