//! Arbitrary bytes to every webhook path, with every kind of Content-Type: the answer is
//! always an allowing review or a 4xx Status naming the problem, never a panic or a 5xx.
#![no_main]

use eviction_autoscaler_fuzz::call;
use libfuzzer_sys::fuzz_target;

const PATHS: [&str; 5] =
    ["/validate-eviction", "/validate-deployment", "/validate-pdb", "/", "/validate-other"];
const CONTENT_TYPES: [Option<&str>; 5] = [
    Some("application/json"),
    Some("application/json; charset=utf-8"),
    Some("text/plain"),
    None,
    Some("APPLICATION/JSON"),
];

fuzz_target!(|input: &[u8]| {
    let Some((&selector, body)) = input.split_first() else { return };
    let path = PATHS[usize::from(selector) % PATHS.len()];
    let content_type = CONTENT_TYPES[usize::from(selector / 8) % CONTENT_TYPES.len()];
    let method = if selector >= 0xf0 { "GET" } else { "POST" };
    call(method, path, content_type, body.to_vec());
});
