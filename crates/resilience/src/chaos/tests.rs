use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::*;
use crate::classify::ErrorClass;
use std::time::Duration;

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
const NOW: u64 = 1_800_000_000;

/// `body;sig=<lowercase hex HMAC of body>`, signed independently of `ChaosSpec::sign`.
fn signed_with(key: &[u8], body: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).unwrap();
    mac.update(body);
    let tag: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut header = body.to_vec();
    header.extend_from_slice(b";sig=");
    header.extend_from_slice(tag.as_bytes());
    header
}

fn signed(body: &str) -> Vec<u8> {
    signed_with(KEY, body.as_bytes())
}

fn check(header: &[u8]) -> Result<ChaosSpec, Rejection> {
    verify(header, KEY, NOW)
}

fn spec(target: Target, fault: Fault, ms: Option<u32>, p: f64) -> ChaosSpec {
    ChaosSpec::try_new(target, fault, ms, p, NOW + 300).unwrap()
}

#[test]
fn rejection_strings_are_stable() {
    let strings: Vec<&str> = Rejection::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        strings,
        [
            "disabled",
            "not_operator",
            "bad_signature",
            "expired",
            "too_far_ahead",
            "malformed"
        ]
    );
    for r in Rejection::ALL {
        assert_eq!(r.to_string(), r.as_str());
    }
}

#[test]
fn wire_names_round_trip() {
    for t in Target::ALL {
        assert_eq!(Target::parse(t.as_str()), Some(t));
    }
    for f in Fault::ALL {
        assert_eq!(Fault::parse(f.as_str()), Some(f));
    }
    assert_eq!(Target::parse("Core-Api"), None);
    assert_eq!(Fault::parse("ERROR"), None);
}

#[test]
fn gate_checks_enabled_then_operator() {
    let gate = |enabled, operator| Gate { enabled, operator }.check();
    assert_eq!(gate(false, false), Err(Rejection::Disabled));
    assert_eq!(gate(false, true), Err(Rejection::Disabled));
    assert_eq!(gate(true, false), Err(Rejection::NotOperator));
    assert_eq!(gate(true, true), Ok(()));
}

#[test]
fn signs_and_verifies_in_spec_order() {
    let s = spec(Target::CoreApi, Fault::Latency, Some(800), 0.2);
    let header = s.sign(KEY).unwrap();
    let exp = NOW + 300;
    assert!(
        header.starts_with(&format!(
            "target=core-api;fault=latency;ms=800;p=0.2;exp={exp};sig="
        )),
        "{header}"
    );
    assert_eq!(header.len(), header.find(";sig=").unwrap() + 5 + 64);
    assert_eq!(check(header.as_bytes()), Ok(s));
    // The same bytes an independent HMAC computes.
    let body = header.split(";sig=").next().unwrap();
    assert_eq!(signed(body), header.as_bytes());
}

#[test]
fn every_target_and_fault_verifies() {
    for t in Target::ALL {
        for f in Fault::ALL {
            let ms = (f == Fault::Latency).then_some(0);
            for p in [0.0, 0.5, 1.0] {
                let s = spec(t, f, ms, p);
                assert_eq!(check(s.sign(KEY).unwrap().as_bytes()), Ok(s));
            }
        }
    }
}

#[test]
fn fields_in_any_order_with_sig_last() {
    let exp = NOW + 60;
    let a = check(&signed(&format!(
        "exp={exp};p=0.25;ms=30000;fault=latency;target=openai"
    )))
    .unwrap();
    assert_eq!(
        a,
        ChaosSpec::try_new(Target::OpenAi, Fault::Latency, Some(30_000), 0.25, exp).unwrap()
    );
}

#[test]
fn p_defaults_to_one_and_ms_is_optional_except_for_latency() {
    let exp = NOW + 60;
    let s = check(&signed(&format!(
        "target=screening-sim;fault=error;exp={exp}"
    )))
    .unwrap();
    assert_eq!((s.p(), s.ms()), (1.0, None));
    // ms on another fault: accepted, carried, unused by the draw.
    let s = check(&signed(&format!(
        "target=postgres;fault=reset;ms=5;exp={exp}"
    )))
    .unwrap();
    assert_eq!(s.ms(), Some(5));
    assert_eq!(
        check(&signed(&format!("target=core-api;fault=latency;exp={exp}"))),
        Err(Rejection::Malformed)
    );
}

