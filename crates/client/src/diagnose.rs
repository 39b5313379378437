//! Names a failure from what the connection's record shows (`wire::Facts`): a dial or TLS
//! handshake that failed and why, a server that is not a Talos API, a node in the other mode, a
//! refused client certificate, or a connection cut after the handshake. A status the node sent
//! itself is named by `errors::answered`.

use std::error::Error as StdError;

use rustls::AlertDescription;
use tonic::Status;

use super::errors::{
    answered, chain, worded, Go, Kind, NotTalos, Site, CONNECT, REGEN_HINT, RETRY_HINT,
    UNREACHABLE_HINT,
};
use super::transport::{Dial, End, Facts, Presented, SecondLook, H2};

/// TLS alerts with which a server refuses a client certificate.
fn cert_alert(a: AlertDescription) -> bool {
    matches!(
        a,
        AlertDescription::BadCertificate
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateRequired
            | AlertDescription::UnknownCA
            | AlertDescription::AccessDenied
            | AlertDescription::DecryptError
            | AlertDescription::HandshakeFailure
    )
}

fn alpn_text(alpn: Option<&[u8]>) -> String {
    match alpn {
        None => "no protocol was agreed by ALPN".into(),
        Some(p) => format!("it chose {:?} by ALPN", String::from_utf8_lossy(p)),
    }
}

fn end_text(end: &End) -> String {
    match end {
        End::Closed => "the node closed it".into(),
        End::Reset => "it was reset".into(),
        End::Alert(a) => format!("the node sent TLS alert {a:?}"),
        End::Io(e) => e.clone(),
    }
}

/// What a failed TCP dial or TLS handshake means.
fn dial_failure(site: Site, f: &Facts, d: &Dial) -> anyhow::Error {
    let mtls = !site.insecure;
    match d {
        Dial::Refused => {
            // grpc-go's words for it, as talosctl prints them.
            let go = format!("rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp {}: connect: connection refused\"", site.endpoint);
            return worded(
                site.error(Kind::Refused, "connection refused", UNREACHABLE_HINT),
                Go::Direct(go),
            );
        }
        Dial::Unreachable => {
            return site.error(
                Kind::Unreachable,
                "the node is unreachable",
                UNREACHABLE_HINT,
            )
        }
        Dial::Tcp(e) => {
            return site.error(
                Kind::Unreachable,
                format!("cannot connect: {e}"),
                UNREACHABLE_HINT,
            )
        }
        _ => {}
    }
    match &f.presented {
        Some(Presented::Maintenance) if mtls => {
            return site.error(
                Kind::InMaintenance,
                "the node is in maintenance mode (it has no config yet)",
                "use -i/--insecure for maintenance nodes (template, apply); calls such as bootstrap and kubeconfig need the node configured first: `talm apply -f nodes/<node>.yaml -i`",
            )
        }
        Some(Presented::ForeignIssuer) if f.asked_for_client_cert => {
            return site.error(
                Kind::ForeignCa,
                "the node's certificate is not signed by the talosconfig's CA",
                "the node belongs to another cluster, or the talosconfig to another project: check --talosconfig and --context",
            )
        }
        Some(Presented::ForeignIssuer) => {
            return site.not_talos(
                NotTalos::ForeignNoClientAuth,
                "its certificate is not from the talosconfig's CA, and it does not ask for a client certificate as every configured Talos node does",
            )
        }
        Some(Presented::WrongName) => {
            return site.error(
                Kind::WrongName,
                "the node's certificate does not list this address",
                "connect through an address among the node's IPs or machine.certSANs",
            )
        }
        Some(Presented::Unpinned(seen)) => {
            return site.error(
                Kind::FingerprintMismatch,
                format!("the node's certificate has fingerprint {seen}, which matches none of --cert-fingerprint"),
                "the node may not be the machine you mean (or it rebooted: a maintenance node makes a new certificate every boot); check its console for the fingerprint and pass that one with --cert-fingerprint",
            )
        }
        Some(Presented::OutOfTime(w)) => return super::clock::server_cert(site, w),
        Some(Presented::Invalid(e)) => {
            return site.error(
                Kind::BadServerCert,
                format!("the node's certificate is not valid: {e}"),
                "check the node's clock and certificate (machine.certSANs); `talm apply` renews it",
            )
        }
        _ => {}
    }
    match d {
        Dial::NotTls => site.not_talos(NotTalos::NoTls, "it does not answer TLS"),
        Dial::Alert(AlertDescription::NoApplicationProtocol) => site.not_talos(
            NotTalos::NoHttp2,
            "it speaks TLS but refused HTTP/2 (ALPN h2), which gRPC needs",
        ),
        Dial::Alert(a)
            if !mtls
                && (f.asked_for_client_cert || *a == AlertDescription::CertificateRequired) =>
        {
            not_maintenance(site)
        }
        Dial::Closed if !mtls && f.asked_for_client_cert => not_maintenance(site),
        Dial::Alert(a) if cert_alert(*a) => rejected(site, *a, format!("TLS alert {a:?}")),
        Dial::Closed => site.error(
            Kind::Handshake,
            "the node closed the connection during the TLS handshake",
            handshake_hint(site),
        ),
        Dial::Alert(a) => site.error(
            Kind::Handshake,
            format!("TLS handshake failed: the node sent TLS alert {a:?}"),
            handshake_hint(site),
        ),
        Dial::Tls(e) => site.error(
            Kind::Handshake,
            format!("TLS handshake failed: {e}"),
            handshake_hint(site),
        ),
        Dial::Refused | Dial::Unreachable | Dial::Tcp(_) => {
            site.error(Kind::Unreachable, "cannot connect", UNREACHABLE_HINT)
        }
    }
}

