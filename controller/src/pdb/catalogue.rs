//! Events and metric label values of the default-PDB planner. Every string a user can see in
//! `kubectl get events` or a dashboard is spelled once, here.

use eviction_autoscaler_shared::scope::InvalidAnnotation;

/// Why no default PDB is created (or kept) for a Deployment. `as_str` is the `reason` label
/// of the skip metric and the prefix of the `PDBSkipped` event note.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkipReason {
    /// The namespace is out of scope (annotation, `actionedNamespaces`, `enabledByDefault`).
    NamespaceDisabled,
    /// The namespace is being deleted: a create would be refused.
    NamespaceTerminating,
    /// `pdb.create` is off in the configuration and the Deployment has no default PDB yet.
    PdbCreateDisabled,
    /// The Deployment carries `eviction-autoscaler.azure.com/pdb-create: "false"`.
    OptedOut,
    /// The Deployment is being deleted.
    DeploymentDeleting,
    /// A PDB that is not ours covers the Deployment's pods.
    CoveredByUserPdb,
    /// Another Deployment's default PDB covers these pods (overlapping selectors).
    CoveredByDefaultPdb,
    /// Our PDB's selector would also cover another Deployment's pods that another PDB covers:
    /// those pods would have two PDBs.
    WouldOverlapOtherPdb,
    /// The Deployment has no (or an empty) selector: a PDB must never have an empty one.
    NoSelector,
    /// The Deployment's selector cannot be evaluated.
    InvalidSelector,
    /// Replicas (or the autoscaler minimum) resolve to 0: such a PDB protects nothing.
    ZeroMinAvailable,
    /// A surge is active but its recorded baseline is missing or unreadable.
    SurgeBaselineUnknown,
    /// A PDB that is not ours and does not cover the Deployment already has our name.
    NameTaken,
    /// The Deployment has no name (cannot happen for a stored object).
    MissingName,
    /// Admission of a dry run: no side effect.
    DryRun,
}

impl SkipReason {
    /// The metric label / event reason detail.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NamespaceDisabled => "NamespaceDisabled",
            Self::NamespaceTerminating => "NamespaceTerminating",
            Self::PdbCreateDisabled => "PdbCreateDisabled",
            Self::OptedOut => "OptedOut",
            Self::DeploymentDeleting => "DeploymentDeleting",
            Self::CoveredByUserPdb => "CoveredByUserPDB",
            Self::CoveredByDefaultPdb => "CoveredByDefaultPDB",
            Self::WouldOverlapOtherPdb => "WouldOverlapOtherPDB",
            Self::NoSelector => "NoSelector",
            Self::InvalidSelector => "InvalidSelector",
            Self::ZeroMinAvailable => "ZeroMinAvailable",
            Self::SurgeBaselineUnknown => "SurgeBaselineUnknown",
            Self::NameTaken => "NameTaken",
            Self::MissingName => "MissingName",
            Self::DryRun => "DryRun",
        }
    }

    /// Is this skip worth an Event on the Deployment? Not for skips that apply to every
    /// Deployment of a namespace or cluster by configuration (thousands of identical Events
    /// at start) or to objects on their way out; the metric still counts them.
    pub fn deserves_event(self) -> bool {
        !matches!(
            self,
            Self::NamespaceDisabled
                | Self::NamespaceTerminating
                | Self::PdbCreateDisabled
                | Self::DeploymentDeleting
                | Self::DryRun
        )
    }

    /// Does this skip need the user's attention (a Warning event) rather than being a
    /// normal, chosen outcome?
    pub fn is_warning(self) -> bool {
        matches!(
            self,
            Self::WouldOverlapOtherPdb
                | Self::NoSelector
                | Self::InvalidSelector
                | Self::SurgeBaselineUnknown
                | Self::NameTaken
        )
    }
}

/// Why an owned PDB is deleted (not retired: see [`crate::pdb::Action::Retire`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeleteReason {
    /// Its Deployment was deleted (or is being deleted).
    DeploymentDeleted,
    /// The namespace left scope.
    NamespaceDisabled,
    /// The Deployment opted out with `pdb-create: "false"`.
    OptedOut,
    /// The Deployment's selector became empty.
    NoSelector,
    /// Replicas (or the autoscaler minimum) fell to 0.
    ZeroMinAvailable,
    /// A second owned PDB for the same Deployment (only one may exist).
    Duplicate,
}

impl DeleteReason {
    /// The metric label / event note prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DeploymentDeleted => "DeploymentDeleted",
            Self::NamespaceDisabled => "NamespaceDisabled",
            Self::OptedOut => "OptedOut",
            Self::NoSelector => "NoSelector",
            Self::ZeroMinAvailable => "ZeroMinAvailable",
            Self::Duplicate => "Duplicate",
        }
    }
}

