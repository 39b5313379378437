//! Values as talosctl prints them: go-humanize's `Bytes` (SI) and `IBytes` (binary) sizes and
//! relative `Time`, Go's `Time.String()` and `fmt` layouts (`Jan _2 15:04:05`), durations
//! rounded to seconds, and Go `os.FileMode` strings (`drwxr-xr-x`).

use std::time::Duration;

fn humanate(s: u64, base: f64, sizes: &[&str]) -> String {
    if s < 10 {
        return format!("{s} B");
    }
    let e = ((s as f64).ln() / base.ln()).floor();
    let suffix = sizes[(e as usize).min(sizes.len() - 1)];
    let val = ((s as f64) / base.powf(e) * 10.0 + 0.5).floor() / 10.0;
    if val < 10.0 {
        format!("{val:.1} {suffix}")
    } else {
        format!("{val:.0} {suffix}")
    }
}

/// go-humanize `Bytes`: `82 B`, `1.2 kB`, `450 MB`.
pub fn bytes(s: u64) -> String {
    humanate(s, 1000.0, &["B", "kB", "MB", "GB", "TB", "PB", "EB"])
}

/// go-humanize `IBytes`: `82 B`, `1.2 KiB`, `450 MiB`.
pub fn ibytes(s: u64) -> String {
    humanate(s, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"])
}

/// go-humanize `Time`: how long ago `then` was from `now` (Unix seconds), e.g. `3 minutes ago`.
pub fn relative(then: f64, now: f64) -> String {
    const S: f64 = 1.0;
    const MIN: f64 = 60.0;
    const H: f64 = 3600.0;
    const DAY: f64 = 24.0 * H;
    const WEEK: f64 = 7.0 * DAY;
    const MONTH: f64 = 30.0 * DAY;
    const YEAR: f64 = 12.0 * MONTH;
    const LONG: f64 = 37.0 * YEAR;
    // (below this, format, divided by)
    let mags: [(f64, &str, f64); 17] = [
        (S, "now", S),
        (2.0 * S, "1 second %s", 0.0),
        (MIN, "%d seconds %s", S),
        (2.0 * MIN, "1 minute %s", 0.0),
        (H, "%d minutes %s", MIN),
        (2.0 * H, "1 hour %s", 0.0),
        (DAY, "%d hours %s", H),
        (2.0 * DAY, "1 day %s", 0.0),
        (WEEK, "%d days %s", DAY),
        (2.0 * WEEK, "1 week %s", 0.0),
        (MONTH, "%d weeks %s", WEEK),
        (2.0 * MONTH, "1 month %s", 0.0),
        (YEAR, "%d months %s", MONTH),
        (18.0 * MONTH, "1 year %s", 0.0),
        (2.0 * YEAR, "2 years %s", 0.0),
        (LONG, "%d years %s", YEAR),
        (f64::MAX, "a long while %s", 0.0),
    ];
    let (label, diff) = if then > now {
        ("from now", then - now)
    } else {
        ("ago", now - then)
    };
    // Go works in whole nanoseconds.
    let diff = (diff * 1e9).floor() / 1e9;
    let (_, fmt, div) = mags.iter().find(|(d, _, _)| *d > diff).unwrap_or(&mags[16]);
    let n = if *div > 0.0 {
        (diff / div).floor() as u64
    } else {
        0
    };
    fmt.replace("%d", &n.to_string()).replace("%s", label)
}

fn utc(secs: i64, nanos: u32) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(secs)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        .replace_nanosecond(nanos.min(999_999_999))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Go's `Time.String()` of a UTC time: `2026-08-01 10:00:00.123456789 +0000 UTC` (trailing
/// zeros of the fraction dropped).
pub fn go_time(secs: i64, nanos: u32) -> String {
    let t = utc(secs, nanos);
    let mut frac = String::new();
    if t.nanosecond() > 0 {
        frac = format!(".{:09}", t.nanosecond())
            .trim_end_matches('0')
            .to_string();
    }
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}{frac} +0000 UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// When the process started, for the monotonic reading of [`go_now`].
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Notes the process start (the origin of Go's monotonic clock reading).
pub fn mark_start() {
    STARTED.get_or_init(std::time::Instant::now);
}

/// Go's `time.Now().String()` in UTC: the wall clock, then the monotonic reading since the
/// process started, `2026-12-01 14:40:00.123456789 +0000 UTC m=+0.012345678`.
pub fn go_now() -> String {
    let since = STARTED.get_or_init(std::time::Instant::now).elapsed();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = i64::try_from(wall.as_secs()).unwrap_or(0);
    format!(
        "{} m=+{}.{:09}",
        go_time(secs, wall.subsec_nanos()),
        since.as_secs(),
        since.subsec_nanos()
    )
}

/// RFC 3339 in UTC with whole seconds: `2026-08-01T10:00:00Z`.
pub fn rfc3339(secs: i64) -> String {
    let t = utc(secs, 0);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// The local time zone's offset at `secs`, UTC when it cannot be known.
fn local(secs: i64) -> time::OffsetDateTime {
    let t = utc(secs, 0);
    match time::UtcOffset::local_offset_at(t) {
        Ok(off) => t.to_offset(off),
        Err(_) => t,
    }
}

/// `talosctl list -l`'s modification time in local time: `Jan _2 15:04:05` when less than 180
/// days before `now`, else `Jan _2 2006 15:04`.
pub fn ls_time(secs: i64, now: f64) -> String {
    let t = local(secs);
    let month = MONTHS[usize::from(u8::from(t.month())) - 1];
    if now - (secs as f64) < 180.0 * 24.0 * 3600.0 {
        format!(
            "{month} {:>2} {:02}:{:02}:{:02}",
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
    } else {
        format!(
            "{month} {:>2} {:04} {:02}:{:02}",
            t.day(),
            t.year(),
            t.hour(),
            t.minute()
        )
    }
}

/// `time.Since(then).Round(time.Second).String()`: `19m27s`.
pub fn since_rounded(then: f64, now: f64) -> String {
    let d = (now - then).max(0.0);
    let secs = (d + 0.5).floor();
    crate::duration::text(Duration::from_secs_f64(secs))
}

/// Go's `os.FileMode.String()`: type letters (`dalTLDpSugct?`) or `-`, then `rwxrwxrwx`.
pub fn file_mode(mode: u32) -> String {
    const LETTERS: &[u8] = b"dalTLDpSugct?";
    let mut out = String::new();
    for (i, c) in LETTERS.iter().enumerate() {
        if mode & (1 << (31 - i)) != 0 {
            out.push(*c as char);
        }
    }
    if out.is_empty() {
        out.push('-');
    }
    const RWX: &[u8] = b"rwxrwxrwx";
    for (i, c) in RWX.iter().enumerate() {
        out.push(if mode & (1 << (8 - i)) != 0 {
            *c as char
        } else {
            '-'
        });
    }
    out
}

/// SI size text as Talos prints it (`34 GB`, `1.0 TB`, `512 MB`).
pub fn pretty_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1000.0 && i < UNITS.len() - 1 {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        return format!("{bytes} B");
    }
    if v < 10.0 {
        format!("{v:.1} {}", UNITS[i])
    } else {
        format!("{v:.0} {}", UNITS[i])
    }
}

/// Go's `duration.HumanDuration` (k8s.io/apimachinery): kubectl's AGE column.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{d}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_go_humanize() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(9), "9 B");
        assert_eq!(bytes(82), "82 B");
        assert_eq!(bytes(1000), "1.0 kB");
        assert_eq!(bytes(1_234), "1.2 kB");
        assert_eq!(bytes(12_345), "12 kB");
        assert_eq!(bytes(1_000_000), "1.0 MB");
        assert_eq!(bytes(450_000_000), "450 MB");
        assert_eq!(ibytes(1024), "1.0 KiB");
        assert_eq!(ibytes(134_217_728), "128 MiB");
        assert_eq!(ibytes(5), "5 B");
    }

    #[test]
    fn relative_times_as_go_humanize() {
        let now = 1_000_000.0;
        assert_eq!(relative(now - 0.5, now), "now");
        assert_eq!(relative(now - 1.0, now), "1 second ago");
        assert_eq!(relative(now - 59.0, now), "59 seconds ago");
        assert_eq!(relative(now - 61.0, now), "1 minute ago");
        assert_eq!(relative(now - 3.0 * 3600.0, now), "3 hours ago");
        assert_eq!(relative(now - 10.0 * 86400.0, now), "1 week ago");
        assert_eq!(relative(now + 120.0, now), "2 minutes from now");
    }

    #[test]
    fn go_layouts() {
        assert_eq!(
            go_time(1_785_578_400, 123_456_789),
            "2026-08-01 10:00:00.123456789 +0000 UTC"
        );
        assert_eq!(
            go_time(1_785_578_400, 120_000_000),
            "2026-08-01 10:00:00.12 +0000 UTC"
        );
        assert_eq!(go_time(1_785_578_400, 0), "2026-08-01 10:00:00 +0000 UTC");
        assert_eq!(rfc3339(1_785_578_400), "2026-08-01T10:00:00Z");
        assert_eq!(since_rounded(100.0, 1267.5), "19m28s");
        assert_eq!(since_rounded(100.0, 100.2), "0s");
        assert_eq!(file_mode(0o755 | 1 << 31), "drwxr-xr-x");
        assert_eq!(file_mode(0o644), "-rw-r--r--");
        assert_eq!(file_mode(0o777 | 1 << 27), "Lrwxrwxrwx");
        assert_eq!(file_mode(0o666 | 1 << 26 | 1 << 21), "Dcrw-rw-rw-");
        assert_eq!(file_mode(0o777 | 1 << 31 | 1 << 20), "dtrwxrwxrwx");
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        for (secs, want) in [
            (5, "5s"),
            (119, "119s"),
            (125, "2m5s"),
            (240, "4m"),
            (600, "10m"),
            (3 * 3600 + 5 * 60, "3h5m"),
            (20 * 3600, "20h"),
            (3 * 86400 + 3600, "3d1h"),
            (30 * 86400, "30d"),
            (3 * 365 * 86400, "3y"),
        ] {
            assert_eq!(human_duration(secs), want, "{secs}");
        }
    }
}
