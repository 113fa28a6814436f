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

mod compare;
mod scenario;

use e2e_support as support;
use http::Request;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use support::review_recorder::ReviewRecorder;
use support::{ClusterShape, cluster::ControlPlane, kubectl::Kubectl};

use compare::{differences, drop_pointer, normalise, normalise_text, replace_in_strings};
use scenario::{Step, Vars, fill, fill_value, listed, scenarios, step_name};

/// What every step may use: both servers and the webhook both call.
struct Shared {
    plane: ControlPlane,
    sim: kube_sim::Server,
    recorder: ReviewRecorder,
}

/// Where the scenarios run: kube-sim or the real control plane.
struct Target {
    /// Also its path prefix at the review recorder.
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
    async fn client_for(&mut self, user: Option<&str>, namespace: &str, shared: &Shared) -> kube::Client {
        let Some(user) = user else { return self.client.clone() };
        let key = format!("{namespace}/{user}");
        if let Some(client) = self.users.get(&key) {
            return client.clone();
        }
        let path = self.kubeconfig.with_file_name(format!("{namespace}-{user}.kubeconfig"));
        if self.name == "kube-sim" {
            shared.sim.ensure_service_account(namespace, user).await.expect("service account");
            shared.sim.write_service_account_kubeconfig(namespace, user, &path).expect("kubeconfig");
        } else {
            let _ = shared.plane.kubectl(&["create", "serviceaccount", user, "-n", namespace]);
            shared.plane.write_service_account_kubeconfig(namespace, user, &path);
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
    let shared = Shared { plane, sim, recorder: ReviewRecorder::start().await };
    let real_kubeconfig = dir.path().join("real.kubeconfig");
    std::fs::copy(shared.plane.kubeconfig_path(), &real_kubeconfig).expect("copy kubeconfig");
    let mut targets = Vec::new();
    for (name, kubeconfig) in
        [("kube-sim", shared.sim.kubeconfig_path().to_owned()), ("real", real_kubeconfig)]
    {
        let home = dir.path().join(format!("{name}-home"));
        targets.push(Target {
            name,
            client: client_of(&kubeconfig).await,
            kubectl: Kubectl::new(&kubeconfig, &home).first_on_path(shared.plane.bin_dir()),
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
            target.captured = BTreeMap::from([
                ("WEBHOOK".to_owned(), shared.recorder.url(target.name)),
                ("CA_BUNDLE".to_owned(), shared.recorder.ca_bundle()),
            ]);
        }
        for (index, step) in scenario.steps.iter().enumerate() {
            let id = format!("{ns}/{}", step_name(step, index));
            let started = Instant::now();
            let [sim_target, real_target] = &mut targets[..] else { unreachable!() };
            let (sim_answer, real_answer) =
                tokio::join!(run(sim_target, step, ns, &shared), run(real_target, step, ns, &shared));
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
    // With a selection, only the selected scenarios' listed differences are expected.
    let ran: BTreeSet<&str> = scenarios.iter().map(|(_, s)| s.scenario.as_str()).collect();
    let listed: BTreeSet<String> = listed()
        .into_iter()
        .filter(|id| id.split_once('/').is_some_and(|(scenario, _)| ran.contains(scenario)))
        .collect();
    let unlisted: Vec<&String> = found.difference(&listed).collect();
    let fixed: Vec<&String> = listed.difference(&found).collect();
    println!("{} scenarios, {steps} compared steps, {} listed differences", scenarios.len(), listed.len());
    // Every difference, listed or not, for whoever is fixing kube-sim (`--nocapture`).
    println!("{}", report.join("\n"));
    if !wrong.is_empty() {
        report.push(format!("scenarios that do not do what they say:\n{}", wrong.join("\n")));
    }
    // Every kind of request the product makes is among those compared (the whole suite only).
    let sent: BTreeSet<String> = scenarios
        .iter()
        .flat_map(|(_, s)| &s.steps)
        .filter_map(|step| step.request.as_deref()?.split_once(' '))
        .map(|(method, target)| {
            let (path, query) = target.split_once('?').unwrap_or((target, ""));
            support::audit::request_kind(support::audit::verb_of(method, path, query), path)
        })
        .collect();
    let unsent: Vec<String> = if std::env::var_os("DIFFERENTIAL_SCENARIOS").is_some() {
        Vec::new()
    } else {
        support::audit::product_request_kinds().into_iter().filter(|k| !sent.contains(k)).collect()
    };
    if !unsent.is_empty() {
        report.push(format!("kinds of product requests no scenario sends: {unsent:#?}"));
    }
    assert!(
        unlisted.is_empty() && fixed.is_empty() && wrong.is_empty() && unsent.is_empty(),
        "{} scenarios, {steps} steps; differences not listed in tests/kube-sim/README.md: {unlisted:?}; listed but no longer found: {fixed:?}\n{}",
        scenarios.len(),
        report.join("\n")
    );
}

/// Each scenario's namespace, with what the controller-manager puts in every namespace: the
/// `default` ServiceAccount (pods need it upstream) and the `kube-root-ca.crt` ConfigMap (a
/// list or watch of ConfigMaps shows it; under load it comes moments after the namespace).
async fn create_namespace(client: &kube::Client, name: &str) {
    let step = Step {
        body: Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})),
        ..Step::default()
    };
    let none = BTreeMap::new();
    let vars = Vars { namespace: name, captured: &none };
    let answer = send(client, "POST", "/api/v1/namespaces", &step, &vars).await;
    assert!(answer.code == 201 || answer.code == 409, "namespace {name}: {answer:?}");
    for path in [
        format!("/api/v1/namespaces/{name}/serviceaccounts/default"),
        format!("/api/v1/namespaces/{name}/configmaps/kube-root-ca.crt"),
    ] {
        let waited =
            wait_until(client, &path, &BTreeMap::from([("code".to_owned(), json!(200))]), &vars).await;
        assert!(waited.is_ok(), "{path}: {waited:?}");
    }
}

/// Runs one step on one target; `None` for steps that are not compared.
async fn run(
    target: &mut Target,
    step: &Step,
    namespace: &str,
    shared: &Shared,
) -> Result<Option<Answer>, String> {
    let captured = target.captured.clone();
    let vars = Vars { namespace, captured: &captured };
    let answer = if let Some(request) = &step.request {
        let (method, path) = request.split_once(' ').expect("`METHOD /path`");
        let client = target.client_for(step.user.as_deref(), namespace, shared).await;
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
    } else if let Some(prefix) = &step.reviews {
        // What the webhook received since the last look, as it received it.
        let prefix = format!("{}/{}", target.name, fill(prefix, &vars));
        let reviews: Vec<Value> = shared
            .recorder
            .take(&prefix)
            .into_iter()
            .map(|r| {
                let path = r.path_and_query.strip_prefix(&format!("/{}", target.name)).unwrap_or_default();
                json!({"path": path, "review": r.review})
            })
            .collect();
        let mut compared = json!({"reviews": reviews});
        normalise(&mut compared);
        Answer { code: 200, raw: compared.clone(), compared }
    } else if let Some(prefix) = &step.webhook_ready {
        let prefix = format!("{}/{}", target.name, fill(prefix, &vars));
        if !webhook_ready(&target.client, &shared.recorder, &prefix, &vars).await {
            return Err(format!("{}: no review reached {prefix}", target.name));
        }
        return Ok(None);
    } else {
        let wait = step.wait.as_deref().expect("a step is a request, kubectl, reviews, webhookReady or wait");
        let path = fill(wait.strip_prefix("GET ").expect("`GET /path`"), &vars);
        let client = target.client_for(step.user.as_deref(), namespace, shared).await;
        if let Err(last) = wait_until(&client, &path, &step.until, &vars).await {
            return Err(format!("{}: {path} never had {:?}; last answer: {last}", target.name, step.until));
        }
        return Ok(None);
    };
    let mut answer = answer;
    // Each server calls the review recorder at its own prefix.
    replace_in_strings(&mut answer.compared, &shared.recorder.url(target.name), "$WEBHOOK");
    step.ignore.iter().for_each(|p| drop_pointer(&mut answer.compared, p));
    for (name, pointer) in &step.capture {
        let value =
            answer.raw.pointer(pointer).ok_or_else(|| format!("{}: no {pointer} to capture", target.name))?;
        let text = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
        target.captured.insert(name.clone(), text);
    }
    Ok(Some(answer))
}

/// Dry-run creates a marker ConfigMap until the webhook at `prefix` has seen one (a new webhook
/// configuration takes effect when the apiserver's informer has it, as upstream's e2e tests
/// wait for it), then forgets every review of the target (30 s at most).
async fn webhook_ready(
    client: &kube::Client,
    recorder: &ReviewRecorder,
    prefix: &str,
    vars: &Vars<'_>,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    let step = Step {
        body: Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "webhook-marker"}})),
        ..Step::default()
    };
    let path = format!("/api/v1/namespaces/{}/configmaps?dryRun=All", vars.namespace);
    loop {
        send(client, "POST", &path, &step, vars).await;
        if !recorder.take(prefix).is_empty() {
            let target = prefix.split('/').next().unwrap_or_default();
            recorder.take(target);
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls `path` until every condition of `until` holds (30 s at most); the last answer when
/// they never did.
async fn wait_until(
    client: &kube::Client,
    path: &str,
    until: &BTreeMap<String, Value>,
    vars: &Vars<'_>,
) -> Result<(), Value> {
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
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(answer.compared);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
