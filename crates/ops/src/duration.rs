//! `--ttl` values: a whole number with a unit, `900s`, `30m`, `2h`, `1d` (a bare number is
//! seconds).

use std::time::Duration;

/// Longest `--ttl` accepted (tokens, breaker overrides).
pub const MAX_TTL: Duration = Duration::from_secs(30 * 86_400);

/// Parses a `--ttl` between 1 s and [`MAX_TTL`]; for clap's `value_parser`.
pub fn parse_ttl(text: &str) -> Result<Duration, String> {
    let ttl = parse_duration(text)?;
    if ttl > MAX_TTL {
        return Err(format!("{text:?}: ttl must be between 1s and 30d"));
    }
    Ok(ttl)
}

/// Parses a duration like `30m`; for clap's `value_parser`.
pub fn parse_duration(raw: &str) -> Result<Duration, String> {
    let raw = raw.trim();
    let (digits, unit) = raw.split_at(raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("invalid duration {raw:?}: expected e.g. 900s, 30m, 2h, 1d"))?;
    let per = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "invalid duration {raw:?}: unit must be s, m, h or d"
            ));
        }
    };
    if n == 0 {
        return Err(format!("invalid duration {raw:?}: must be positive"));
    }
    n.checked_mul(per)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("invalid duration {raw:?}: too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration("900s"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1_800)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7_200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
    }

    #[test]
    fn refusals() {
        for bad in ["", "m", "10x", "-5m", "0s", "1.5h", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
