//! Certificates judged by a clock that is off: a node's certificate outside its validity window
//! by this machine's time (said with the window and the time here), and a node refusing the
//! client certificate as expired by its own time. Both point at the clocks, not the
//! credentials: a node issues its certificate for the time it believes it is, and talm has
//! already checked the client certificate against this machine's clock.

use rustls::pki_types::{CertificateDer, UnixTime};
use x509_parser::prelude::{FromDer, X509Certificate};

use super::errors::{Kind, Site};

/// A certificate's validity window and the time it was judged at (Unix seconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub not_before: i64,
    pub not_after: i64,
    pub now: i64,
}

impl Window {
    /// The window of `cert` at `now`, when `now` lies outside it (otherwise the certificate's
    /// time is not what failed).
    pub fn outside(cert: &CertificateDer<'_>, now: UnixTime) -> Option<Window> {
        let (_, c) = X509Certificate::from_der(cert).ok()?;
        let v = c.validity();
        let w = Window {
            not_before: v.not_before.timestamp(),
            not_after: v.not_after.timestamp(),
            now: i64::try_from(now.as_secs()).ok()?,
        };
        (w.now < w.not_before || w.now > w.not_after).then_some(w)
    }
}

/// Unix seconds as `2026-12-05 07:05:31 UTC`.
pub fn stamp(secs: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(secs) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => format!("{secs} (Unix seconds)"),
    }
}

/// What to do when one side's clock is off.
pub const CLOCK_HINT: &str = "the node's clock or this machine's clock is off: check the time on this machine (`date -u`) and on the node (its console), and that both keep time by NTP (the node's machine.time.servers)";

/// The node presented a certificate of the talosconfig's CA that is not valid at this
/// machine's time.
pub(super) fn server_cert(site: Site, w: &Window) -> anyhow::Error {
    let (state, was) = if w.now < w.not_before {
        ("is not valid yet", "is")
    } else {
        ("has expired", "was")
    };
    site.error(
        Kind::BadServerCert,
        format!(
            "the node's certificate {state}: it {was} valid from {} to {}, and the time here is {}",
            stamp(w.not_before),
            stamp(w.not_after),
            stamp(w.now)
        ),
        format!("{CLOCK_HINT}; a node dates its certificate by its own clock, so a new talosconfig does not help"),
    )
}

/// The node refused the client certificate with the alert `certificate_expired`: by its clock
/// the certificate is outside its window, while by this machine's it is inside (talm checks
/// that before connecting).
pub(super) fn client_cert_expired(site: Site) -> anyhow::Error {
    site.error(
        Kind::ClientCertRejected,
        "the node rejected the client certificate as expired or not valid yet (TLS alert CertificateExpired), though it is valid by this machine's clock",
        CLOCK_HINT,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_read_as_utc() {
        assert_eq!(stamp(1_785_578_400), "2026-08-01 10:00:00 UTC");
        assert_eq!(stamp(0), "1970-01-01 00:00:00 UTC");
    }

    #[test]
    fn a_window_is_told_only_when_the_time_is_outside_it() {
        let now = time::OffsetDateTime::now_utc();
        let ca = talm_wire::pki::self_signed_ca(talm_wire::pki::KeyKind::Ed25519, Some("a"), now)
            .unwrap();
        let (_, der) = talm_wire::pki::pem_decode(&ca.cert_pem).unwrap();
        let der = CertificateDer::from(der);
        let at =
            |secs: i64| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs as u64));
        let t = now.unix_timestamp();
        assert_eq!(Window::outside(&der, at(t + 60)), None);
        let early = Window::outside(&der, at(t - 3600)).unwrap();
        assert_eq!(early.now, t - 3600);
        assert!(early.not_before >= t - 60 && early.not_before <= t);
        assert!(Window::outside(&der, at(t + 20 * 365 * 86400)).is_some());
    }
}
