//! Reading the product's /metrics text.

/// The sum of every sample of metric `name` (any labels) whose label text contains each of
/// `labels` (e.g. `path="/validate-eviction"`); 0 when absent.
pub fn metric_sum(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, label_text) = series.split_once('{').unwrap_or((series, ""));
            (metric == name && labels.iter().all(|want| label_text.contains(want))).then_some(value)
        })
        .filter_map(|v| v.parse::<f64>().ok())
        .sum()
}

/// The product's metric names a PromQL expression uses (`eviction_autoscaler_*`).
pub fn metric_names(expr: &str) -> Vec<&str> {
    expr.match_indices("eviction_autoscaler_")
        .map(|(at, _)| {
            let tail = &expr[at..];
            &tail[..tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len())]
        })
        .collect()
}
