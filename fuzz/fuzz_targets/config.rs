//! The `--config` file (YAML, as the AKS extension's `controllerConfig`) together with flags:
//! every combination resolves to a configuration or to an error naming the setting (or the
//! file) at fault; nothing panics.
#![no_main]

use arbitrary::Arbitrary;
use clap::Parser;
use eviction_autoscaler_shared::config::{Config, ConfigError, SettingsArgs, setting_names};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

const PATH: &str = "/etc/eviction-autoscaler/config/config.yaml";

#[derive(Parser, Debug)]
struct Flags {
    #[command(flatten)]
    settings: SettingsArgs,
}

/// A value that is usually meaningful for some setting, sometimes anything.
#[derive(Arbitrary, Debug)]
enum Text {
    Known(u8),
    Any(String),
}

const VALUES: [&str; 16] = [
    "true",
    "false",
    "maybe",
    "",
    "0",
    "25%",
    "-1",
    "1h",
    "90s",
    "0s",
    "kube-system",
    "kube-system,shop",
    "{kube-system,production}",
    "json",
    "AlwaysAllow",
    "example.com/drain",
];

impl Text {
    fn get(&self) -> &str {
        match self {
            Self::Known(i) => VALUES[usize::from(*i) % VALUES.len()],
            Self::Any(s) => s,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum FileValue {
    Scalar(Text),
    Number(i64),
    Bool(bool),
    List(Vec<Text>),
    Null,
}

#[derive(Arbitrary, Debug)]
enum File {
    /// Settings at known keys (and a few unknown ones), nested as the extension nests them.
    Settings { wrapped: bool, entries: Vec<(u8, FileValue)> },
    /// Any text at all.
    Raw(String),
}

fn key_of(choice: u8) -> String {
    let keys: Vec<&str> = setting_names().map(|(_, _, key, _)| key).collect();
    match keys.get(usize::from(choice)) {
        Some(key) => (*key).to_owned(),
        None => ["unknown", "pdb.unknown", "metrics.enabled", "pdb"][usize::from(choice) % 4].to_owned(),
    }
}

fn insert(map: &mut Map<String, Value>, dotted: &str, value: Value) {
    match dotted.split_once('.') {
        None => {
            map.insert(dotted.to_owned(), value);
        }
        Some((head, rest)) => {
            let inner = map.entry(head).or_insert_with(|| json!({}));
            if !inner.is_object() {
                *inner = json!({});
            }
            insert(inner.as_object_mut().expect("an object"), rest, value);
        }
    }
}

impl File {
    fn text(&self) -> String {
        match self {
            Self::Raw(text) => text.clone(),
            Self::Settings { wrapped, entries } => {
                let mut map = Map::new();
                for (choice, value) in entries {
                    let value = match value {
                        FileValue::Scalar(t) => json!(t.get()),
                        FileValue::Number(n) => json!(n),
                        FileValue::Bool(b) => json!(b),
                        FileValue::List(items) => json!(items.iter().map(Text::get).collect::<Vec<_>>()),
                        FileValue::Null => Value::Null,
                    };
                    insert(&mut map, &key_of(*choice), value);
                }
                let root = if *wrapped { json!({ "controllerConfig": map }) } else { Value::Object(map) };
                // JSON is YAML; the pretty form gives the YAML parser nested block-free flows.
                serde_json::to_string_pretty(&root).expect("JSON")
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    file: Option<File>,
    flags: Vec<(u8, Option<Text>)>,
}

/// The input either as real files are (`0`, then the YAML, a NUL, and flags one per line:
/// the committed seeds are the shipped ConfigMaps), or structured (anything else).
fn decode(data: &[u8]) -> Option<(Option<String>, Vec<String>)> {
    let flags: Vec<&str> = setting_names().map(|(flag, ..)| flag).collect();
    let (&mode, rest) = data.split_first()?;
    if mode == 0 {
        let text = String::from_utf8_lossy(rest);
        let (yaml, lines) = text.split_once('\0').unwrap_or((&text, ""));
        let argv = lines.lines().map(str::to_owned).collect();
        return Some(((!yaml.is_empty()).then(|| yaml.to_owned()), argv));
    }
    let input = Input::arbitrary_take_rest(arbitrary::Unstructured::new(rest)).ok()?;
    let argv = input
        .flags
        .iter()
        .map(|(choice, value)| {
            let flag = flags[usize::from(*choice) % flags.len()];
            match value {
                Some(value) => format!("--{flag}={}", value.get()),
                None => format!("--{flag}"),
            }
        })
        .collect();
    Some((input.file.as_ref().map(File::text), argv))
}

fuzz_target!(|data: &[u8]| {
    let Some((text, flags)) = decode(data) else { return };
    let names: Vec<&str> = setting_names().map(|(flag, ..)| flag).collect();
    let argv = std::iter::once("eviction-autoscaler".to_owned()).chain(flags);
    let Ok(parsed) = Flags::try_parse_from(argv) else { return };
    match Config::resolve(&parsed.settings, text.as_deref().map(|text| (PATH, text))) {
        Ok(config) => {
            // What `eviction-autoscaler config` prints.
            serde_json::to_string(&config).expect("a resolved configuration serialises");
            // Every duration can be added to a clock reading (timers, deadlines) without overflow.
            for d in [
                config.cooldown,
                config.signal_window,
                config.max_hold,
                config.tls_reload_interval,
                config.cert_validity,
            ] {
                assert!(std::time::Instant::now().checked_add(d.saturating_mul(2)).is_some(), "{d:?}");
            }
        }
        Err(error @ ConfigError::Invalid { setting, .. }) => {
            assert!(names.contains(&setting), "{error}");
            assert!(error.to_string().contains(setting), "{error}");
        }
        Err(error @ ConfigError::File { .. }) => assert!(error.to_string().contains(PATH), "{error}"),
    }
});
