//! Go's `encoding/json` syntax-error wording, so kube-sim can answer malformed request bodies
//! the way the real apiserver does (`invalid character 'n' looking for beginning of object key
//! string`) instead of with serde_json's wording.
//!
//! A byte-for-byte port of the validating state machine in Go's `encoding/json/scanner.go`
//! (`checkValid`, the `state*` functions, `quoteChar`); names below follow Go's so the two can
//! be read side by side. It only classifies bytes, it builds no value.

/// Go's `maxNestingDepth`: one more open `{` or `[` than this is an error.
const MAX_NESTING_DEPTH: usize = 10000;

/// The error Go's `json.Unmarshal` (encoding/json, Go 1.26) reports for `data` when it is not
/// valid JSON, worded exactly as Go words it; `None` when `data` is one valid JSON value
/// (surrounding whitespace allowed).
pub fn syntax_error(data: &[u8]) -> Option<String> {
    let mut scan = Scanner { step: Step::BeginValue, parse_state: Vec::new(), end_top: false, err: None };
    for &c in data {
        scan.feed(c);
        // Go stops at the first error. Its trailing-data error (`stateEndTop`) only surfaces on
        // the next byte or at eof, but nothing can replace it, so returning it now is the same.
        if scan.err.is_some() {
            return scan.err;
        }
    }
    scan.eof()
}

/// Go's `parseState` values: what the innermost open composite is waiting for.
#[derive(Clone, Copy)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// Go's `scanner.step` function pointer: one variant per `state*` function, except that the
/// four `\u` digit states and the ten literal-letter states are one variant each.
#[derive(Clone, Copy)]
enum Step {
    BeginValueOrEmpty,
    BeginValue,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// After `\u` and this many (0..=3) hex digits.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside `true`, `false` or `null`, expecting `word[next]`.
    Literal {
        word: &'static str,
        next: usize,
    },
    Error,
}

struct Scanner {
    step: Step,
    parse_state: Vec<Parse>,
    end_top: bool,
    err: Option<String>,
}

impl Scanner {
    /// Go's `eof`: the end of input is fed as one space, which is why `tru` reports
    /// `invalid character ' ' in literal true (expecting 'e')`.
    fn eof(mut self) -> Option<String> {
        if self.err.is_some() || self.end_top {
            return self.err;
        }
        self.feed(b' ');
        if self.end_top {
            return None;
        }
        self.err.or_else(|| Some("unexpected end of JSON input".to_string()))
    }

