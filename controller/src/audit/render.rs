//! The audit as people read it (aligned columns, no colours) and as scripts read it (JSON in
//! the shape `audit-report.schema.json` beside this file describes; a change to one is a
//! change to the other).

use std::fmt::Write as _;

use eviction_autoscaler_shared::pdb_audit::PdbClass;
use serde::Serialize;

use super::report::{NodeReport, PdbReport};
use super::{Audit, RecentEvent};

/// The JSON Schema of [`json`]'s output.
pub const SCHEMA: &str = include_str!("audit-report.schema.json");

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonAudit<'a> {
    settings: &'a str,
    drains_complete: bool,
    pdbs: Vec<JsonPdb<'a>>,
    nodes: Vec<JsonNode<'a>>,
    recent_events: &'a [RecentEvent],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonPdb<'a> {
    namespace: &'a str,
    name: &'a str,
    /// `blocks_all`, `unhealthy`, `overlapping`, `no_effect`, `ok`, or `error`.
    class: &'a str,
    disruptions_allowed: i32,
    pods: &'a [String],
    owner: &'a str,
    blocks_drain: bool,
    /// `unhealthy`: the pods not Ready; `overlapping`: the pods under several PDBs.
    #[serde(skip_serializing_if = "Option::is_none")]
    affected_pods: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    always_allow_frees_them: Option<bool>,
    /// For a PDB that blocks a drain: whether our surge opens it.
    #[serde(skip_serializing_if = "Option::is_none")]
    surge_opens: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    why_not: Option<WhyNot>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

#[derive(Serialize)]
struct WhyNot {
    reason: &'static str,
    message: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonNode<'a> {
    name: &'a str,
    completes: bool,
    stalled_pods: &'a [String],
    pdbs: &'a [String],
    opened_by_surge: &'a [String],
}

fn json_pdb(p: &PdbReport) -> JsonPdb<'_> {
    let class = p.class.as_ref().ok();
    let blocks_drain = class.is_some_and(PdbClass::blocks_drain);
    JsonPdb {
        namespace: &p.namespace,
        name: &p.name,
        class: class.map_or("error", PdbClass::name),
        disruptions_allowed: p.disruptions_allowed,
        pods: &p.pods,
        owner: &p.owner,
        blocks_drain,
        affected_pods: match class {
            Some(PdbClass::Unhealthy { not_ready, .. }) => Some(not_ready),
            Some(PdbClass::Overlapping { pods }) => Some(pods),
            _ => None,
        },
        always_allow_frees_them: match class {
            Some(PdbClass::Unhealthy { always_allow_frees_them, .. }) => Some(*always_allow_frees_them),
            _ => None,
        },
        surge_opens: blocks_drain.then_some(p.surge.is_ok()),
        why_not: p.surge.as_ref().err().map(|why| WhyNot { reason: why.reason(), message: why.to_string() }),
        error: p.class.as_ref().err().map(String::as_str),
    }
}

fn json_node(n: &NodeReport) -> JsonNode<'_> {
    JsonNode {
        name: &n.name,
        completes: n.completes(),
        stalled_pods: &n.stalled_pods,
        pdbs: &n.pdbs,
        opened_by_surge: &n.opened_by_surge,
    }
}

/// The audit as pretty JSON.
pub fn json(audit: &Audit) -> String {
    let doc = JsonAudit {
        settings: &audit.settings.source,
        drains_complete: audit.report.drains_complete(),
        pdbs: audit.report.pdbs.iter().map(json_pdb).collect(),
        nodes: audit.report.nodes.iter().map(json_node).collect(),
        recent_events: &audit.events,
    };
    serde_json::to_string_pretty(&doc).expect("the report serializes")
}

/// Rows as aligned columns, two spaces apart; the last column is not padded.
fn columns(rows: &[Vec<String>]) -> String {
    let count = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..count)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<width$}  ", width = widths[i]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// What the table says in a PDB's last column.
