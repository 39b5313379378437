//! Go duration text (`1m30s`, `500ms`, `1.5h`) read and written as Go's `time` package does,
//! within Go's range, and the one check every duration flag and script option passes where it
//! enters: a clear error for text that is no duration, a negative one, zero where zero makes
//! no sense, or one past Go's longest (which would overflow deadlines further down).

use std::time::Duration;

use crate::error::hinted;

/// The longest duration Go has: 2^63-1 nanoseconds (about 292 years).
pub const MAX: Duration = Duration::new(9_223_372_036, 854_775_807);
const MAX_TEXT: &str = "2562047h47m16.854775807s";
const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Why a text is not a usable duration; the first three read as Go's `time.ParseDuration`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    #[error("time: unknown unit {unit:?} in duration {text:?}")]
    UnknownUnit { unit: String, text: String },
    #[error("{0:?} is negative")]
    Negative(String),
    #[error("{0:?} is longer than the longest duration, {MAX_TEXT}")]
    TooLong(String),
}

fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => NANOS_PER_SEC,
        "m" => 60 * NANOS_PER_SEC,
        "h" => 3_600 * NANOS_PER_SEC,
        _ => return None,
    })
}

/// Parses Go duration text (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`) as `time.ParseDuration`
/// does, with exact integer arithmetic. Negative durations and those past [`MAX`] are errors.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid(text.to_string());
    let too_long = || DurationError::TooLong(text.to_string());
    let (negative, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let mut total: u128 = 0;
    while !s.is_empty() {
        if !(s.starts_with('.') || s.as_bytes()[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let whole = &s[..digits(s)];
        s = &s[whole.len()..];
        let mut fraction = "";
        if let Some(rest) = s.strip_prefix('.') {
            fraction = &rest[..digits(rest)];
            s = &rest[fraction.len()..];
        }
        if whole.is_empty() && fraction.is_empty() {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .take_while(|c| *c != b'.' && !c.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(text.to_string()));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let per = unit_nanos(unit).ok_or_else(|| DurationError::UnknownUnit {
            unit: unit.to_string(),
            text: text.to_string(),
        })?;
        let whole = whole.bytes().try_fold(0u128, |acc, c| {
            acc.checked_mul(10)?
                .checked_add(u128::from(c - b'0'))
                .filter(|v| *v <= u128::from(u64::MAX))
        });
        let whole = whole.ok_or_else(too_long)?;
        // Digits past the 20th add less than a nanosecond, even to hours.
        let fraction = &fraction[..fraction.len().min(20)];
        let scale = 10u128.pow(fraction.len() as u32);
        let fraction = fraction
            .bytes()
            .fold(0u128, |acc, c| acc * 10 + u128::from(c - b'0'));
        total += whole * per + fraction * per / scale;
        if total > MAX.as_nanos() {
            return Err(too_long());
        }
    }
    if negative && total > 0 {
        return Err(DurationError::Negative(text.to_string()));
    }
    Ok(Duration::new(
        (total / NANOS_PER_SEC) as u64,
        (total % NANOS_PER_SEC) as u32,
    ))
}

/// `v`'s last `prec` decimal digits as `.ddd` without trailing zeros ("" when they are all
/// zero), and what is left of `v`.
fn fraction(v: u128, prec: u32) -> (String, u128) {
    let scale = 10u128.pow(prec);
    let digits = format!("{:0width$}", v % scale, width = prec as usize);
    let digits = digits.trim_end_matches('0');
    let text = if digits.is_empty() {
        String::new()
    } else {
        format!(".{digits}")
    };
    (text, v / scale)
}

/// Go's `Duration.String()`: `0s`, `1.5µs`, `500ms`, `1.5s`, `1m0s`, `2h0m0s`.
pub fn text(d: Duration) -> String {
    let n = d.as_nanos();
    if n == 0 {
        return "0s".into();
    }
    if n < NANOS_PER_SEC {
        let (unit, prec) = if n < 1_000 {
            ("ns", 0)
        } else if n < 1_000_000 {
            ("\u{b5}s", 3)
        } else {
            ("ms", 6)
        };
        let (frac, whole) = fraction(n, prec);
        return format!("{whole}{frac}{unit}");
    }
    let (frac, secs) = fraction(n, 9);
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    match (h, secs / 60) {
        (0, 0) => format!("{s}{frac}s"),
        (0, _) => format!("{m}m{s}{frac}s"),
        _ => format!("{h}h{m}m{s}{frac}s"),
    }
}

/// The time since a timestamp (seconds and nanoseconds since the Unix epoch, as a protobuf
/// `Timestamp` holds them), rounded to the second, as Go prints it
/// (`time.Since(ts).Round(time.Second)`); no timestamp counts as the Unix epoch.
pub fn since(ts: Option<(i64, i32)>) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let then = ts.map_or(0.0, |(secs, nanos)| secs as f64 + f64::from(nanos) / 1e9);
    let secs = (now.as_secs_f64() - then).round();
    let t = text(Duration::from_secs(secs.abs() as u64));
    if secs < 0.0 && t != "0s" {
        format!("-{t}")
    } else {
        t
    }
}

/// Whole or fractional seconds (a script's number) as a duration, within Go's range.
pub fn from_seconds(secs: f64) -> Result<Duration, DurationError> {
    if secs.is_nan() {
        return Err(DurationError::Invalid(format!("{secs}")));
    }
    if secs < 0.0 {
        return Err(DurationError::Negative(format!("{secs} seconds")));
    }
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| *d <= MAX)
        .ok_or_else(|| DurationError::TooLong(format!("{secs} seconds")))
}

/// Whether zero is a meaningful value of a duration; when it is not, the hint says what to do.
#[derive(Debug, Clone, Copy)]
pub enum Zero {
    Allowed,
    Refused(&'static str),
}

/// A duration as the user gave it to `name` (a flag such as `--call-timeout`, or a script
/// option key), checked: errors name `name` and the text, with a hint.
pub fn checked(
    name: &str,
    given: &str,
    d: Result<Duration, DurationError>,
    zero: Zero,
) -> anyhow::Result<Duration> {
    match (d, zero) {
        (Ok(d), Zero::Refused(hint)) if d.is_zero() => Err(hinted(
            format!("{name} {given:?} is zero, which leaves no time at all"),
            hint,
        )),
        (Ok(d), _) => Ok(d),
        (Err(DurationError::TooLong(_)), _) => Err(hinted(
            format!("{name} {given:?} is too long: the longest duration is {MAX_TEXT} (about 292 years)"),
            "give a shorter duration, such as 10m or 1h",
        )),
        (Err(DurationError::Negative(_)), _) => Err(hinted(
            format!("{name} {given:?} is negative"),
            "give a positive duration, such as 30s or 2m",
        )),
        (Err(e), _) => Err(hinted(
            format!("{name} {given:?} is not a duration: {e}"),
            "give Go duration text such as 30s, 2m or 1m30s",
        )),
    }
}

/// A duration flag's text, parsed and checked (see [`checked`]).
pub fn flag(name: &str, given: &str, zero: Zero) -> anyhow::Result<Duration> {
    checked(name, given, parse(given), zero)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_rounds_to_the_second() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let ts = (now.as_secs() as i64 - 1167, 0);
        assert!(["19m27s", "19m28s"].contains(&since(Some(ts)).as_str()));
        let later = (now.as_secs() as i64 + 3600, 0);
        assert!(["-1h0m0s", "-59m59s"].contains(&since(Some(later)).as_str()));
    }

    #[test]
    fn go_texts() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(1), "1ns"),
            (Duration::from_nanos(1_500), "1.5\u{b5}s"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_secs(60), "1m0s"),
            (Duration::from_secs(7200), "2h0m0s"),
            (Duration::new(3723, 1), "1h2m3.000000001s"),
            (MAX, MAX_TEXT),
        ];
        for (d, t) in cases {
            assert_eq!(text(d), t);
            assert_eq!(parse(t), Ok(d), "{t}");
        }
    }

    #[test]
    fn go_parsing() {
        let ok = [
            ("1m30s", Duration::from_secs(90)),
            ("0", Duration::ZERO),
            ("-0s", Duration::ZERO),
            ("+5s", Duration::from_secs(5)),
            ("1.5h", Duration::from_secs(5400)),
            (".5s", Duration::from_millis(500)),
            ("1.s", Duration::from_secs(1)),
            ("2us", Duration::from_micros(2)),
            ("2\u{3bc}s", Duration::from_micros(2)),
            ("1h1h", Duration::from_secs(7200)),
            (
                "0.333333333333333333333333333h",
                Duration::from_nanos(1_199_999_999_999),
            ),
        ];
        for (t, d) in ok {
            assert_eq!(parse(t), Ok(d), "{t}");
        }
        let invalid = |t: &str| DurationError::Invalid(t.into());
        assert_eq!(parse(""), Err(invalid("")));
        assert_eq!(parse("."), Err(invalid(".")));
        assert_eq!(parse(".s"), Err(invalid(".s")));
        assert_eq!(parse("s"), Err(invalid("s")));
        assert_eq!(parse("10"), Err(DurationError::MissingUnit("10".into())));
        assert_eq!(
            parse("3x"),
            Err(DurationError::UnknownUnit {
                unit: "x".into(),
                text: "3x".into()
            })
        );
        assert_eq!(parse("-1s"), Err(DurationError::Negative("-1s".into())));
        for t in [
            "99999999999h",
            "2562048h",
            "99999999999999999999999s",
            "1e30s",
        ] {
            assert!(
                matches!(
                    parse(t),
                    Err(DurationError::TooLong(_) | DurationError::UnknownUnit { .. })
                ),
                "{t}"
            );
        }
        assert_eq!(
            parse("2562048h"),
            Err(DurationError::TooLong("2562048h".into()))
        );
    }

    #[test]
    fn seconds_from_scripts() {
        assert_eq!(from_seconds(1.5), Ok(Duration::from_millis(1500)));
        assert!(matches!(
            from_seconds(-1.0),
            Err(DurationError::Negative(_))
        ));
        assert!(matches!(
            from_seconds(f64::NAN),
            Err(DurationError::Invalid(_))
        ));
        assert!(matches!(from_seconds(1e30), Err(DurationError::TooLong(_))));
        assert!(matches!(
            from_seconds(f64::INFINITY),
            Err(DurationError::TooLong(_))
        ));
        assert!(matches!(
            from_seconds(i64::MAX as f64),
            Err(DurationError::TooLong(_))
        ));
    }

    #[test]
    fn flag_messages() {
        let msg = |t: &str, z| flag("--timeout", t, z).unwrap_err().to_string();
        assert_eq!(
            msg("0s", Zero::Refused("h")),
            "--timeout \"0s\" is zero, which leaves no time at all"
        );
        assert!(flag("--reboot-delay", "0s", Zero::Allowed).is_ok());
        assert!(msg("99999999h", Zero::Allowed).contains("is too long"));
        assert!(msg("soon", Zero::Allowed).starts_with("--timeout \"soon\" is not a duration"));
        assert!(msg("-3s", Zero::Allowed).contains("is negative"));
    }
}