    /// Go's `scan.step(scan, c)`.
    fn feed(&mut self, c: u8) {
        match self.step {
            // After `[`.
            Step::BeginValueOrEmpty if is_space(c) => {}
            Step::BeginValueOrEmpty if c == b']' => self.end_value(c),
            Step::BeginValueOrEmpty | Step::BeginValue => self.begin_value(c),
            // After `{`.
            Step::BeginStringOrEmpty if is_space(c) => {}
            Step::BeginStringOrEmpty if c == b'}' => {
                self.set_top(Parse::ObjectValue);
                self.end_value(c);
            }
            // After `{`, or after `{"key": value,`.
            Step::BeginStringOrEmpty | Step::BeginString => match c {
                _ if is_space(c) => {}
                b'"' => self.step = Step::InString,
                _ => self.error(c, "looking for beginning of object key string"),
            },
            Step::EndValue => self.end_value(c),
            // After the top-level value: only whitespace may follow.
            Step::EndTop if !is_space(c) => self.error(c, "after top-level value"),
            Step::EndTop => {}
            // Bytes >= 0x20 pass unchecked: Go's scanner does not validate UTF-8.
            Step::InString => match c {
                b'"' => self.step = Step::EndValue,
                b'\\' => self.step = Step::InStringEsc,
                ..0x20 => self.error(c, "in string literal"),
                _ => {}
            },
            Step::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => self.step = Step::InString,
                b'u' => self.step = Step::InStringEscU(0),
                _ => self.error(c, "in string escape code"),
            },
            Step::InStringEscU(_) if !c.is_ascii_hexdigit() => {
                self.error(c, "in \\u hexadecimal character escape");
            }
            Step::InStringEscU(3) => self.step = Step::InString,
            Step::InStringEscU(digits) => self.step = Step::InStringEscU(digits + 1),
            Step::Neg => match c {
                b'0' => self.step = Step::Zero,
                b'1'..=b'9' => self.step = Step::One,
                _ => self.error(c, "in numeric literal"),
            },
            // Go's state1 falls through to state0 on a non-digit.
            Step::One if c.is_ascii_digit() => {}
            Step::One | Step::Zero => match c {
                b'.' => self.step = Step::Dot,
                b'e' | b'E' => self.step = Step::E,
                _ => self.end_value(c),
            },
            Step::Dot if c.is_ascii_digit() => self.step = Step::Dot0,
            Step::Dot => self.error(c, "after decimal point in numeric literal"),
            Step::Dot0 => match c {
                b'0'..=b'9' => {}
                b'e' | b'E' => self.step = Step::E,
                _ => self.end_value(c),
            },
            Step::E if c == b'+' || c == b'-' => self.step = Step::ESign,
            Step::E | Step::ESign if c.is_ascii_digit() => self.step = Step::E0,
            Step::E | Step::ESign => self.error(c, "in exponent of numeric literal"),
            Step::E0 if c.is_ascii_digit() => {}
            Step::E0 => self.end_value(c),
            Step::Literal { word, next } => self.literal(c, word, next),
            Step::Error => {}
        }
    }

    fn error(&mut self, c: u8, context: &str) {
        self.step = Step::Error;
        self.err = Some(format!("invalid character {} {context}", quote_char(c)));
    }

    fn push_parse_state(&mut self, c: u8, state: Parse) {
        self.parse_state.push(state);
        if self.parse_state.len() > MAX_NESTING_DEPTH {
            self.error(c, "exceeded max depth");
        }
    }

    fn pop_parse_state(&mut self) {
        self.parse_state.pop();
        if self.parse_state.is_empty() {
            self.step = Step::EndTop;
            self.end_top = true;
        } else {
            self.step = Step::EndValue;
        }
    }

    /// At the start of input, after `:`, `,` in an array, or `[`.
    fn begin_value(&mut self, c: u8) {
        // The next step is set before the push, so a depth error overrides it, as in Go.
        match c {
            _ if is_space(c) => {}
            b'{' => {
                self.step = Step::BeginStringOrEmpty;
                self.push_parse_state(c, Parse::ObjectKey);
            }
            b'[' => {
                self.step = Step::BeginValueOrEmpty;
                self.push_parse_state(c, Parse::ArrayValue);
            }
            b'"' => self.step = Step::InString,
            b'-' => self.step = Step::Neg,
            b'0' => self.step = Step::Zero,
            b'1'..=b'9' => self.step = Step::One,
            b't' => self.step = Step::Literal { word: "true", next: 1 },
            b'f' => self.step = Step::Literal { word: "false", next: 1 },
            b'n' => self.step = Step::Literal { word: "null", next: 1 },
            _ => self.error(c, "looking for beginning of value"),
        }
    }

    /// After a complete value, such as `{}`, `true` or `["x"`.
    fn end_value(&mut self, c: u8) {
        let Some(&state) = self.parse_state.last() else {
            // The top-level value ended just before `c`.
            self.step = Step::EndTop;
            self.end_top = true;
            return self.feed(c);
        };
        if is_space(c) {
            self.step = Step::EndValue;
            return;
        }
        match (state, c) {
            (Parse::ObjectKey, b':') => {
                self.set_top(Parse::ObjectValue);
                self.step = Step::BeginValue;
            }
            (Parse::ObjectKey, _) => self.error(c, "after object key"),
            (Parse::ObjectValue, b',') => {
                self.set_top(Parse::ObjectKey);
                self.step = Step::BeginString;
            }
            (Parse::ObjectValue, b'}') | (Parse::ArrayValue, b']') => self.pop_parse_state(),
            (Parse::ObjectValue, _) => self.error(c, "after object key:value pair"),
            (Parse::ArrayValue, b',') => self.step = Step::BeginValue,
            (Parse::ArrayValue, _) => self.error(c, "after array element"),
        }
    }

    fn set_top(&mut self, state: Parse) {
        if let Some(top) = self.parse_state.last_mut() {
            *top = state;
        }
    }

    /// Inside `true`, `false` or `null` (Go has one `state*` per prefix; same messages).
    fn literal(&mut self, c: u8, word: &'static str, next: usize) {
        let expected = word.as_bytes()[next];
        if c != expected {
            let context = format!("in literal {word} (expecting '{}')", char::from(expected));
            return self.error(c, &context);
        }
        self.step =
            if next + 1 == word.len() { Step::EndValue } else { Step::Literal { word, next: next + 1 } };
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `quoteChar`: `strconv.Quote(string(rune(c)))` between single quotes. The byte is taken
/// as the code point U+0000..=U+00FF, so 0x81 reads `'\u0081'` and 0xff reads `'ÿ'`.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_string(),
        b'"' => "'\"'".to_string(),
        _ => format!("'{}'", quote_rune(c)),
    }
}

