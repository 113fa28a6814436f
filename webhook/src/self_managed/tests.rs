//! The decision table, at fixed times.

use super::decide::{
    Action, Published, SecretData, Wanted, backdate, bundle_with_next_ca, decide, renew_at, switch_grace,
};
use crate::certs::{IssuedPem, issue_serving, new_ca};

const T0: i64 = 1_800_000_000;
const DAY: i64 = 86_400;

fn wanted() -> Wanted {
    Wanted {
        dns_names: vec![
            "eas.ops.svc".into(),
            "eas".into(),
            "eas.ops".into(),
            "eas.ops.svc.cluster.local".into(),
        ],
        serving_validity: 300 * DAY,
        ca_validity: 3000 * DAY,
    }
}

struct Fixture {
    ca: IssuedPem,
    serving: IssuedPem,
}

impl Fixture {
    /// A CA valid from T0 for `ca_days` and a serving cert from it valid from T0 for
    /// `serving_days`, for `names`.
    fn new(ca_days: i64, serving_days: i64, names: &[String]) -> Self {
        let ca = new_ca(T0, T0 + ca_days * DAY).unwrap();
        let serving = issue_serving(
            super::super::certs::CA_COMMON_NAME,
            &ca.key_pem,
            names,
            T0,
            T0 + serving_days * DAY,
        )
        .unwrap();
        Self { ca, serving }
    }

    fn data(&self) -> SecretData<'_> {
        SecretData {
            tls_crt: Some(self.serving.cert_pem.as_bytes()),
            tls_key: Some(self.serving.key_pem.as_bytes()),
            ca_crt: Some(self.ca.cert_pem.as_bytes()),
            ca_key: Some(self.ca.key_pem.as_bytes()),
        }
    }
}

fn renews(action: &Action, why: &str) {
    assert!(
        matches!(action, Action::Renew { reason } if reason.contains(why)),
        "want Renew ({why}), got {action:?}"
    );
}

fn replaces(action: &Action, why: &str) {
    assert!(
        matches!(action, Action::Replace { reason } if reason.contains(why)),
        "want Replace ({why}), got {action:?}"
    );
}

#[test]
fn no_secret_is_created() {
    assert_eq!(decide(None, T0, &wanted(), &Published::Unknown), Action::Create);
}

#[test]
fn a_fresh_secret_is_used_until_two_thirds_of_its_life() {
    let f = Fixture::new(3000, 300, &wanted().dns_names);
    let action = decide(Some(f.data()), T0 + DAY, &wanted(), &Published::Unknown);
    assert_eq!(action, Action::Use { recheck_at: renew_at(T0, T0 + 300 * DAY) });
    assert_eq!(renew_at(T0, T0 + 300 * DAY), T0 + 200 * DAY);
}

#[test]
fn serving_cert_with_a_third_left_is_renewed() {
    let f = Fixture::new(3000, 300, &wanted().dns_names);
    assert!(matches!(
        decide(Some(f.data()), T0 + 199 * DAY, &wanted(), &Published::Unknown),
        Action::Use { .. }
    ));
    renews(&decide(Some(f.data()), T0 + 200 * DAY, &wanted(), &Published::Unknown), "less than a third");
}

#[test]
fn expired_serving_cert_is_renewed() {
    let f = Fixture::new(3000, 300, &wanted().dns_names);
    renews(&decide(Some(f.data()), T0 + 301 * DAY, &wanted(), &Published::Unknown), "does not verify");
}

#[test]
fn serving_cert_with_wrong_names_is_renewed() {
    let f = Fixture::new(3000, 300, &["other.ops.svc".to_owned()]);
    renews(&decide(Some(f.data()), T0 + DAY, &wanted(), &Published::Unknown), "not valid for eas.ops.svc");
}

#[test]
fn garbage_or_missing_serving_pair_is_renewed() {
    let f = Fixture::new(3000, 300, &wanted().dns_names);
    let garbage = SecretData { tls_crt: Some(b"not pem"), ..f.data() };
    renews(&decide(Some(garbage), T0, &wanted(), &Published::Unknown), "tls.crt");
    let no_key = SecretData { tls_key: None, ..f.data() };
    renews(&decide(Some(no_key), T0, &wanted(), &Published::Unknown), "no tls.key");
    let other = Fixture::new(3000, 300, &wanted().dns_names);
    let foreign_key = SecretData { tls_key: Some(other.serving.key_pem.as_bytes()), ..f.data() };
    renews(&decide(Some(foreign_key), T0, &wanted(), &Published::Unknown), "tls.crt/tls.key");
}

#[test]
fn serving_cert_from_another_ca_is_renewed() {
    let f = Fixture::new(3000, 300, &wanted().dns_names);
    let other = Fixture::new(3000, 300, &wanted().dns_names);
    let mixed = SecretData { tls_crt: other.data().tls_crt, tls_key: other.data().tls_key, ..f.data() };
    renews(&decide(Some(mixed), T0 + DAY, &wanted(), &Published::Unknown), "does not verify");
}

