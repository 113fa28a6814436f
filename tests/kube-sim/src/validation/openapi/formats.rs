//! String formats (`format:`) as a v1.35 apiserver checks them: apiextensions strips every
//! format it does not support (`StripUnsupportedFormatsPostProcessorForVersion`, so `int32`,
//! `int64`, `float`, `double` have no effect at all), and kube-openapi's `strfmt.Default`
//! registry checks the rest (`strfmt/default.go`, `time.go`, `date.go`,
//! `kubernetes-extensions.go`). Formats kube-sim does not check (`uri`, `email`, `hostname`,
//! `mac`, `isbn*`, `creditcard`, `ssn`, `hexcolor`, `rgbcolor`, `duration`, `bsonobjectid`)
//! accept every string.

use std::net::Ipv6Addr;

/// Upstream's supported formats, normalized as go-openapi does (dashes removed).
const SUPPORTED: [&str; 26] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

fn normalized(format: &str) -> String {
    format.replace('-', "")
}

/// The format after upstream's post-processing: as written when supported, else empty.
pub(super) fn effective(format: &str) -> &str {
    if SUPPORTED.contains(&normalized(format).as_str()) { format } else { "" }
}

/// Whether `value` has `format` (an [`effective`] one).
pub(super) fn valid(format: &str, value: &str) -> bool {
    match normalized(format).as_str() {
        "datetime" => is_date_time(value),
        "date" => is_date(value),
        "uuid" => is_uuid(value, None),
        "uuid3" => is_uuid(value, Some('3')),
        "uuid4" => is_uuid(value, Some('4')),
        "uuid5" => is_uuid(value, Some('5')),
        "byte" => is_base64(value),
        "k8sshortname" => value.len() <= 63 && is_dns_label(value),
        "k8slongname" => value.len() <= 253 && value.split('.').all(is_dns_label),
        "ipv4" => parse_ip(value).is_some() && value.contains('.'),
        "ipv6" => parse_ip(value).is_some() && value.contains(':'),
        "cidr" => is_cidr(value),
        _ => true,
    }
}

/// Go's `time.Parse("2006-01-02", s)`: a four-digit year, two-digit month and day, the day
/// within its month.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok()).flatten()
    };
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt `IsDateTime`: lower-cased and split at `t`, a date, then
/// `^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$` with hours ≤ 23,
/// minutes and seconds ≤ 59 (the `.` is any character).
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else { return false };
    if !is_date(date) {
        return false;
    }
    let chars: Vec<char> = time.chars().collect();
    let two = |i: usize| -> Option<u32> {
        let (a, b) = (chars.get(i)?.to_digit(10)?, chars.get(i + 1)?.to_digit(10)?);
        Some(a * 10 + b)
    };
    let (Some(h), Some(m), Some(sec)) = (two(0), two(3), two(6)) else { return false };
    if chars.get(2) != Some(&':') || chars.get(5) != Some(&':') {
        return false;
    }
    let rest = &chars[8.min(chars.len())..];
    let zone = |z: &[char]| match z {
        ['z'] => true,
        [sign, a, b, ':', c, d] => {
            matches!(sign, '+' | '-') && [a, b, c, d].iter().all(|c| c.is_ascii_digit())
        }
        _ => false,
    };
    // `(.[0-9]+)?`: any character but a newline, then digits (all of them: the zone cannot
    // start with one); or nothing.
    let fraction = match rest {
        [c, tail @ ..] if *c != '\n' && tail.first().is_some_and(char::is_ascii_digit) => {
            let digits = tail.iter().take_while(|c| c.is_ascii_digit()).count();
            zone(&tail[digits..])
        }
        _ => false,
    };
    (zone(rest) || fraction) && h <= 23 && m <= 59 && sec <= 59
}

/// `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`; a `version`
/// starts the third group, and versions 4 and 5 start the fourth with `[89ab]`.
fn is_uuid(s: &str, version: Option<char>) -> bool {
    let mut rest = s.to_ascii_lowercase();
    let mut groups = Vec::new();
    for (i, len) in [8usize, 4, 4, 4, 12].into_iter().enumerate() {
        if i > 0 && rest.starts_with('-') {
            rest.remove(0);
        }
        let Some(group) = rest.get(..len) else { return false };
        if !group.bytes().all(|c| c.is_ascii_hexdigit()) {
            return false;
        }
        groups.push(group.to_string());
        rest = rest[len..].to_string();
    }
    if !rest.is_empty() {
        return false;
    }
    match version {
        None => true,
        Some(v) => groups[2].starts_with(v) && (v == '3' || groups[3].starts_with(['8', '9', 'a', 'b'])),
    }
}

/// govalidator `IsBase64`: groups of four of `[A-Za-z0-9+/]`, the last one possibly padded.
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let alphabet = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    let (body, last) = b.split_at(b.len() - 4);
    body.iter().all(alphabet)
        && match last {
            [a, b, b'=', b'='] => alphabet(a) && alphabet(b),
            [a, b, c, b'='] => alphabet(a) && alphabet(b) && alphabet(c),
            other => other.iter().all(alphabet),
        }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns_label(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (s.as_bytes().first(), s.as_bytes().last()) {
        (Some(&first), Some(&last)) => {
            alnum(first) && alnum(last) && s.bytes().all(|c| alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// k8s.io/utils `ParseIPSloppy` (Go's pre-1.17 `net.ParseIP`): dotted IPv4 with leading zeros
/// allowed, or IPv6. The address length (4 or 16) is what a CIDR's prefix is bounded by.
fn parse_ip(s: &str) -> Option<usize> {
    if s.contains(':') {
        // An IPv6 address may end in a dotted IPv4 one, leading zeros allowed there too.
        let text = match s.rsplit_once(':') {
            Some((head, tail)) if tail.contains('.') => format!("{head}:{}", sloppy_v4(tail)?),
            _ => s.to_string(),
        };
        return text.parse::<Ipv6Addr>().ok().map(|_| 16);
    }
    sloppy_v4(s).map(|_| 4)
}

/// Four dot-separated decimal numbers up to 255, rewritten without leading zeros.
fn sloppy_v4(s: &str) -> Option<String> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = Vec::new();
    for part in parts {
        if part.is_empty() || !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let digits = part.trim_start_matches('0');
        if digits.len() > 3 {
            return None;
        }
        let n: u32 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
        if n > 255 {
            return None;
        }
        octets.push(n.to_string());
    }
    Some(octets.join("."))
}

/// `ParseCIDRSloppy`: an address, `/`, a decimal prefix length within the address's bits.
fn is_cidr(s: &str) -> bool {
    let Some((ip, prefix)) = s.split_once('/') else { return false };
    let Some(len) = parse_ip(ip) else { return false };
    !prefix.is_empty()
        && prefix.bytes().all(|c| c.is_ascii_digit())
        && prefix.trim_start_matches('0').len() <= 3
        && prefix.parse::<usize>().is_ok_and(|n| n <= 8 * len)
}
