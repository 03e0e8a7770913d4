//! The signed chaos header and the faults it injects (SPEC §9, seed 004 §9, ARCHITECTURE
//! pitfalls 21–23).
//!
//! - **The format (SPEC §9):** `target=<t>;fault=<f>;ms=<int>;p=<float>;exp=<unix s>;sig=<hex>`.
//!   Fields in any order, `sig` last; `sig` is the lowercase hex HMAC-SHA256 of the exact bytes
//!   before `;sig=` (never a re-serialisation, pitfall 22), compared in constant time
//!   (`hmac`'s `verify_slice`, which uses `subtle`). `target` ∈ [`Target`], `fault` ∈ [`Fault`];
//!   `ms` (an unsigned integer ≤ 30000) is required for `latency` and accepted, unused, for
//!   the other faults; `p` is `DIGITS[.DIGITS]` in [0, 1] and **defaults to 1 when absent**
//!   (SPEC §9 requires only `ms`, and only for latency; a header without `p` means "every
//!   attempt", which is how `fault=error` reads; `kosha-ops chaos sign` always writes it);
//!   `exp` is required (a missing `exp` is never "no expiry", pitfall 22). A duplicated or
//!   unknown field, an empty field, a header over [`MAX_HEADER_BYTES`], non-UTF-8 bytes: all
//!   refused. Nothing is trimmed: HTTP already strips the value's outer whitespace.
//! - **When it refuses, and in what order** ([`Rejection`], stable strings for logs/metrics):
//!   1. [`Gate::check`]: `disabled` (`CHAOS_ENABLED` is not `true`), then `not_operator`. These
//!      are facts about the caller; the header is not looked at, so a stranger or an agent
//!      learns nothing about what a valid header looks like, and no key is fetched for them.
//!   2. [`verify`]: `malformed` if over 1 KiB — the only content check before the MAC, so an
//!      unauthenticated sender cannot make us hash more than 1 KiB;
//!   3. `bad_signature` if there is no `;sig=`, the tag is not exactly 64 lowercase hex
//!      digits (uppercase and truncated tags included), or the MAC does not match;
//!   4. only then `malformed` for the fields (UTF-8, grammar, sets, ranges, duplicates);
//!   5. then `expired` (`now ≥ exp`) and `too_far_ahead` (`exp > now + 900`).
//!
//!   Why the signature comes before everything but the size: a forgery must always be audited
//!   as `bad_signature`. Judged first on expiry or syntax, a forged header would be logged as
//!   a harmless `expired` or `malformed` one, hiding that someone without the key tried; and
//!   were the reason ever to reach the sender, it would become an oracle on our rules and our
//!   clock. After the MAC, the content is known to be written with the operators' key, so
//!   telling a stale or mistyped header apart is useful and safe.
//! - **What it returns:** a [`ChaosSpec`] (plain `Copy` data; verification allocates nothing).
//!   [`ChaosSpec::faults_for`] turns it into a per-call [`Faults`] plan for one dependency:
//!   each attempt draws once from the caller's RNG ([`Faults::draw`]) and injects a
//!   [`FaultAction`] with probability `p`.
//! - **Neighbours:** the policy applies a plan at the dependency-call boundary, inside the
//!   per-attempt timeout and after the breaker ([`crate::policy::Policy::call_with_faults`]),
//!   so breakers, retries, budgets and deadlines see the fault as a real one (pitfall 21). The
//!   crate knows nothing of HTTP: the caller reads the header, supplies `CHAOS_ENABLED` and
//!   the operator role as a [`Gate`], the key bytes (Secrets Manager, cached) and the time.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use kosha_resilience::chaos::{self, ChaosSpec, Fault, Gate, Target};
//! use kosha_resilience::classify::ErrorClass;
//! use kosha_contract::dependency::Dependency;
//! use kosha_resilience::config::{PolicyConfig, Profile};
//! use kosha_resilience::deadline::Deadline;
//! use kosha_resilience::overrides::NoOverrides;
//! use kosha_resilience::policy::{Policy, PolicyError};
//! use kosha_resilience::retry::Idempotency;
//! use rand::SeedableRng;
//! use rand::rngs::SmallRng;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let key = b"the operators' key from Secrets Manager";
//! let now = 1_800_000_000; // epoch seconds
//! // A tester's header (`kosha-ops chaos sign` prints the same).
//! let header = ChaosSpec::try_new(Target::CoreApi, Fault::Error, None, 1.0, now + 300)?.sign(key)?;
//!
//! // Per request, at the edge: caller facts first, then the key, then the header's bytes.
//! Gate { enabled: true, operator: true }.check()?;
//! let spec = chaos::verify(header.as_bytes(), key, now)?;
//! let mut faults = spec.faults_for(Target::CoreApi, SmallRng::from_rng(&mut rand::rng()));
//!
//! // Seed 004 §1, core-api reads: 2 s cap, 3 attempts, bulkhead 32, window 20, open 15 s.
//! let reads = Profile {
//!     attempt_cap: Duration::from_secs(2),
//!     attempt_margin: Duration::from_millis(150),
//!     max_attempts: 3,
//!     bulkhead: 32,
//!     breaker_window: 20,
//!     open_for: Duration::from_secs(15),
//! };
//! let policy = Policy::try_new(
//!     Dependency::CoreApi,
//!     PolicyConfig::from_profile(reads),
//!     Arc::new(NoOverrides),
//! )?;
//! let deadline = Deadline::after(Duration::from_secs(8));
//! let result: Result<u32, PolicyError<ErrorClass>> = policy
//!     .call_with_faults(&deadline, Idempotency::Idempotent, faults.as_mut(), |_| async { Ok(7) })
//!     .await;
//! // Every attempt (the first and the budget floor's one retry) got the injected 503.
//! assert!(matches!(result, Err(PolicyError::Inner(ErrorClass::Status { status: 503, .. }))));
//! assert_eq!(faults.map(|f| f.injected()), Some(2));
//! # Ok(())
//! # }
//! ```

