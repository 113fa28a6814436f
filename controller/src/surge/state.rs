//! Surge state as recorded on the scaled object (Deployment, HPA or ScaledObject), so a
//! restart, a new leader or this project taking over from the Go project loses nothing.
//!
//! The marker and baseline keys are the Go project's; the override history is ours, in one
//! JSON annotation written in the same conditional write as the replica change it explains.

use std::collections::BTreeMap;

use eviction_autoscaler_shared::keys;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// Annotation holding [`OverrideHistory`] as JSON (ours; the Go project has none).
pub const SURGE_OVERRIDES: &str = "eviction-autoscaler.azure.com/surge-overrides";

/// How often someone else may reset a surge before we stop re-surging (no write fight).
pub const MAX_RESURGES: u32 = 2;

/// Back-off before the first re-surge; doubled for each further override.
pub const RESURGE_BACKOFF_BASE_SECS: i64 = 10;

/// Someone else resetting the surged value, recorded so back-off survives a restart.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OverrideHistory {
    /// Overrides seen during this surge.
    pub count: u32,
    /// When the last override was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<Timestamp>,
    /// A re-surge is due at this time (the last override is not answered yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resurge_at: Option<Timestamp>,
    /// We stopped answering overrides for this surge.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gave_up: bool,
}

impl OverrideHistory {
    /// Back-off before answering override number `count` (1-based): 10 s, 20 s, 40 s…
    pub fn backoff_secs(count: u32) -> i64 {
        RESURGE_BACKOFF_BASE_SECS.saturating_mul(1_i64 << count.saturating_sub(1).min(20))
    }
}

/// The surge state found on an object's annotations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SurgeState {
    /// `evictionSurgeReplicas`: the value we surged to; `None` = no surge active.
    pub surge_value: Option<i32>,
    /// `original-min-replicas`: the baseline to go back to.
    pub baseline: Option<i32>,
    /// Our override history (absent on objects the Go project surged).
    pub overrides: OverrideHistory,
    /// An annotation that could not be parsed (reported, treated as absent).
    pub unreadable: Option<(String, String)>,
}

impl SurgeState {
    /// Reads the state from `annotations`. Unparseable values are reported, never fatal.
    pub fn read(annotations: Option<&BTreeMap<String, String>>) -> Self {
        let mut state = SurgeState::default();
        let Some(annotations) = annotations else { return state };
        let mut int = |key: &str| -> Option<i32> {
            let raw = annotations.get(key)?;
            match raw.trim().parse::<i32>() {
                Ok(v) if v >= 0 => Some(v),
                _ => {
                    state.unreadable.get_or_insert_with(|| (key.to_owned(), raw.clone()));
                    None
                }
            }
        };
        let surge_value = int(keys::SURGE_REPLICAS);
        let baseline = int(keys::ORIGINAL_MIN_REPLICAS);
        state.surge_value = surge_value;
        state.baseline = baseline;
        if let Some(raw) = annotations.get(SURGE_OVERRIDES) {
            match serde_json::from_str(raw) {
                Ok(history) => state.overrides = history,
                Err(_) => {
                    state.unreadable.get_or_insert_with(|| (SURGE_OVERRIDES.to_owned(), raw.clone()));
                }
            }
        }
        state
    }

    /// Whether a surge is active on this object.
    pub fn active(&self) -> bool {
        self.surge_value.is_some()
    }
}

/// Annotation edits: `Some` sets, `None` removes.
pub type AnnotationEdits = BTreeMap<String, Option<String>>;

/// Edits that start or step up a surge to `value`, recording `baseline` once.
pub fn surge_edits(
    state: &SurgeState,
    value: i32,
    baseline: i32,
    overrides: &OverrideHistory,
) -> AnnotationEdits {
    let mut edits = AnnotationEdits::new();
    edits.insert(keys::SURGE_REPLICAS.to_owned(), Some(value.to_string()));
    if state.baseline.is_none() {
        edits.insert(keys::ORIGINAL_MIN_REPLICAS.to_owned(), Some(baseline.to_string()));
    }
    if *overrides != state.overrides {
        edits.insert(SURGE_OVERRIDES.to_owned(), Some(history_json(overrides)));
    }
    edits
}

/// Edits that record an override history only.
pub fn history_edits(overrides: &OverrideHistory) -> AnnotationEdits {
    AnnotationEdits::from([(SURGE_OVERRIDES.to_owned(), Some(history_json(overrides)))])
}

/// Edits that end a surge: every key we (or the Go project) wrote goes.
pub fn clear_edits() -> AnnotationEdits {
    [keys::SURGE_REPLICAS, keys::ORIGINAL_MIN_REPLICAS, SURGE_OVERRIDES]
        .into_iter()
        .map(|k| (k.to_owned(), None))
        .collect()
}

fn history_json(history: &OverrideHistory) -> String {
    // Serialising plain integers and timestamps cannot fail; an empty object is still valid.
    serde_json::to_string(history).unwrap_or_else(|_| "{}".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn reads_go_written_state_and_reports_garbage() {
        let go = annotations(&[(keys::SURGE_REPLICAS, "4"), (keys::ORIGINAL_MIN_REPLICAS, "3")]);
        let state = SurgeState::read(Some(&go));
        assert!(state.active());
        assert_eq!((state.surge_value, state.baseline, state.unreadable), (Some(4), Some(3), None));

        let bad = annotations(&[(keys::SURGE_REPLICAS, "four"), (SURGE_OVERRIDES, "{")]);
        let state = SurgeState::read(Some(&bad));
        assert!(!state.active());
        assert_eq!(state.unreadable.map(|(k, _)| k).as_deref(), Some(keys::SURGE_REPLICAS));
        assert_eq!(SurgeState::read(None), SurgeState::default());
    }

    #[test]
    fn history_round_trips_through_its_annotation() {
        let history = OverrideHistory {
            count: 2,
            last: Some(Timestamp::from_second(100).unwrap()),
            resurge_at: Some(Timestamp::from_second(120).unwrap()),
            gave_up: false,
        };
        let edits = history_edits(&history);
        let raw = edits[SURGE_OVERRIDES].clone().unwrap();
        let read = SurgeState::read(Some(&annotations(&[(SURGE_OVERRIDES, &raw)])));
        assert_eq!(read.overrides, history);
    }

    #[test]
    fn baseline_is_written_once_and_clear_removes_every_key() {
        let fresh = SurgeState::default();
        let edits = surge_edits(&fresh, 4, 3, &OverrideHistory::default());
        assert_eq!(edits.get(keys::ORIGINAL_MIN_REPLICAS), Some(&Some("3".to_owned())));
        assert!(!edits.contains_key(SURGE_OVERRIDES), "no history written when there is none");
        let stepped = SurgeState { surge_value: Some(4), baseline: Some(3), ..Default::default() };
        let edits = surge_edits(&stepped, 5, 4, &OverrideHistory::default());
        assert!(!edits.contains_key(keys::ORIGINAL_MIN_REPLICAS), "baseline never rewritten");
        assert!(clear_edits().values().all(Option::is_none));
        assert_eq!(clear_edits().len(), 3);
    }

    #[test]
    fn backoff_doubles() {
        assert_eq!(
            [1, 2, 3].map(OverrideHistory::backoff_secs),
            [RESURGE_BACKOFF_BASE_SECS, 2 * RESURGE_BACKOFF_BASE_SECS, 4 * RESURGE_BACKOFF_BASE_SECS]
        );
    }
}