/// Event reasons (the `reason` field of the Kubernetes Event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventReason {
    PdbCreated,
    PdbUpdated,
    PdbAdopted,
    PdbDeleted,
    PdbRetired,
    PdbHandedOver,
    PdbSkipped,
    /// An annotation value that is not a boolean, ignored (treated as unset).
    InvalidAnnotation,
}

impl EventReason {
    /// The Event `reason` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PdbCreated => "PDBCreated",
            Self::PdbUpdated => "PDBUpdated",
            Self::PdbAdopted => "PDBAdopted",
            Self::PdbDeleted => "PDBDeleted",
            Self::PdbRetired => "PDBRetired",
            Self::PdbHandedOver => "PDBHandedOver",
            Self::PdbSkipped => "PDBSkipped",
            Self::InvalidAnnotation => "InvalidAnnotation",
        }
    }
}

/// Event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    /// The Event `type` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// The object an Event is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSubject {
    /// `apps/v1`, `v1`, `policy/v1`.
    pub api_version: &'static str,
    /// `Deployment`, `Namespace`, `PodDisruptionBudget`.
    pub kind: &'static str,
    /// `None` for cluster-scoped objects (Namespace).
    pub namespace: Option<String>,
    pub name: String,
    pub uid: Option<String>,
}

/// An Event to emit. Events tied to a write are emitted only once the write succeeded
/// ([`crate::pdb::Action::event`]); the others come with the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    pub subject: EventSubject,
    pub event_type: EventType,
    pub reason: EventReason,
    /// Human-readable note.
    pub note: String,
}

impl PlannedEvent {
    /// A Warning about an ignored annotation value on `subject`.
    pub fn invalid_annotation(subject: EventSubject, invalid: &InvalidAnnotation) -> Self {
        Self {
            subject,
            event_type: EventType::Warning,
            reason: EventReason::InvalidAnnotation,
            note: invalid.to_string(),
        }
    }
}

/// Metric families of the planner's outcomes. Each counter is labelled by `reason` where one
/// applies ([`SkipReason::as_str`], [`DeleteReason::as_str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PdbOutcome {
    Created,
    Updated,
    Adopted,
    Deleted,
    Retired,
    HandedOver,
    Skipped,
}

impl PdbOutcome {
    /// The `outcome` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Updated => "updated",
            Self::Adopted => "adopted",
            Self::Deleted => "deleted",
            Self::Retired => "retired",
            Self::HandedOver => "handed_over",
            Self::Skipped => "skipped",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_reasons_are_the_documented_strings() {
        let cases = [
            (EventReason::PdbCreated, "PDBCreated"),
            (EventReason::PdbUpdated, "PDBUpdated"),
            (EventReason::PdbAdopted, "PDBAdopted"),
            (EventReason::PdbDeleted, "PDBDeleted"),
            (EventReason::PdbRetired, "PDBRetired"),
            (EventReason::PdbHandedOver, "PDBHandedOver"),
            (EventReason::PdbSkipped, "PDBSkipped"),
            (EventReason::InvalidAnnotation, "InvalidAnnotation"),
        ];
        for (reason, want) in cases {
            assert_eq!(reason.as_str(), want);
        }
    }

    #[test]
    fn label_values_are_distinct_and_prometheus_safe() {
        let skips = [
            SkipReason::NamespaceDisabled,
            SkipReason::NamespaceTerminating,
            SkipReason::PdbCreateDisabled,
            SkipReason::OptedOut,
            SkipReason::DeploymentDeleting,
            SkipReason::CoveredByUserPdb,
            SkipReason::CoveredByDefaultPdb,
            SkipReason::WouldOverlapOtherPdb,
            SkipReason::NoSelector,
            SkipReason::InvalidSelector,
            SkipReason::ZeroMinAvailable,
            SkipReason::SurgeBaselineUnknown,
            SkipReason::NameTaken,
            SkipReason::MissingName,
            SkipReason::DryRun,
        ];
        let deletes = [
            DeleteReason::DeploymentDeleted,
            DeleteReason::NamespaceDisabled,
            DeleteReason::OptedOut,
            DeleteReason::NoSelector,
            DeleteReason::ZeroMinAvailable,
            DeleteReason::Duplicate,
        ];
        let outcomes = [
            PdbOutcome::Created,
            PdbOutcome::Updated,
            PdbOutcome::Adopted,
            PdbOutcome::Deleted,
            PdbOutcome::Retired,
            PdbOutcome::HandedOver,
            PdbOutcome::Skipped,
        ];
        for labels in [
            skips.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            deletes.iter().map(|r| r.as_str()).collect(),
            outcomes.iter().map(|r| r.as_str()).collect(),
        ] {
            let unique: std::collections::BTreeSet<_> = labels.iter().collect();
            assert_eq!(unique.len(), labels.len(), "{labels:?}");
            assert!(
                labels
                    .iter()
                    .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            );
        }
    }
}