use std::fmt::Write as _;

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub use faults::{FaultAction, Faults, InjectedFault};

mod faults;

/// Longest header value accepted, in bytes; longer is `malformed` (issue 14).
pub const MAX_HEADER_BYTES: usize = 1024;
/// Furthest `exp` may lie ahead of now, in seconds (SPEC §9: 900 s).
pub const MAX_AHEAD_S: u64 = 900;
/// Largest `ms` (SPEC §9: 0–30000).
pub const MAX_LATENCY_MS: u32 = 30_000;

const SIG_SEPARATOR: &[u8] = b";sig=";
const TAG_BYTES: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// Which dependency a header targets (SPEC §9): the dependency names of SPEC §8, one
/// definition in the wire contract. `core-api` and `screening-sim` are applied by the gateway,
/// `openai` and `postgres` by core-api.
pub use kosha_contract::dependency::Dependency as Target;

/// What a header injects (SPEC §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// `latency`: sleep `ms` before the call, counted against the deadline.
    Latency,
    /// `error`: the call fails as if the dependency answered 503.
    Error,
    /// `timeout`: the call hangs until its attempt timeout fires.
    Timeout,
    /// `reset`: a connection error.
    Reset,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Self; 4] = [Self::Latency, Self::Error, Self::Timeout, Self::Reset];

    /// The wire name: `latency`, `error`, `timeout`, `reset`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Latency => "latency",
            Self::Error => "error",
            Self::Timeout => "timeout",
            Self::Reset => "reset",
        }
    }

    /// The fault with wire name `name` (exact, case-sensitive).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

/// Why a header was ignored (SPEC §9). `as_str` (also `Display`) gives the stable string for
/// the `chaos_header_rejected` audit event and the `chaos_rejected` metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Rejection {
    /// `CHAOS_ENABLED` is not `true`.
    #[error("disabled")]
    Disabled,
    /// The principal lacks the `operator` role.
    #[error("not_operator")]
    NotOperator,
    /// No signature, a tag that is not 64 lowercase hex digits, or a MAC mismatch.
    #[error("bad_signature")]
    BadSignature,
    /// `exp` has passed (`now ≥ exp`).
    #[error("expired")]
    Expired,
    /// `exp` more than 900 s ahead.
    #[error("too_far_ahead")]
    TooFarAhead,
    /// Over 1 KiB, or (signed, but) not the grammar of SPEC §9.
    #[error("malformed")]
    Malformed,
}

impl Rejection {
    /// Every reason.
    pub const ALL: [Self; 6] = [
        Self::Disabled,
        Self::NotOperator,
        Self::BadSignature,
        Self::Expired,
        Self::TooFarAhead,
        Self::Malformed,
    ];

