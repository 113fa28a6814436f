//! The deterministic name of a Deployment's default PDB.
//!
//! The admission fast path and the reconciler must agree on one name, so that a create by
//! either makes the other's create fail with AlreadyExists ("done") instead of producing a
//! second PDB on the same pods (every eviction of such a pod answers 500).

/// Appended to the Deployment's name; a chart's own PDB for the Deployment (usually named
/// like the Deployment) never collides with it.
pub const NAME_SUFFIX: &str = "-eviction-autoscaler";

/// Longest PDB name. Deployment names and the EvictionAutoScaler object that shares the PDB's
/// name are DNS-1123 subdomains (253 characters); PDB names are at most as strict, so the
/// subdomain limit is the binding one. Names are never used as label values, so the 63
/// character label limit does not apply.
pub const MAX_NAME_LEN: usize = 253;

/// Hex digits of the hash that replaces the cut tail of a long name.
const HASH_LEN: usize = 16;

/// `<deployment>-eviction-autoscaler`; when that exceeds [`MAX_NAME_LEN`], the Deployment name
/// is cut and a stable hash of the WHOLE name is inserted, so two long names sharing a prefix
/// still get different PDB names. Always a valid DNS-1123 subdomain for a valid Deployment
/// name, and the same on every replica and every release (FNV-1a, fixed constants).
pub fn default_pdb_name(deployment_name: &str) -> String {
    if deployment_name.len() + NAME_SUFFIX.len() <= MAX_NAME_LEN {
        return format!("{deployment_name}{NAME_SUFFIX}");
    }
    let keep = MAX_NAME_LEN - NAME_SUFFIX.len() - 1 - HASH_LEN;
    let prefix: String = deployment_name.chars().take(keep).collect();
    // A subdomain label may not end in '-' and a '.' may not be followed by '-'.
    let prefix = prefix.trim_end_matches(['-', '.']);
    let hash = format!("{:016x}", fnv1a_64(deployment_name.as_bytes()));
    if prefix.is_empty() { format!("{hash}{NAME_SUFFIX}") } else { format!("{prefix}-{hash}{NAME_SUFFIX}") }
}

/// 64-bit FNV-1a: tiny, dependency-free and defined by its constants, so the hash never
/// changes between builds (unlike `std`'s `DefaultHasher`).
fn fnv1a_64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DNS-1123 subdomain, as `k8s.io/apimachinery/pkg/util/validation.IsDNS1123Subdomain`.
    fn is_dns_subdomain(name: &str) -> bool {
        name.len() <= 253
            && name.split('.').all(|label| {
                let bytes = label.as_bytes();
                !bytes.is_empty()
                    && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                    && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
                    && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
            })
    }

    #[test]
    fn fnv_matches_reference_vectors() {
        assert_eq!(fnv1a_64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a_64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn names() {
        let at_limit = "a".repeat(MAX_NAME_LEN - NAME_SUFFIX.len());
        let over_limit = "a".repeat(MAX_NAME_LEN - NAME_SUFFIX.len() + 1);
        let cases: [(&str, &str, usize); 4] = [
            ("short name keeps its form", "web", "web-eviction-autoscaler".len()),
            ("dotted name", "web.v2", "web.v2-eviction-autoscaler".len()),
            ("exactly at the limit is not hashed", &at_limit, MAX_NAME_LEN),
            ("one over the limit is hashed", &over_limit, MAX_NAME_LEN),
        ];
        for (case, deployment, want_len) in cases {
            let name = default_pdb_name(deployment);
            assert_eq!(name.len(), want_len, "{case}: {name}");
            assert!(name.ends_with(NAME_SUFFIX), "{case}: {name}");
            assert!(is_dns_subdomain(&name), "{case}: {name}");
        }
        assert_eq!(default_pdb_name("web"), "web-eviction-autoscaler");
        assert_eq!(default_pdb_name(&at_limit), format!("{at_limit}{NAME_SUFFIX}"));
    }

    #[test]
    fn long_names_are_stable_distinct_and_valid() {
        let base = "x".repeat(240);
        let one = format!("{base}-one");
        let two = format!("{base}-two");
        assert_eq!(default_pdb_name(&one), default_pdb_name(&one), "deterministic");
        assert_ne!(default_pdb_name(&one), default_pdb_name(&two), "shared prefix, different names");
        // The cut lands right after a '-' or '.': it must be trimmed to stay a valid subdomain.
        let keep = MAX_NAME_LEN - NAME_SUFFIX.len() - 1 - HASH_LEN;
        for separator in ["-", ".", "-.", ".-"] {
            let awkward = format!("{}{separator}{}", "b".repeat(keep - separator.len()), "c".repeat(40));
            let name = default_pdb_name(&awkward);
            assert!(is_dns_subdomain(&name), "{separator:?}: {name}");
            assert!(name.len() <= MAX_NAME_LEN, "{separator:?}");
        }
        // Pinned value: the name must never change between releases, or every PDB is recreated.
        let pinned = default_pdb_name(&"z".repeat(250));
        assert_eq!(pinned, format!("{}-fa553bf51f95a555-eviction-autoscaler", "z".repeat(216)));
    }
}