#[test]
fn exp_is_required_and_bounded() {
    let at = |exp: u64| check(&signed(&format!("target=core-api;fault=error;exp={exp}")));
    assert_eq!(at(NOW - 1), Err(Rejection::Expired));
    assert_eq!(at(NOW), Err(Rejection::Expired));
    assert!(at(NOW + 1).is_ok());
    assert!(at(NOW + 900).is_ok());
    assert_eq!(at(NOW + 901), Err(Rejection::TooFarAhead));
    assert_eq!(at(u64::MAX), Err(Rejection::TooFarAhead));
    assert_eq!(at(0), Err(Rejection::Expired));
    // Missing exp is not "never expires" (pitfall 22).
    assert_eq!(
        check(&signed("target=core-api;fault=error")),
        Err(Rejection::Malformed)
    );
}

/// The forgeries of issue 14: each is ignored with the reason an auditor should see.
#[test]
fn forgeries_are_rejected_with_their_reason() {
    let good = spec(Target::CoreApi, Fault::Error, None, 1.0)
        .sign(KEY)
        .unwrap();
    assert!(check(good.as_bytes()).is_ok());

    // Tampered field: the signature no longer matches.
    let tampered = good.replace("fault=error", "fault=reset");
    assert_eq!(check(tampered.as_bytes()), Err(Rejection::BadSignature));
    // Wrong key.
    assert_eq!(
        verify(good.as_bytes(), b"another key, also 32 bytes long!", NOW),
        Err(Rejection::BadSignature)
    );
    // Truncated signature (one hex digit, one byte, all of it).
    let at = good.find(";sig=").unwrap();
    for cut in [1, 2, 64] {
        assert_eq!(
            check(&good.as_bytes()[..good.len() - cut]),
            Err(Rejection::BadSignature),
            "cut {cut}"
        );
    }
    assert_eq!(check(&good.as_bytes()[..at]), Err(Rejection::BadSignature));
    // Uppercase hex of the right MAC.
    let upper = format!(
        "{};sig={}",
        &good[..at],
        good[at + 5..].to_ascii_uppercase()
    );
    assert_ne!(upper, good);
    assert_eq!(check(upper.as_bytes()), Err(Rejection::BadSignature));
    // A signature with something after it, or not last.
    assert_eq!(
        check(format!("{good};x=1").as_bytes()),
        Err(Rejection::BadSignature)
    );
    let sig_first = format!("{};{}", &good[at + 1..], &good[..at]);
    assert_eq!(check(sig_first.as_bytes()), Err(Rejection::BadSignature));
    // 10 KiB.
    let big = signed(&format!("target=core-api;fault=error;exp={}", NOW + 60)).repeat(200);
    assert!(big.len() > 10 * 1024);
    assert_eq!(check(&big), Err(Rejection::Malformed));
}

/// A forgery is reported as such even when it is also expired, too far ahead or malformed:
/// the signature is checked before the content.
#[test]
fn signature_is_checked_before_content() {
    let other = b"not the operators' key, 32 bytes";
    for body in [
        format!("target=core-api;fault=error;exp={}", NOW - 10),
        format!("target=core-api;fault=error;exp={}", NOW + 5_000),
        "target=core-api;target=core-api;exp=1".to_owned(),
        "nonsense".to_owned(),
    ] {
        assert_eq!(
            check(&signed_with(other, body.as_bytes())),
            Err(Rejection::BadSignature),
            "{body}"
        );
    }
    let mut latin1 = b"target=core-api;fault=error;exp=1800000060;x=\xe9".to_vec();
    assert_eq!(
        check(&signed_with(other, &latin1)),
        Err(Rejection::BadSignature)
    );
    // The same non-UTF-8 bytes signed with the key: malformed.
    assert_eq!(check(&signed_with(KEY, &latin1)), Err(Rejection::Malformed));
    latin1.truncate(latin1.len() - 4);
    assert!(check(&signed_with(KEY, &latin1)).is_ok());
}

#[test]
fn the_size_cap_is_exactly_one_kibibyte() {
    // Leading zeros in exp are allowed, so pad with them to an exact length.
    let exact = |len: usize| {
        let mut zeros = 0;
        loop {
            let body = format!(
                "target=core-api;fault=error;exp={}{}",
                "0".repeat(zeros),
                NOW + 60
            );
            let header = signed(&body);
            if header.len() >= len {
                assert_eq!(header.len(), len);
                return header;
            }
            zeros += 1;
        }
    };
    assert!(check(&exact(MAX_HEADER_BYTES)).is_ok());
    assert_eq!(
        check(&exact(MAX_HEADER_BYTES + 1)),
        Err(Rejection::Malformed)
    );
}