/// The node refused the client certificate with alert `a` (`how` says how it was seen): by
/// its clock when the alert is `certificate_expired`, else as a certificate of another cluster.
fn rejected(site: Site, a: AlertDescription, how: String) -> anyhow::Error {
    if a == AlertDescription::CertificateExpired {
        return super::clock::client_cert_expired(site);
    }
    site.error(
        Kind::ClientCertRejected,
        format!("the node rejected the client certificate ({how})"),
        REGEN_HINT,
    )
}

fn handshake_hint(site: Site) -> &'static str {
    if site.insecure {
        "check that the address is a Talos node's API (port 50000)"
    } else {
        "check that the address is a Talos node's API (port 50000) and that the talosconfig belongs to this cluster (`talm talosconfig` regenerates it)"
    }
}

fn not_maintenance(site: Site) -> anyhow::Error {
    site.error(
        Kind::NotMaintenance,
        "the node asks for a client certificate: it is not in maintenance mode",
        "drop -i/--insecure so talm authenticates with the talosconfig",
    )
}

/// What the record says about a failure, if it says anything.
fn explain(site: Site, f: &Facts) -> Option<anyhow::Error> {
    if let Some(d) = &f.failed {
        return Some(dial_failure(site, f, d));
    }
    if let Some(r) = &f.reply {
        let ct = if r.content_type.is_empty() {
            "no content type".to_string()
        } else {
            format!("content-type {}", r.content_type)
        };
        return Some(site.not_talos(
            NotTalos::NotGrpc,
            format!(
                "it answered {} with HTTP status {} and {ct}, not gRPC",
                site.call, r.status
            ),
        ));
    }
    if !f.handshake {
        return None;
    }
    if f.alpn.as_deref() != Some(H2) {
        return Some(site.not_talos(
            NotTalos::NoHttp2,
            format!(
                "it speaks TLS but not HTTP/2, which gRPC needs: {}",
                alpn_text(f.alpn.as_deref())
            ),
        ));
    }
    if site.insecure && f.presented == Some(Presented::Other) {
        return Some(if f.asked_for_client_cert {
            not_maintenance(site)
        } else {
            site.not_talos(
                NotTalos::NeitherMode,
                format!("its certificate is not a maintenance node's ({MAINTENANCE}), and it does not ask for a client certificate as a configured node does", MAINTENANCE = super::verify::MAINTENANCE_CN),
            )
        });
    }
    let end = f.ended.as_ref()?;
    Some(match (end, f.second_look) {
        (End::Alert(a), _) if !site.insecure && cert_alert(*a) => {
            rejected(site, *a, format!("TLS alert {a:?}"))
        }
        (End::Alert(AlertDescription::CertificateRequired), _) if site.insecure => {
            not_maintenance(site)
        }
        (_, Some(SecondLook::Alert(a))) if !site.insecure && cert_alert(a) => rejected(
            site,
            a,
            format!("it closed the connection, and answered a second one with TLS alert {a:?}"),
        ),
        (end, _) => cut(site, f, &end_text(end)),
    })
}

fn cut(site: Site, f: &Facts, how: &str) -> anyhow::Error {
    let when = if site.call == CONNECT {
        "right after the TLS handshake"
    } else {
        "during the call"
    };
    let before = if f.received {
        ""
    } else {
        ", before the node sent anything"
    };
    // Only a silent end that a second look could not explain leaves the certificate in doubt.
    let in_doubt = !f.received
        && !site.insecure
        && !matches!(f.second_look, Some(SecondLook::Spoke | SecondLook::Closed));
    let hint = if !in_doubt {
        RETRY_HINT
    } else {
        "the node may be rebooting: retry once it answers again; if this persists, it may be refusing the client certificate without saying so: regenerate the talosconfig with `talm talosconfig`"
    };
    site.error(
        Kind::Cut,
        format!("the connection was cut {when}{before} ({how})"),
        hint,
    )
}

