//! Durations on the command line: a positive integer and a unit, `s`, `m`, `h` or `d`
//! (`3600s`, `30m`, `12h`, `7d`); a bare integer is seconds.

use std::time::Duration;

/// Parses `12h`, `30m`, `3600s`, `2d` or `90`. Usable as a clap `value_parser`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 12h, 30m or 3600s"))?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: unit must be s, m, h or d")),
    };
    value
        .checked_mul(scale)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1_800)));
        assert_eq!(parse_duration("3600s"), Ok(Duration::from_secs(3_600)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
    }

    #[test]
    fn rejects_junk() {
        for bad in [
            "",
            "h",
            "12x",
            "-5m",
            "1.5h",
            "12 h",
            "99999999999999999999d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }
}