/// Signed, but not the grammar: malformed.
#[test]
fn signed_but_malformed() {
    let exp = NOW + 60;
    for body in [
        format!("target=core-api;target=core-api;fault=error;exp={exp}"),
        format!("target=core-api;fault=error;fault=error;exp={exp}"),
        format!("target=core-api;fault=error;exp={exp};exp={exp}"),
        format!("target=core-api;fault=error;p=1;p=1;exp={exp}"),
        format!("target=core-api;fault=latency;ms=1;ms=1;exp={exp}"),
        format!("target=core-api;fault=error;exp={exp};colour=red"),
        format!("target=core-api;fault=error;exp={exp};sig=00"),
        format!("target=core-api;fault=error;exp={exp};"),
        format!(";target=core-api;fault=error;exp={exp}"),
        format!("target=core-api;;fault=error;exp={exp}"),
        format!("target=core-api;fault;exp={exp}"),
        format!(" target=core-api;fault=error;exp={exp}"),
        format!("target=core-api ;fault=error;exp={exp}"),
        format!("target==core-api;fault=error;exp={exp}"),
        format!("target=CORE-API;fault=error;exp={exp}"),
        format!("target=redis;fault=error;exp={exp}"),
        format!("target=core-api;fault=Error;exp={exp}"),
        format!("target=core-api;fault=explode;exp={exp}"),
        format!("fault=error;exp={exp}"),
        format!("target=core-api;exp={exp}"),
        format!("target=core-api;fault=latency;ms=30001;exp={exp}"),
        format!("target=core-api;fault=latency;ms=-1;exp={exp}"),
        format!("target=core-api;fault=latency;ms=+5;exp={exp}"),
        format!("target=core-api;fault=latency;ms=;exp={exp}"),
        format!("target=core-api;fault=latency;ms=1.0;exp={exp}"),
        format!("target=core-api;fault=latency;ms=99999999999;exp={exp}"),
        format!("target=core-api;fault=error;exp=+{exp}"),
        format!("target=core-api;fault=error;exp={exp}.0"),
        "target=core-api;fault=error;exp=".to_owned(),
        "target=core-api;fault=error;exp=18446744073709551616".to_owned(),
        "".to_owned(),
    ] {
        assert_eq!(check(&signed(&body)), Err(Rejection::Malformed), "{body:?}");
    }
    for p in [
        "1.5",
        "1.0000001",
        "-0",
        "+0.5",
        ".5",
        "5.",
        "1e-1",
        "NaN",
        "inf",
        "0x1",
        "",
        "0.2.1",
        "½",
    ] {
        let body = format!("target=core-api;fault=error;p={p};exp={exp}");
        assert_eq!(check(&signed(&body)), Err(Rejection::Malformed), "p={p}");
    }
    for (p, want) in [
        ("0", 0.0),
        ("1", 1.0),
        ("1.000", 1.0),
        ("0.05", 0.05),
        ("00.5", 0.5),
    ] {
        let body = format!("target=core-api;fault=error;p={p};exp={exp}");
        assert_eq!(check(&signed(&body)).map(|s| s.p()), Ok(want), "p={p}");
    }
}

#[test]
fn try_new_names_the_rule() {
    let t = Target::CoreApi;
    assert_eq!(
        ChaosSpec::try_new(t, Fault::Latency, None, 1.0, 1),
        Err(InvalidSpec::MissingMs)
    );
    assert_eq!(
        ChaosSpec::try_new(t, Fault::Latency, Some(30_001), 1.0, 1),
        Err(InvalidSpec::MsOutOfRange)
    );
    let zero = ChaosSpec::try_new(t, Fault::Error, None, -0.0, NOW + 1).unwrap();
    assert!(zero.sign(KEY).unwrap().contains(";p=0;"));
    assert_eq!(check(zero.sign(KEY).unwrap().as_bytes()), Ok(zero));
    for p in [-0.1, 1.1, f64::NAN, f64::INFINITY] {
        assert_eq!(
            ChaosSpec::try_new(t, Fault::Error, None, p, 1),
            Err(InvalidSpec::POutOfRange)
        );
    }
}

#[test]
fn a_plan_is_only_for_its_target() {
    let s = spec(Target::OpenAi, Fault::Error, None, 1.0);
    assert!(
        s.faults_for(Target::CoreApi, StdRng::seed_from_u64(1))
            .is_none()
    );
    assert!(
        s.faults_for(Target::OpenAi, StdRng::seed_from_u64(1))
            .is_some()
    );
}