/// A failed connection attempt.
pub fn connect(site: Site, f: &Facts, err: &(dyn StdError + 'static)) -> anyhow::Error {
    explain(site, f).unwrap_or_else(|| {
        site.error(
            Kind::Unreachable,
            format!("cannot connect: {}", chain(err)),
            UNREACHABLE_HINT,
        )
    })
}

/// A failed call: a non-gRPC reply or a transport failure is told from the record; a status the
/// node sent, by its code.
pub fn status(site: Site, f: &Facts, st: &Status) -> anyhow::Error {
    let from_transport = st.source().is_some();
    if f.reply.is_some() || from_transport {
        if let Some(e) = explain(site, f) {
            return e;
        }
    }
    if from_transport {
        let detail = match st.source() {
            Some(src) => chain(src),
            None => st.message().to_string(),
        };
        return if f.handshake {
            cut(site, f, &detail)
        } else {
            site.error(
                Kind::Unreachable,
                format!("cannot connect: {detail}"),
                UNREACHABLE_HINT,
            )
        };
    }
    answered(site, st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::{kind, test_site as site};

    fn up() -> Facts {
        Facts {
            handshake: true,
            alpn: Some(H2.to_vec()),
            presented: Some(Presented::Cluster),
            asked_for_client_cert: true,
            ..Facts::default()
        }
    }

    #[test]
    fn transport_facts_name_the_failure() {
        let refused = Facts {
            failed: Some(Dial::Refused),
            ..Facts::default()
        };
        let e = explain(site(true), &refused).unwrap();
        assert_eq!(e.to_string(), "node 10.0.0.1: Version: connection refused");

        let foreign = Facts {
            failed: Some(Dial::Tls("invalid peer certificate".into())),
            presented: Some(Presented::ForeignIssuer),
            asked_for_client_cert: true,
            ..Facts::default()
        };
        assert_eq!(
            explain(site(false), &foreign).and_then(|e| kind(&e)),
            Some(Kind::ForeignCa)
        );

        let rejected = Facts {
            ended: Some(End::Alert(AlertDescription::BadCertificate)),
            ..up()
        };
        assert_eq!(
            explain(site(false), &rejected).and_then(|e| kind(&e)),
            Some(Kind::ClientCertRejected)
        );

        // A cut after the handshake is a cut in both modes; under -i no talosconfig hint.
        for insecure in [false, true] {
            for received in [false, true] {
                let f = Facts {
                    ended: Some(End::Closed),
                    received,
                    presented: Some(if insecure {
                        Presented::Maintenance
                    } else {
                        Presented::Cluster
                    }),
                    ..up()
                };
                let e = explain(site(insecure), &f).unwrap();
                assert_eq!(kind(&e), Some(Kind::Cut));
                let text = talm_base::error::render(&e);
                assert!(
                    text.contains("the connection was cut during the call"),
                    "{text}"
                );
                assert!(!text.contains("handshake failed"), "{text}");
                if insecure {
                    assert!(!text.contains("talosconfig"), "{text}");
                }
            }
        }

        // An authenticated connection that ended before the node said anything: the second
        // look decides between a refused certificate and a cut.
        let silent = Facts {
            ended: Some(End::Reset),
            received: false,
            ..up()
        };
        let with = |look| Facts {
            second_look: Some(look),
            ..silent.clone()
        };
        let refused = explain(
            site(false),
            &with(SecondLook::Alert(AlertDescription::UnknownCA)),
        )
        .unwrap();
        assert_eq!(kind(&refused), Some(Kind::ClientCertRejected));
        assert!(talm_base::error::render(&refused).contains("talm talosconfig"));
        for (look, doubt) in [
            (SecondLook::Spoke, false),
            (SecondLook::Closed, false),
            (SecondLook::Nothing, true),
        ] {
            let e = explain(site(false), &with(look)).unwrap();
            assert_eq!(kind(&e), Some(Kind::Cut));
            let text = talm_base::error::render(&e);
            assert_eq!(
                text.contains("client certificate"),
                doubt,
                "{look:?}: {text}"
            );
        }

        let web = Facts {
            alpn: None,
            presented: Some(Presented::Other),
            asked_for_client_cert: false,
            ..up()
        };
        assert_eq!(
            explain(site(true), &web).and_then(|e| kind(&e)),
            Some(Kind::NotTalos(NotTalos::NoHttp2))
        );
        let configured = Facts {
            presented: Some(Presented::Other),
            ..up()
        };
        assert_eq!(
            explain(site(true), &configured).and_then(|e| kind(&e)),
            Some(Kind::NotMaintenance)
        );
    }
}
