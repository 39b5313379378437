//! How the dashboard writes numbers, as talosctl's header does: uptime as a Go duration with a
//! day prefix, CPU clock in MHz/GHz, memory in binary units (go-humanize's `IBytes`), shares
//! as `12.3%`, and the text bars of the gauges.

use std::time::Duration;

use super::model::Cpus;

/// Shown where a value is not known (yet).
pub const NOT_AVAILABLE: &str = "n/a";

/// Time since `boot` (Unix seconds) at `now`: `3m12s`, `5h0m7s`, `2d3h4m5s`.
pub fn uptime(now: u64, boot: u64) -> String {
    let secs = now.saturating_sub(boot);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let text = talm_base::duration::text(Duration::from_secs(rest));
    if days > 0 {
        format!("{days}d{text}")
    } else {
        text
    }
}

/// `4x2.45GHz`, `2x800MHz`: the count and the clock rounded to the MHz, or to 10 MHz in GHz
/// with trailing zeros dropped.
pub fn cpus(c: &Cpus) -> String {
    let mhz = c.mhz.round();
    let clock = if mhz >= 1000.0 {
        let ghz = (mhz / 1000.0 * 100.0).round() / 100.0;
        format!("{}GHz", trim_float(ghz))
    } else {
        format!("{}MHz", trim_float(mhz))
    };
    format!("{}x{clock}", c.count)
}

/// A float without trailing zeros (`2.5`, `2`, `2.45`).
fn trim_float(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// go-humanize's `IBytes`: `512 B`, `7.8 GiB`, `16 GiB`.
pub fn ibytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 10 {
        return format!("{bytes} B");
    }
    let b = bytes as f64;
    let e = (b.ln() / 1024f64.ln()).floor() as usize;
    let e = e.min(UNITS.len() - 1);
    let val = (b / 1024f64.powi(e as i32) * 10.0 + 0.5).floor() / 10.0;
    if val < 10.0 {
        format!("{val:.1} {}", UNITS[e])
    } else {
        format!("{val:.0} {}", UNITS[e])
    }
}

/// go-humanize's `Bytes` (powers of 1000): `0 B`, `512 kB`, `8.6 GB`.
pub fn bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes < 10 {
        return format!("{bytes} B");
    }
    let b = bytes as f64;
    let e = ((b.ln() / 1000f64.ln()).floor() as usize).min(UNITS.len() - 1);
    let val = (b / 1000f64.powi(e as i32) * 10.0 + 0.5).floor() / 10.0;
    if val < 10.0 {
        format!("{val:.1} {}", UNITS[e])
    } else {
        format!("{val:.0} {}", UNITS[e])
    }
}

/// go-humanize's `ComputeSI` for a count: the value scaled by powers of 1000 and its prefix.
pub fn si(v: u64) -> (f64, &'static str) {
    const PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    if v == 0 {
        return (0.0, "");
    }
    let e = (((v as f64).log10().floor() as usize) / 3).min(PREFIXES.len() - 1);
    (v as f64 / 1000f64.powi(e as i32), PREFIXES[e])
}

/// A share (0..=1) as a percentage with one decimal.
pub fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// A bar of `width` cells, the `share` (0..=1) of them full.
pub fn bar(share: f64, width: usize) -> (String, String) {
    let full = ((share.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    ("█".repeat(full), "░".repeat(width - full))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_is_a_go_duration_with_days() {
        assert_eq!(uptime(1000, 1000), "0s");
        assert_eq!(uptime(1192, 1000), "3m12s");
        assert_eq!(uptime(1000 + 5 * 3600 + 7, 1000), "5h0m7s");
        assert_eq!(uptime(2 * 86_400 + 3 * 3600 + 4 * 60 + 5, 0), "2d3h4m5s");
        assert_eq!(uptime(5, 10), "0s");
    }

    #[test]
    fn clocks_as_talosctl_shows_them() {
        let c = |count, mhz| cpus(&Cpus { count, mhz });
        assert_eq!(c(4, 2450.1), "4x2.45GHz");
        // 2.445 × 100 is 244.4999… in binary floating point: talosctl shows 2.44 as well.
        assert_eq!(c(4, 2445.406), "4x2.44GHz");
        assert_eq!(c(2, 2000.0), "2x2GHz");
        assert_eq!(c(8, 2499.6), "8x2.5GHz");
        assert_eq!(c(1, 799.7), "1x800MHz");
    }

    #[test]
    fn sizes_as_go_humanize_writes_them() {
        assert_eq!(ibytes(5), "5 B");
        assert_eq!(ibytes(8_148_772 << 10), "7.8 GiB");
        assert_eq!(ibytes(16 << 30), "16 GiB");
        assert_eq!(ibytes(1536), "1.5 KiB");
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(512_000), "512 kB");
        assert_eq!(bytes(8_148_772 << 10), "8.3 GB");
        assert_eq!(si(0), (0.0, ""));
        assert_eq!(si(950), (950.0, ""));
        assert_eq!(si(12_345), (12.345, "k"));
        assert_eq!(percent(0.1234), "12.3%");
        assert_eq!(bar(0.5, 4), ("██".to_string(), "░░".to_string()));
        assert_eq!(bar(1.7, 3).0.chars().count(), 3);
    }
}