    /// The stable string: `disabled`, `not_operator`, `bad_signature`, `expired`,
    /// `too_far_ahead`, `malformed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::NotOperator => "not_operator",
            Self::BadSignature => "bad_signature",
            Self::Expired => "expired",
            Self::TooFarAhead => "too_far_ahead",
            Self::Malformed => "malformed",
        }
    }
}

/// The caller's facts, checked before the header is looked at (SPEC §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// `CHAOS_ENABLED=true` for this function.
    pub enabled: bool,
    /// The principal has the `operator` role.
    pub operator: bool,
}

impl Gate {
    /// `Err(Disabled)` when chaos is off, else `Err(NotOperator)` without the role. Call it
    /// before fetching the key: a refused caller costs no Secrets Manager read.
    pub fn check(self) -> Result<(), Rejection> {
        if !self.enabled {
            return Err(Rejection::Disabled);
        }
        if !self.operator {
            return Err(Rejection::NotOperator);
        }
        Ok(())
    }
}

/// A header's settings that cannot be signed ([`ChaosSpec::try_new`], [`ChaosSpec::sign`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidSpec {
    /// `latency` without `ms`.
    #[error("ms is required for the latency fault")]
    MissingMs,
    /// `ms` above 30000.
    #[error("ms must be between 0 and 30000")]
    MsOutOfRange,
    /// `p` outside [0, 1] (or not a number).
    #[error("p must be between 0 and 1")]
    POutOfRange,
    /// The HMAC implementation refused the key (HMAC-SHA256 takes keys of any length, so this
    /// does not happen; the `hmac` API is fallible).
    #[error("unusable HMAC key")]
    Key,
}

/// A verified (or about to be signed) chaos header. Plain `Copy` data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChaosSpec {
    target: Target,
    fault: Fault,
    ms: Option<u32>,
    p: f64,
    exp: u64,
}

impl ChaosSpec {
    /// A header's settings: `ms` ≤ 30000 and required for `latency`; `p` in [0, 1]; `exp` in
    /// epoch seconds (checked against the clock only by [`verify`]).
    ///
    /// # Errors
    /// [`InvalidSpec`] naming the rule broken.
    pub fn try_new(
        target: Target,
        fault: Fault,
        ms: Option<u32>,
        p: f64,
        exp: u64,
    ) -> Result<Self, InvalidSpec> {
        if fault == Fault::Latency && ms.is_none() {
            return Err(InvalidSpec::MissingMs);
        }
        if ms.is_some_and(|ms| ms > MAX_LATENCY_MS) {
            return Err(InvalidSpec::MsOutOfRange);
        }
        if !(0.0..=1.0).contains(&p) {
            return Err(InvalidSpec::POutOfRange);
        }
        Ok(Self {
            target,
            fault,
            ms,
            // −0.0 would be written as `p=-0`, which verify refuses.
            p: if p == 0.0 { 0.0 } else { p },
            exp,
        })
    }

    /// The dependency it targets.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The fault it injects.
    pub fn fault(&self) -> Fault {
        self.fault
    }

    /// `ms` as given (always present for `latency`).
    pub fn ms(&self) -> Option<u32> {
        self.ms
    }

    /// Probability per attempt, in [0, 1].
    pub fn p(&self) -> f64 {
        self.p
    }

    /// Expiry, epoch seconds.
    pub fn exp(&self) -> u64 {
        self.exp
    }

    /// The signed header value, fields in SPEC §9's order:
    /// `target=…;fault=…[;ms=…];p=…;exp=…;sig=<64 lowercase hex>`. `p` is written in Rust's
    /// shortest round-trip decimal form (`0.2`, `1`), which [`verify`] reads back exactly.
    ///
    /// # Errors
    /// [`InvalidSpec::Key`] only (see there).
    pub fn sign(&self, key: &[u8]) -> Result<String, InvalidSpec> {
        let mut header = format!(
            "target={};fault={}",
            self.target.as_str(),
            self.fault.as_str()
        );
        if let Some(ms) = self.ms {
            let _ = write!(header, ";ms={ms}");
        }
        let _ = write!(header, ";p={};exp={}", self.p, self.exp);
        let mut mac = HmacSha256::new_from_slice(key).map_err(|_| InvalidSpec::Key)?;
        mac.update(header.as_bytes());
        header.push_str(";sig=");
        for byte in mac.finalize().into_bytes() {
            let _ = write!(header, "{byte:02x}");
        }
        Ok(header)
    }
}

