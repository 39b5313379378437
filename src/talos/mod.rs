//! Talking to Talos nodes: credentials and TLS, node targeting, machine and COSI calls, the
//! kubeconfig archive and the discovery snapshot. Nothing here knows about projects.

pub mod archive;
pub mod client;
pub mod creds;
pub mod diagnose;
pub mod discovery;
pub mod errors;
pub mod resources;
pub mod scan;
pub mod verify;
pub mod wire;

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

/// Default deadline of a connection and of each call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The process's async runtime for node I/O; scripts call into it from plain threads.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("talm-io")
            .enable_all()
            .build()
            .expect("the async runtime starts")
    })
}

/// Runs a future to completion from synchronous code (not from inside the runtime).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    runtime().block_on(fut)
}

/// Go-style duration text: `1m0s`, `30s`, `1.5s`, `2h0m0s`.
pub fn duration_text(d: Duration) -> String {
    let total = d.as_secs();
    let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60);
    let frac = d.subsec_millis();
    let secs = if frac == 0 {
        format!("{s}s")
    } else {
        format!("{s}.{}s", format!("{frac:03}").trim_end_matches('0'))
    };
    if h > 0 {
        format!("{h}h{m}m{secs}")
    } else if m > 0 {
        format!("{m}m{secs}")
    } else {
        secs
    }
}

/// Parses a Go-style duration (`90s`, `1m30s`, `2h`, `500ms`).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let mut total = 0f64;
    let mut num = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let mut unit = c.to_string();
        if c == 'm' && chars.peek() == Some(&'s') {
            unit.push(chars.next()?);
        }
        let n: f64 = num.parse().ok()?;
        num.clear();
        total += n * match unit.as_str() {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return None,
        };
    }
    if !num.is_empty() {
        return None;
    }
    Some(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_go_writes_them() {
        assert_eq!(duration_text(Duration::from_secs(60)), "1m0s");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1.5s");
        assert_eq!(duration_text(Duration::from_secs(7200)), "2h0m0s");
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("3x"), None);
    }
}
