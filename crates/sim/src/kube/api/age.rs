//! Ages as kubectl shows them: Go's `duration.HumanDuration` of the time since an object's
//! `creationTimestamp` (or a container's last termination).

use serde_json::Value;

pub use talm_base::humanize::human_duration;

/// Seconds since the Unix epoch of an RFC 3339 UTC timestamp (`2026-01-02T03:04:05Z`).
pub fn unix_of(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let n = |r: std::ops::Range<usize>| ts.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, mi, s) = (n(11..13)?, n(14..16)?, n(17..19)?);
    let month = time::Month::try_from(u8::try_from(mo).ok()?).ok()?;
    let date = time::Date::from_calendar_date(i32::try_from(y).ok()?, month, u8::try_from(d).ok()?)
        .ok()?;
    let t = time::Time::from_hms(h as u8, mi as u8, s as u8).ok()?;
    Some(
        time::PrimitiveDateTime::new(date, t)
            .assume_utc()
            .unix_timestamp(),
    )
}

/// The AGE of an object at `now` (Unix seconds).
pub fn age(obj: &Value, now: i64) -> String {
    match obj["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(unix_of)
    {
        Some(t) => human_duration(now - t),
        None => "<unknown>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_as_unix_seconds() {
        assert_eq!(unix_of("1970-01-02T00:00:10Z"), Some(86410));
    }
}