/// Verifies a header value (its raw bytes) with `key` at `now_s` (epoch seconds), in the order
/// of the module docs. Call [`Gate::check`] first. Allocates nothing.
///
/// # Errors
/// [`Rejection::Malformed`], [`Rejection::BadSignature`], [`Rejection::Expired`] or
/// [`Rejection::TooFarAhead`].
pub fn verify(header: &[u8], key: &[u8], now_s: u64) -> Result<ChaosSpec, Rejection> {
    if header.len() > MAX_HEADER_BYTES {
        return Err(Rejection::Malformed);
    }
    let at = header
        .windows(SIG_SEPARATOR.len())
        .rposition(|w| w == SIG_SEPARATOR)
        .ok_or(Rejection::BadSignature)?;
    let (signed, rest) = header.split_at(at);
    let tag = decode_tag(rest.get(SIG_SEPARATOR.len()..).unwrap_or_default())
        .ok_or(Rejection::BadSignature)?;
    let mut mac = HmacSha256::new_from_slice(key).map_err(|_| Rejection::BadSignature)?;
    mac.update(signed);
    mac.verify_slice(&tag)
        .map_err(|_| Rejection::BadSignature)?;
    // Signed with the operators' key from here on.
    let text = std::str::from_utf8(signed).map_err(|_| Rejection::Malformed)?;
    let spec = parse_fields(text)?;
    if now_s >= spec.exp {
        return Err(Rejection::Expired);
    }
    if spec.exp - now_s > MAX_AHEAD_S {
        return Err(Rejection::TooFarAhead);
    }
    Ok(spec)
}

/// Exactly 64 lowercase hex digits → 32 bytes.
fn decode_tag(hex: &[u8]) -> Option<[u8; TAG_BYTES]> {
    if hex.len() != 2 * TAG_BYTES {
        return None;
    }
    let mut tag = [0_u8; TAG_BYTES];
    for (byte, pair) in tag.iter_mut().zip(hex.chunks_exact(2)) {
        let [hi, lo] = pair else { return None };
        *byte = (nibble(*hi)? << 4) | nibble(*lo)?;
    }
    Some(tag)
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// The fields before `;sig=`: `name=value` separated by `;`, each name at most once.
fn parse_fields(text: &str) -> Result<ChaosSpec, Rejection> {
    let (mut target, mut fault, mut ms, mut p, mut exp) = (None, None, None, None, None);
    for field in text.split(';') {
        let (name, value) = field.split_once('=').ok_or(Rejection::Malformed)?;
        match name {
            "target" => set_once(&mut target, Target::parse(value))?,
            "fault" => set_once(&mut fault, Fault::parse(value))?,
            "ms" => set_once(&mut ms, digits(value).and_then(|v| u32::try_from(v).ok()))?,
            "p" => set_once(&mut p, probability(value))?,
            "exp" => set_once(&mut exp, digits(value))?,
            _ => return Err(Rejection::Malformed),
        }
    }
    let (Some(target), Some(fault), Some(exp)) = (target, fault, exp) else {
        return Err(Rejection::Malformed);
    };
    ChaosSpec::try_new(target, fault, ms, p.unwrap_or(1.0), exp).map_err(|_| Rejection::Malformed)
}

/// Stores a parsed value; a second occurrence or an unparsable value is malformed.
fn set_once<T>(slot: &mut Option<T>, value: Option<T>) -> Result<(), Rejection> {
    if slot.is_some() {
        return Err(Rejection::Malformed);
    }
    *slot = Some(value.ok_or(Rejection::Malformed)?);
    Ok(())
}

/// `DIGITS` as a u64 (no sign: `str::parse` alone would accept `+5`).
fn digits(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// `DIGITS[.DIGITS]` in [0, 1] (no sign, exponent, `inf` or `NaN`, which `f64::from_str` takes).
fn probability(value: &str) -> Option<f64> {
    let (whole, frac) = value.split_once('.').unwrap_or((value, "0"));
    let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !plain(whole) || !plain(frac) {
        return None;
    }
    value.parse().ok().filter(|p| (0.0..=1.0).contains(p))
}

#[cfg(test)]
mod tests;
