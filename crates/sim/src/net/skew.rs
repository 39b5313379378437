//! The `clock_skew` fault: a node whose clock is off by a signed duration. Its server
//! certificate is issued for a window around the time it believes it is, and it judges client
//! certificates by that time (a Go TLS server refuses one outside its window with the alert
//! `certificate_expired`).

use serde::Deserialize;
use time::{Duration, OffsetDateTime};

/// How far a node's clock is ahead (positive) or behind (negative) this machine's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skew(pub Duration);

const SECS_PER_DAY: i64 = 24 * 3600;

impl Skew {
    /// The node's idea of the current time.
    pub fn now(self) -> OffsetDateTime {
        OffsetDateTime::now_utc() + self.0
    }

    /// `t` (this machine's time) as the node's clock shows it.
    pub fn shift(self, t: rustls::pki_types::UnixTime) -> rustls::pki_types::UnixTime {
        let secs = (t.as_secs() as i64).saturating_add(self.0.whole_seconds());
        rustls::pki_types::UnixTime::since_unix_epoch(std::time::Duration::from_secs(
            secs.max(0) as u64
        ))
    }

    /// The skew in seconds, for clocks kept as floating-point seconds.
    pub fn seconds(self) -> f64 {
        self.0.as_seconds_f64()
    }

    /// Reads `[+-]` then Go duration text, with `d` (24h) and `y` (365d) as units too:
    /// `-48h`, `+10y`, `1d12h`, `90m`.
    pub fn parse(text: &str) -> Result<Skew, String> {
        let bad =
            |why: &str| format!("the clock skew {text:?} {why} (give e.g. -48h, +10y or 90m)");
        let (negative, body) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        if body.is_empty() {
            return Err(bad("is empty"));
        }
        // Whole days and years are taken here; the rest is Go duration text.
        let mut days: i64 = 0;
        let mut rest = String::new();
        let mut s = body;
        while !s.is_empty() {
            let number = s
                .bytes()
                .take_while(|c| c.is_ascii_digit() || *c == b'.')
                .count();
            let unit = s[number..]
                .bytes()
                .take_while(|c| !c.is_ascii_digit() && *c != b'.')
                .count();
            let (n, u) = (&s[..number], &s[number..number + unit]);
            match u {
                "d" | "y" => {
                    let n: i64 = n
                        .parse()
                        .map_err(|_| bad("takes whole days and years only"))?;
                    let per = if u == "y" { 365 } else { 1 };
                    days = n
                        .checked_mul(per)
                        .and_then(|d| days.checked_add(d))
                        .filter(|d| *d <= 100_000 * 365)
                        .ok_or_else(|| bad("is too long"))?;
                }
                _ => rest.push_str(&s[..number + unit]),
            }
            s = &s[number + unit..];
        }
        let within = if rest.is_empty() {
            std::time::Duration::ZERO
        } else {
            talm_base::duration::parse(&rest)
                .map_err(|e| bad(&format!("is not a signed duration: {e}")))?
        };
        let total = Duration::seconds(days * SECS_PER_DAY)
            + Duration::try_from(within).map_err(|_| bad("is too long"))?;
        Ok(Skew(if negative { -total } else { total }))
    }
}

impl<'de> Deserialize<'de> for Skew {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Skew, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Skew;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a signed duration such as -48h or +10y")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Skew, E> {
                Skew::parse(text).map_err(E::custom)
            }
        }
        d.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_signed_durations_with_days_and_years() {
        let p = |t| Skew::parse(t).map(|s| s.0);
        assert_eq!(p("-48h"), Ok(Duration::hours(-48)));
        assert_eq!(p("+10y"), Ok(Duration::days(3650)));
        assert_eq!(p("1d12h30m"), Ok(Duration::minutes(36 * 60 + 30)));
        assert_eq!(p("90s"), Ok(Duration::seconds(90)));
        assert_eq!(
            p("-1.5d"),
            Err("the clock skew \"-1.5d\" takes whole days and years only (give e.g. -48h, +10y or 90m)".into())
        );
        assert_eq!(
            p("soon"),
            Err("the clock skew \"soon\" is not a signed duration: time: invalid duration \"soon\" (give e.g. -48h, +10y or 90m)".into())
        );
        assert!(p("").is_err() && p("-").is_err());
        let f: crate::net::faults::Faults = serde_yaml_ng::from_str("clock_skew: -2h\n").unwrap();
        assert_eq!(f.clock_skew, Some(Skew(Duration::hours(-2))));
        let err = serde_yaml_ng::from_str::<crate::net::faults::Faults>("clock_skew: 3 weeks\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("clock_skew: the clock skew \"3 weeks\""),
            "{err}"
        );
    }

    #[test]
    fn shifts_the_time_it_judges_by() {
        let t = rustls::pki_types::UnixTime::since_unix_epoch(std::time::Duration::from_secs(1000));
        assert_eq!(Skew(Duration::seconds(-400)).shift(t).as_secs(), 600);
        assert_eq!(Skew(Duration::seconds(-4000)).shift(t).as_secs(), 0);
    }
}