fn detail(p: &PdbReport) -> String {
    match &p.class {
        Err(e) => format!("cannot be judged: {e}"),
        Ok(PdbClass::Unhealthy { not_ready, always_allow_frees_them }) => {
            let hint = if *always_allow_frees_them {
                " (unhealthyPodEvictionPolicy: AlwaysAllow would let them go)"
            } else {
                ""
            };
            let surge = p.surge.as_ref().map_or_else(
                |why| format!("; our surge cannot open it: {why}"),
                |()| "; our surge opens it".into(),
            );
            format!("not Ready: {}{hint}{surge}", not_ready.join(", "))
        }
        Ok(class) if class.blocks_drain() => match &p.surge {
            Ok(()) => "our surge opens it".into(),
            Err(why) => format!("our surge cannot open it: {why}"),
        },
        Ok(PdbClass::NoEffect) if p.pods.is_empty() => "selects no running pod".into(),
        Ok(_) => String::new(),
    }
}

/// The audit for people.
pub fn table(audit: &Audit) -> String {
    let mut out = format!("Settings: {}\n\n", audit.settings.source);
    let mut rows = vec![["PDB", "CLASS", "ALLOWED", "PODS", "OWNER", "DETAIL"].map(String::from).to_vec()];
    rows.extend(audit.report.pdbs.iter().map(|p| {
        vec![
            format!("{}/{}", p.namespace, p.name),
            p.class.as_ref().map_or("error", PdbClass::name).to_owned(),
            p.disruptions_allowed.to_string(),
            p.pods.len().to_string(),
            if p.owner.is_empty() { "-".into() } else { p.owner.clone() },
            detail(p),
        ]
    }));
    if audit.report.pdbs.is_empty() {
        out.push_str("No PodDisruptionBudgets.\n");
    } else {
        out.push_str(&columns(&rows));
    }
    out.push('\n');
    for node in &audit.report.nodes {
        let _ = if node.pdbs.is_empty() {
            writeln!(out, "Node {}: a drain now would not stall.", node.name)
        } else {
            writeln!(
                out,
                "Node {}: a drain now would stall on {} pod(s) of {} PDB(s); eviction-autoscaler would open {} of them{}",
                node.name,
                node.stalled_pods.len(),
                node.pdbs.len(),
                node.opened_by_surge.len(),
                if node.completes() { "." } else { ":" }
            )
        };
        for pdb in node.pdbs.iter().filter(|p| !node.opened_by_surge.contains(p)) {
            let _ = writeln!(out, "  still stalls on {pdb}");
        }
    }
    out.push('\n');
    if audit.events.is_empty() {
        out.push_str("Recent drain-related Events: none.\n");
    } else {
        out.push_str("Recent drain-related Events (newest first):\n");
        let rows: Vec<Vec<String>> = audit
            .events
            .iter()
            .map(|e| {
                vec![
                    e.time.clone(),
                    format!("{}/{}", e.namespace, e.object),
                    e.reason.clone(),
                    e.message.clone(),
                ]
            })
            .collect();
        out.push_str(&columns(&rows));
    }
    let verdict = if audit.report.drains_complete() {
        "Every drain would complete (with eviction-autoscaler's help where it surges)."
    } else {
        "Some drains would stall: see the nodes above."
    };
    let _ = writeln!(out, "\n{verdict}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_the_last_one_is_not_padded() {
        let rows = vec![
            vec!["PDB".to_owned(), "CLASS".to_owned(), "DETAIL".to_owned()],
            vec!["apps/single".to_owned(), "blocks_all".to_owned(), "our surge opens it".to_owned()],
            vec!["a/b".to_owned(), "ok".to_owned(), String::new()],
        ];
        assert_eq!(
            columns(&rows),
            "PDB          CLASS       DETAIL\napps/single  blocks_all  our surge opens it\na/b          ok\n"
        );
    }
}