#[test]
fn unusable_ca_part_replaces_everything() {
    let f = Fixture::new(3000, 300, &wanted().dns_names);
    replaces(&decide(Some(SecretData::default()), T0, &wanted(), &Published::Unknown), "no ca.crt");
    replaces(
        &decide(
            Some(SecretData { ca_crt: Some(b"garbage"), ..f.data() }),
            T0,
            &wanted(),
            &Published::Unknown,
        ),
        "ca.crt",
    );
    replaces(
        &decide(
            Some(SecretData { ca_key: Some(b"garbage"), ..f.data() }),
            T0,
            &wanted(),
            &Published::Unknown,
        ),
        "ca.key",
    );
    let other = Fixture::new(3000, 300, &wanted().dns_names);
    let wrong_key = SecretData { ca_key: Some(other.ca.key_pem.as_bytes()), ..f.data() };
    replaces(&decide(Some(wrong_key), T0, &wanted(), &Published::Unknown), "does not belong");
    // The serving certificate is not a CA.
    let not_ca = SecretData { ca_crt: f.data().tls_crt, ca_key: f.data().tls_key, ..f.data() };
    replaces(&decide(Some(not_ca), T0, &wanted(), &Published::Unknown), "not a CA");
    replaces(&decide(Some(f.data()), T0 + 3001 * DAY, &wanted(), &Published::Unknown), "expired");
}

#[test]
fn ageing_ca_gets_a_successor_first_and_the_switch_waits_for_the_bundle() {
    let f = Fixture::new(300, 30, &wanted().dns_names);
    let now = T0 + 201 * DAY;
    assert!(matches!(decide(Some(f.data()), now, &wanted(), &Published::Unknown), Action::AddNextCa { .. }));

    // Step 1 done: the new CA is first in ca.crt, its key in ca.key; serving unchanged.
    // Backdated as the product issues it (so a clock behind ours accepts it at once).
    let next = new_ca(now - backdate(300 * DAY), now + 300 * DAY).unwrap();
    let bundle = bundle_with_next_ca(&next.cert_pem, f.ca.cert_pem.as_bytes(), now);
    let old_serving = issue_serving(
        super::super::certs::CA_COMMON_NAME,
        &f.ca.key_pem,
        &wanted().dns_names,
        now - DAY,
        now + 29 * DAY,
    )
    .unwrap();
    let step1 = SecretData {
        tls_crt: Some(old_serving.cert_pem.as_bytes()),
        tls_key: Some(old_serving.key_pem.as_bytes()),
        ca_crt: Some(bundle.as_bytes()),
        ca_key: Some(next.key_pem.as_bytes()),
    };
    let only_old = Published::Bundles { bundles: vec![f.ca.cert_pem.clone().into_bytes()], since: now };
    assert!(matches!(decide(Some(step1), now, &wanted(), &only_old), Action::WaitForBundle { .. }));
    assert!(matches!(decide(Some(step1), now, &wanted(), &Published::Unknown), Action::WaitForBundle { .. }));
    let blank_one = Published::Bundles { bundles: vec![bundle.clone().into_bytes(), Vec::new()], since: now };
    assert!(matches!(decide(Some(step1), now, &wanted(), &blank_one), Action::WaitForBundle { .. }));
    // Step 2: every webhook trusts both; apiservers see a changed caBundle through their
    // informers, not at once, so the switch waits a minute after the bundles were first seen so.
    let seen = now + 5;
    let both = Published::Bundles { bundles: vec![bundle.clone().into_bytes(); 2], since: seen };
    let waits = decide(Some(step1), seen + 10, &wanted(), &both);
    assert!(
        matches!(&waits, Action::WaitForBundle { until: Some(at), .. } if *at == seen + 60),
        "want a wait until the grace is over, got {waits:?}"
    );
    renews(&decide(Some(step1), seen + 60, &wanted(), &both), "new CA");
    // Without a configuration nobody relies on the bundle: no wait.
    renews(&decide(Some(step1), now, &wanted(), &Published::NoConfiguration), "new CA");
}

#[test]
fn the_switch_grace_is_short_for_a_short_lived_ca() {
    assert_eq!(switch_grace(30 * DAY), 60);
    assert_eq!(switch_grace(33), 1, "a 30 s test CA (+3 s backdating) waits a second");
    assert_eq!(switch_grace(5), 1, "never zero");
}

#[test]
fn next_ca_bundle_keeps_live_old_cas_and_drops_expired_ones() {
    let old = new_ca(T0, T0 + 10 * DAY).unwrap();
    let next = new_ca(T0, T0 + 100 * DAY).unwrap();
    let live = bundle_with_next_ca(&next.cert_pem, old.cert_pem.as_bytes(), T0 + DAY);
    assert_eq!(super::decide::certificates(live.as_bytes()).unwrap().len(), 2);
    assert!(live.starts_with(next.cert_pem.trim_end()));
    let pruned = bundle_with_next_ca(&next.cert_pem, old.cert_pem.as_bytes(), T0 + 11 * DAY);
    assert_eq!(super::decide::certificates(pruned.as_bytes()).unwrap().len(), 1);
}