#[test]
fn draws_match_p_and_the_fault() {
    let draws = |fault, ms, p, seed| {
        let s = spec(Target::CoreApi, fault, ms, p);
        let mut plan = s
            .faults_for(Target::CoreApi, StdRng::seed_from_u64(seed))
            .unwrap();
        let actions: Vec<_> = (0..1_000).map(|_| plan.draw()).collect();
        assert_eq!(plan.drawn(), 1_000);
        let hits = actions.iter().filter(|a| a.is_some()).count();
        assert_eq!(plan.injected() as usize, hits);
        actions
    };
    assert!(
        draws(Fault::Error, None, 0.0, 1)
            .iter()
            .all(Option::is_none)
    );
    assert!(
        draws(Fault::Reset, None, 1.0, 1)
            .iter()
            .all(|a| *a == Some(FaultAction::Reset))
    );
    assert!(
        draws(Fault::Latency, Some(250), 1.0, 1)
            .iter()
            .all(|a| *a == Some(FaultAction::Latency(Duration::from_millis(250))))
    );
    let some = draws(Fault::Timeout, None, 0.2, 7);
    let hits = some.iter().filter(|a| a.is_some()).count();
    assert!((150..=250).contains(&hits), "{hits}");
    assert!(some.iter().flatten().all(|a| *a == FaultAction::Timeout));
    // Seeded: the same sequence every time; another seed, another sequence.
    assert_eq!(some, draws(Fault::Timeout, None, 0.2, 7));
    assert_ne!(some, draws(Fault::Timeout, None, 0.2, 8));
}

#[test]
fn injected_faults_classify_as_the_real_thing() {
    assert_eq!(
        ErrorClass::from(InjectedFault::Unavailable),
        ErrorClass::Status {
            status: 503,
            retry_after: None
        }
    );
    assert_eq!(ErrorClass::from(InjectedFault::Reset), ErrorClass::Connect);
    for f in [InjectedFault::Unavailable, InjectedFault::Reset] {
        assert!(f.class().retryable() && f.class().counts_as_failure());
    }
}

fn any_spec() -> impl Strategy<Value = ChaosSpec> {
    (
        0..4_usize,
        0..4_usize,
        proptest::option::of(0..=MAX_LATENCY_MS),
        prop_oneof![Just(0.0), Just(1.0), 0.0..=1.0_f64],
        1..=MAX_AHEAD_S,
    )
        .prop_map(|(t, f, ms, p, ahead)| {
            let fault = Fault::ALL[f];
            let ms = if fault == Fault::Latency {
                ms.or(Some(0))
            } else {
                ms
            };
            ChaosSpec::try_new(Target::ALL[t], fault, ms, p, NOW + ahead).unwrap()
        })
}

/// Field soup: known and unknown names, good and bad values, signed with the key so the
/// parser behind the MAC is exercised too.
fn soup() -> impl Strategy<Value = Vec<u8>> {
    let name = prop_oneof![
        Just("target".to_owned()),
        Just("fault".to_owned()),
        Just("ms".to_owned()),
        Just("p".to_owned()),
        Just("exp".to_owned()),
        Just("sig".to_owned()),
        "[a-z=;]{0,6}",
    ];
    let value = prop_oneof![
        Just("core-api".to_owned()),
        Just("latency".to_owned()),
        Just("error".to_owned()),
        Just((NOW + 60).to_string()),
        "[0-9]{0,25}",
        "[0-9]{0,3}\\.[0-9]{0,20}",
        ".{0,12}",
    ];
    proptest::collection::vec((name, value), 0..8).prop_map(|fields| {
        let body: Vec<String> = fields.iter().map(|(n, v)| format!("{n}={v}")).collect();
        signed(&body.join(";"))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1_400)) {
        prop_assert!(check(&bytes).is_err());
    }

    #[test]
    fn signed_soup_never_panics_and_accepts_only_valid_specs(header in soup()) {
        if let Ok(s) = check(&header) {
            prop_assert!((0.0..=1.0).contains(&s.p()));
            prop_assert!(s.ms().is_none_or(|ms| ms <= MAX_LATENCY_MS));
            prop_assert!(s.fault() != Fault::Latency || s.ms().is_some());
            prop_assert!(s.exp() > NOW && s.exp() <= NOW + MAX_AHEAD_S);
        }
    }

    #[test]
    fn sign_then_verify_round_trips(s in any_spec()) {
        prop_assert_eq!(check(s.sign(KEY).unwrap().as_bytes()), Ok(s));
    }

    /// Tampering with any one byte (a field or the signature) is always caught.
    #[test]
    fn any_one_byte_change_is_rejected(s in any_spec(), at in any::<prop::sample::Index>(), to in any::<u8>()) {
        let mut header = s.sign(KEY).unwrap().into_bytes();
        let i = at.index(header.len());
        prop_assume!(header[i] != to);
        header[i] = to;
        prop_assert!(check(&header).is_err());
    }
}