/// `strconv.Quote`'s escape for one Latin-1 code point (its `appendEscapedRune`).
fn quote_rune(c: u8) -> String {
    match c {
        b'\\' => r"\\".to_string(),
        // strconv.IsPrint for Latin-1: printable ASCII, and ¡..ÿ except the soft hyphen.
        0x20..=0x7e | 0xa1..=0xff if c != 0xad => char::from(c).to_string(),
        0x07 => r"\a".to_string(),
        0x08 => r"\b".to_string(),
        0x0c => r"\f".to_string(),
        b'\n' => r"\n".to_string(),
        b'\r' => r"\r".to_string(),
        b'\t' => r"\t".to_string(),
        0x0b => r"\v".to_string(),
        ..0x20 | 0x7f => format!(r"\x{c:02x}"),
        _ => format!(r"\u{c:04x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Produced by Go itself, not by hand: a throwaway program (kept outside the repository) ran
    //     var v any; err := json.Unmarshal([]byte(input), &v)
    // with Go 1.26.8 for each input and printed `(input, err.Error())` as Rust literals.
    const GO_TABLE: &[(&[u8], Option<&str>)] = &[
        (b"{not json", Some("invalid character 'n' looking for beginning of object key string")),
        (b"{oops", Some("invalid character 'o' looking for beginning of object key string")),
        (b"{\"a\":1,}", Some("invalid character '}' looking for beginning of object key string")),
        (b"[1,]", Some("invalid character ']' looking for beginning of value")),
        (b"[1 2]", Some("invalid character '2' after array element")),
        (b"{\"a\" 1}", Some("invalid character '1' after object key")),
        (b"{\"a\":1 \"b\":2}", Some("invalid character '\"' after object key:value pair")),
        (b"tru", Some("invalid character ' ' in literal true (expecting 'e')")),
        (b"nul", Some("invalid character ' ' in literal null (expecting 'l')")),
        (b"01", Some("invalid character '1' after top-level value")),
        (b"1.", Some("invalid character ' ' after decimal point in numeric literal")),
        (b"1e", Some("invalid character ' ' in exponent of numeric literal")),
        (b"-", Some("invalid character ' ' in numeric literal")),
        (b"\"abc", Some("unexpected end of JSON input")),
        (b"\"\x01\"", Some("invalid character '\\x01' in string literal")),
        (b"\"\\q\"", Some("invalid character 'q' in string escape code")),
        (b"\"\\u12g4\"", Some("invalid character 'g' in \\u hexadecimal character escape")),
        (b"{} x", Some("invalid character 'x' after top-level value")),
        (b"", Some("unexpected end of JSON input")),
        (b" \x09\x0d\x0a", Some("unexpected end of JSON input")),
        (b"'single'", Some("invalid character '\\'' looking for beginning of value")),
        (b"\x81", Some("invalid character '\\u0081' looking for beginning of value")),
        (b"{\"a\":[}", Some("invalid character '}' looking for beginning of value")),
        (b"{\"a\":1}", None),
        (b"[1,2,3]", None),
        (b"  null  ", None),
        (b"\"\xff\xfe\"", None),
        (b"\"\\uABCD\\/\\b\\f\\n\\r\\t\\\\\\\"\"", None),
        (b"1.5e-3", None),
        (b"-0.0E+0", None),
        (b"[]", None),
        (b"{}", None),
        (b"[[{\"a\":[{}]}]]", None),
        (b"\"\x7f\"", None),
        (b"trux", Some("invalid character 'x' in literal true (expecting 'e')")),
        (b"tx", Some("invalid character 'x' in literal true (expecting 'r')")),
        (b"t", Some("invalid character ' ' in literal true (expecting 'r')")),
        (b"fals", Some("invalid character ' ' in literal false (expecting 'e')")),
        (b"falsy", Some("invalid character 'y' in literal false (expecting 'e')")),
        (b"fx", Some("invalid character 'x' in literal false (expecting 'a')")),
        (b"f", Some("invalid character ' ' in literal false (expecting 'a')")),
        (b"nulx", Some("invalid character 'x' in literal null (expecting 'l')")),
        (b"nx", Some("invalid character 'x' in literal null (expecting 'u')")),
        (b"nuLL", Some("invalid character 'L' in literal null (expecting 'l')")),
        (b"-x", Some("invalid character 'x' in numeric literal")),
        (b"1.x", Some("invalid character 'x' after decimal point in numeric literal")),
        (b"1e+", Some("invalid character ' ' in exponent of numeric literal")),
        (b"1e+x", Some("invalid character 'x' in exponent of numeric literal")),
        (b"[1e]", Some("invalid character ']' in exponent of numeric literal")),
        (b"[tru]", Some("invalid character ']' in literal true (expecting 'e')")),
        (b".5", Some("invalid character '.' looking for beginning of value")),
        (b"+1", Some("invalid character '+' looking for beginning of value")),
        (b"1.5.2", Some("invalid character '.' after top-level value")),
        (b"NaN", Some("invalid character 'N' looking for beginning of value")),
        (b"True", Some("invalid character 'T' looking for beginning of value")),
        (b"00", Some("invalid character '0' after top-level value")),
        (b"-01", Some("invalid character '1' after top-level value")),
        (b"0x10", Some("invalid character 'x' after top-level value")),
        (b"1 2", Some("invalid character '2' after top-level value")),
        (b"1x", Some("invalid character 'x' after top-level value")),
        (b"1e5x", Some("invalid character 'x' after top-level value")),
        (b"[1]]", Some("invalid character ']' after top-level value")),
        (b"{\"a\":1}}", Some("invalid character '}' after top-level value")),
        (b"}", Some("invalid character '}' looking for beginning of value")),
        (b"]", Some("invalid character ']' looking for beginning of value")),
        (b",", Some("invalid character ',' looking for beginning of value")),
        (b":", Some("invalid character ':' looking for beginning of value")),
        (b"[", Some("unexpected end of JSON input")),
        (b"{", Some("unexpected end of JSON input")),
        (b"{\"a\"", Some("unexpected end of JSON input")),
        (b"{\"a\":", Some("unexpected end of JSON input")),
        (b"{\"a\":1", Some("unexpected end of JSON input")),
        (b"{\"a\":1,", Some("unexpected end of JSON input")),
        (b"[1,", Some("unexpected end of JSON input")),
        (b"[1,2", Some("unexpected end of JSON input")),
        (b"\"", Some("unexpected end of JSON input")),
        (b"\"\\", Some("invalid character ' ' in string escape code")),
        (b"\"\\u", Some("invalid character ' ' in \\u hexadecimal character escape")),
        (b"\"\\u12", Some("invalid character ' ' in \\u hexadecimal character escape")),
        (b"\"\\u00e9x", Some("unexpected end of JSON input")),
        (b"\"\x09\"", Some("invalid character '\\t' in string literal")),
        (b"\"a\x00b\"", Some("invalid character '\\x00' in string literal")),
        (b"\"\x1f\"", Some("invalid character '\\x1f' in string literal")),
        (b"{1:2}", Some("invalid character '1' looking for beginning of object key string")),
        (b"{\"a\":}", Some("invalid character '}' looking for beginning of value")),
        (b"[,]", Some("invalid character ',' looking for beginning of value")),
        (b"{,}", Some("invalid character ',' looking for beginning of object key string")),
        (b"{\"a\":1,\"b\"}", Some("invalid character '}' after object key")),
        (b"[1:2]", Some("invalid character ':' after array element")),
        (b"{\"a\":1:}", Some("invalid character ':' after object key:value pair")),
        (b"{\"a\":1\x0a,}", Some("invalid character '}' looking for beginning of object key string")),
        (b"\xff", Some("invalid character 'ÿ' looking for beginning of value")),
        (b"\xa0", Some("invalid character '\\u00a0' looking for beginning of value")),
        (b"\xad", Some("invalid character '\\u00ad' looking for beginning of value")),
        (b"\xa1", Some("invalid character '¡' looking for beginning of value")),
        (b"\x00", Some("invalid character '\\x00' looking for beginning of value")),
        (b"\x7f", Some("invalid character '\\x7f' looking for beginning of value")),
        (b"\x07", Some("invalid character '\\a' looking for beginning of value")),
        (b"\x08", Some("invalid character '\\b' looking for beginning of value")),
        (b"\x0b", Some("invalid character '\\v' looking for beginning of value")),
        (b"\x0c", Some("invalid character '\\f' looking for beginning of value")),
        (b"\x1b", Some("invalid character '\\x1b' looking for beginning of value")),
        (b"\x80", Some("invalid character '\\u0080' looking for beginning of value")),
        (b"\x9f", Some("invalid character '\\u009f' looking for beginning of value")),
        (b"\\", Some("invalid character '\\\\' looking for beginning of value")),
        (b"'", Some("invalid character '\\'' looking for beginning of value")),
        (b"\"x\" \"y\"", Some("invalid character '\"' after top-level value")),
        (b"{\"a\":1}x", Some("invalid character 'x' after top-level value")),
        (b"[1]\x81", Some("invalid character '\\u0081' after top-level value")),
        (b"\xef\xbb\xbf{}", Some("invalid character 'ï' looking for beginning of value")),
        (b"1 \x00", Some("invalid character '\\x00' after top-level value")),
        (b"1 \x01 2", Some("invalid character '\\x01' after top-level value")),
    ];

    #[test]
    fn every_table_input_gets_the_message_go_prints() {
        for &(input, want) in GO_TABLE {
            let got = syntax_error(input);
            assert_eq!(got.as_deref(), want, "input {:?}", String::from_utf8_lossy(input));
        }
    }

    // Go 1.26.8 as above, on generated inputs too long for the table.
    #[test]
    fn nesting_is_limited_to_10000_levels_like_go() {
        let deep = |open: &str, n: usize, tail: &str| format!("{}{tail}", open.repeat(n)).into_bytes();
        let max_depth = |c: char| Some(format!("invalid character '{c}' exceeded max depth"));
        let closed = format!("{}{}", "[".repeat(10000), "]".repeat(10000));
        assert_eq!(syntax_error(closed.as_bytes()), None);
        let closed = format!("{}1{}", r#"{"a":"#.repeat(10000), "}".repeat(10000));
        assert_eq!(syntax_error(closed.as_bytes()), None);
        assert_eq!(syntax_error(&deep("[", 10001, "")), max_depth('['));
        assert_eq!(syntax_error(&deep(r#"{"a":"#, 10001, "")), max_depth('{'));
        assert_eq!(syntax_error(&deep("[", 10000, "{")), max_depth('{'));
        let eof = Some("unexpected end of JSON input".to_string());
        assert_eq!(syntax_error(&deep("[", 10000, "")), eof);
        assert_eq!(syntax_error(&deep("[", 9999, "{")), eof);
    }

    // Go's quoteChar for bytes 0..=255, read back from Go 1.26.8's errors for `"\<c>` and
    // `{"a"<c>` (whichever rejects the byte).
    #[rustfmt::skip]
    const GO_QUOTE_CHAR: [&str; 256] = [
        "'\\x00'", "'\\x01'", "'\\x02'", "'\\x03'", "'\\x04'", "'\\x05'", "'\\x06'", "'\\a'",
        "'\\b'", "'\\t'", "'\\n'", "'\\v'", "'\\f'", "'\\r'", "'\\x0e'", "'\\x0f'",
        "'\\x10'", "'\\x11'", "'\\x12'", "'\\x13'", "'\\x14'", "'\\x15'", "'\\x16'", "'\\x17'",
        "'\\x18'", "'\\x19'", "'\\x1a'", "'\\x1b'", "'\\x1c'", "'\\x1d'", "'\\x1e'", "'\\x1f'",
        "' '", "'!'", "'\"'", "'#'", "'$'", "'%'", "'&'", "'\\''",
        "'('", "')'", "'*'", "'+'", "','", "'-'", "'.'", "'/'",
        "'0'", "'1'", "'2'", "'3'", "'4'", "'5'", "'6'", "'7'",
        "'8'", "'9'", "':'", "';'", "'<'", "'='", "'>'", "'?'",
        "'@'", "'A'", "'B'", "'C'", "'D'", "'E'", "'F'", "'G'",
        "'H'", "'I'", "'J'", "'K'", "'L'", "'M'", "'N'", "'O'",
        "'P'", "'Q'", "'R'", "'S'", "'T'", "'U'", "'V'", "'W'",
        "'X'", "'Y'", "'Z'", "'['", "'\\\\'", "']'", "'^'", "'_'",
        "'`'", "'a'", "'b'", "'c'", "'d'", "'e'", "'f'", "'g'",
        "'h'", "'i'", "'j'", "'k'", "'l'", "'m'", "'n'", "'o'",
        "'p'", "'q'", "'r'", "'s'", "'t'", "'u'", "'v'", "'w'",
        "'x'", "'y'", "'z'", "'{'", "'|'", "'}'", "'~'", "'\\x7f'",
        "'\\u0080'", "'\\u0081'", "'\\u0082'", "'\\u0083'", "'\\u0084'", "'\\u0085'", "'\\u0086'", "'\\u0087'",
        "'\\u0088'", "'\\u0089'", "'\\u008a'", "'\\u008b'", "'\\u008c'", "'\\u008d'", "'\\u008e'", "'\\u008f'",
        "'\\u0090'", "'\\u0091'", "'\\u0092'", "'\\u0093'", "'\\u0094'", "'\\u0095'", "'\\u0096'", "'\\u0097'",
        "'\\u0098'", "'\\u0099'", "'\\u009a'", "'\\u009b'", "'\\u009c'", "'\\u009d'", "'\\u009e'", "'\\u009f'",
        "'\\u00a0'", "'¡'", "'¢'", "'£'", "'¤'", "'¥'", "'¦'", "'§'",
        "'¨'", "'©'", "'ª'", "'«'", "'¬'", "'\\u00ad'", "'®'", "'¯'",
        "'°'", "'±'", "'²'", "'³'", "'´'", "'µ'", "'¶'", "'·'",
        "'¸'", "'¹'", "'º'", "'»'", "'¼'", "'½'", "'¾'", "'¿'",
        "'À'", "'Á'", "'Â'", "'Ã'", "'Ä'", "'Å'", "'Æ'", "'Ç'",
        "'È'", "'É'", "'Ê'", "'Ë'", "'Ì'", "'Í'", "'Î'", "'Ï'",
        "'Ð'", "'Ñ'", "'Ò'", "'Ó'", "'Ô'", "'Õ'", "'Ö'", "'×'",
        "'Ø'", "'Ù'", "'Ú'", "'Û'", "'Ü'", "'Ý'", "'Þ'", "'ß'",
        "'à'", "'á'", "'â'", "'ã'", "'ä'", "'å'", "'æ'", "'ç'",
        "'è'", "'é'", "'ê'", "'ë'", "'ì'", "'í'", "'î'", "'ï'",
        "'ð'", "'ñ'", "'ò'", "'ó'", "'ô'", "'õ'", "'ö'", "'÷'",
        "'ø'", "'ù'", "'ú'", "'û'", "'ü'", "'ý'", "'þ'", "'ÿ'",
    ];

    #[test]
    fn every_byte_is_quoted_like_go_quote_char() {
        for c in 0..=255u8 {
            assert_eq!(quote_char(c), GO_QUOTE_CHAR[usize::from(c)], "byte {c:#04x}");
        }
    }

    fn assert_go_shaped(input: &[u8]) {
        if let Some(message) = syntax_error(input) {
            assert!(
                message.starts_with("invalid character '") || message == "unexpected end of JSON input",
                "{message}"
            );
        }
    }

    #[test]
    fn no_input_panics() {
        for c in 0..=255u8 {
            assert_go_shaped(&[c]);
            assert_go_shaped(&[b'"', c]);
            assert_go_shaped(&[b'[', b'1', c]);
        }
        // A fixed xorshift stream: all byte values, and JSON-ish bytes that reach deeper states.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = br#"{}[]:,"\u0123456789abcdefABCDEF.eE+- trunlsx"#;
        for _ in 0..20_000 {
            let len = (next() % 24) as usize;
            let any: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let jsonish: Vec<u8> =
                (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
            assert_go_shaped(&any);
            assert_go_shaped(&jsonish);
        }
    }
}
