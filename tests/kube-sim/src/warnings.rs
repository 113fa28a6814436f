//! `Warning` response headers (`299 - "unknown field \"bogus\""`), collected while a request is
//! served, as the apiserver's warning recorder does (`endpoints/filters/warning.go`): the write
//! pipeline calls [`add`] wherever it is; the HTTP layer serves the request inside [`collect`]
//! and writes the headers. Outside [`collect`] (kube-sim's own writes) a warning goes nowhere.
//!
//! As upstream: identical texts are written once, texts with control characters are dropped,
//! and past 4096 characters in all every warning is cut to 256 characters (from then on, later
//! ones only while the total allows).

use std::cell::RefCell;

/// Upstream's `truncateAtTotalRunes`.
const TRUNCATE_AT_TOTAL: usize = 4 * 1024;
/// Upstream's `truncateItemRunes`.
const TRUNCATE_ITEM: usize = 256;

tokio::task_local! {
    static RECORDER: RefCell<Recorder>;
}

/// Runs `work` and returns what it answered with the `Warning` header values it recorded.
pub async fn collect<F: std::future::Future>(work: F) -> (F::Output, Vec<String>) {
    RECORDER
        .scope(RefCell::new(Recorder::default()), async {
            let output = work.await;
            let headers = RECORDER.with(|r| r.take().headers);
            (output, headers)
        })
        .await
}

/// Records a warning for the request being served (nothing outside [`collect`]).
pub fn add(text: &str) {
    let _ = RECORDER.try_with(|r| r.borrow_mut().add(text));
}

/// The warnings of one request and the header values they make.
#[derive(Debug, Default)]
pub struct Recorder {
    ordered: Vec<String>,
    /// `Warning` header values, in order.
    pub headers: Vec<String>,
    written: usize,
    truncating: bool,
}

impl Recorder {
    /// Upstream's `recorder.AddWarning` with agent `-`.
    pub fn add(&mut self, text: &str) {
        if text.is_empty() || (self.written >= TRUNCATE_AT_TOTAL && self.truncating) {
            return;
        }
        if self.ordered.iter().any(|t| t == text) {
            return;
        }
        self.ordered.push(text.to_string());
        let (text, len) = if self.truncating { truncate(text) } else { (text, text.chars().count()) };
        let Some(value) = header(text) else { return };
        if self.written + len <= TRUNCATE_AT_TOTAL || self.truncating {
            self.written += len;
            self.headers.push(value);
            return;
        }
        self.truncating = true;
        self.written = 0;
        self.headers.clear();
        for text in &self.ordered {
            let (text, len) = truncate(text);
            if let Some(value) = header(text) {
                self.written += len;
                self.headers.push(value);
            }
        }
    }
}

/// The first [`TRUNCATE_ITEM`] characters and their count.
fn truncate(text: &str) -> (&str, usize) {
    match text.char_indices().nth(TRUNCATE_ITEM) {
        Some((end, _)) => (&text[..end], TRUNCATE_ITEM),
        None => (text, text.chars().count()),
    }
}

/// `net.NewWarningHeader(299, "-", text)`: `"` and `\` escaped; `None` for control characters.
fn header(text: &str) -> Option<String> {
    if text.chars().any(char::is_control) {
        return None;
    }
    let mut out = String::from("299 - \"");
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_quoted_deduplicated_and_truncated() {
        let mut r = Recorder::default();
        r.add("unknown field \"bogus\"");
        r.add("unknown field \"bogus\"");
        r.add("bad\ttext");
        r.add("");
        assert_eq!(r.headers, vec![r#"299 - "unknown field \"bogus\"""#.to_string()]);
        // Past 4096 characters every warning is cut to 256.
        let mut r = Recorder::default();
        for i in 0..20 {
            r.add(&format!("{i:03}{}", "x".repeat(297)));
        }
        assert_eq!(r.headers.len(), 16, "16 × 256 = 4096 fit once truncating");
        assert!(r.headers.iter().all(|h| h.len() == "299 - \"\"".len() + 256));
    }

    #[tokio::test]
    async fn collect_sees_what_the_work_adds() {
        add("outside");
        let (answer, headers) = collect(async {
            add("one");
            tokio::task::yield_now().await;
            add("two");
            7
        })
        .await;
        assert_eq!(answer, 7);
        assert_eq!(headers, vec!["299 - \"one\"", "299 - \"two\""]);
    }
}
