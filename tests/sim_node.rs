//! The simulated node against `talos-api.md`, driven in-process through the native client over
//! real TLS on loopback: maintenance mode, apply and reboot into mTLS, certificates, roles,
//! bootstrap once, kubeconfig, upgrade, reset, node routing and faults.

mod common;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use talm::config::generate::{self, Input, MachineType, Options};
use talm::proto::machine;
use talm::secrets::bundle::Bundle;
use talm::secrets::contract::Contract;
use talm::sim::{faults::Faults, NodeSpec, Sim};
use talm::talos::client::{Client, Options as ClientOptions};
use talm::talos::creds::{self, Auth};
use time::OffsetDateTime;
use x509_parser::prelude::{FromDer, X509Certificate};

const SECRETS: &str = include_str!("fixtures/talos/stability/secrets.yaml");

fn bundle() -> Bundle {
    Bundle::load(SECRETS, "secrets.yaml").unwrap()
}

fn config(kind: MachineType, install_disk: Option<&str>) -> String {
    let input = Input {
        cluster_name: "sim".into(),
        endpoint: "https://127.0.0.1:6443".into(),
        kubernetes_version: "1.36.2".into(),
        contract: Contract::parse("v1.13").unwrap(),
        bundle: bundle(),
        options: Options {
            install_disk: install_disk.map(str::to_string),
            ..Options::default()
        },
    };
    generate::to_text(&generate::generate(&input, kind).unwrap())
}

/// Client credentials from a talosconfig issued now for `roles`, or with client+server usage.
fn mutual(roles: &[&str]) -> Auth {
    let b = bundle();
    let (ca, key) = b.os_ca().unwrap();
    let cert =
        talm::secrets::pki::client_cert(&ca, &key, roles, OffsetDateTime::now_utc()).unwrap();
    Auth::Mutual {
        ca_pem: ca,
        identity: creds::Identity {
            cert_pem: cert.cert_pem,
            key_pem: talm::secrets::pki::pem_encode("PRIVATE KEY", cert.key.pkcs8_der()),
        },
    }
}

fn admin() -> Auth {
    mutual(&["os:admin"])
}

fn opts(auth: Auth) -> ClientOptions {
    ClientOptions {
        auth,
        timeout: Duration::from_secs(5),
    }
}

struct Harness {
    sim: Option<Sim>,
    addr: String,
}

impl Harness {
    fn start(addr: &str, tweak: impl FnOnce(&mut NodeSpec)) -> Harness {
        let ip: IpAddr = addr.parse().unwrap();
        let mut spec = NodeSpec::new(ip, 50000);
        spec.reboot_delay = Duration::from_millis(300);
        tweak(&mut spec);
        let sim = talm::talos::block_on(Sim::start(vec![spec])).unwrap();
        Harness {
            sim: Some(sim),
            addr: addr.to_string(),
        }
    }

    fn node(&self) -> &Arc<talm::sim::Node> {
        self.sim.as_ref().unwrap().node(&self.addr).unwrap()
    }

    fn connect(&self, auth: Auth) -> anyhow::Result<Client> {
        talm::talos::block_on(Client::connect(&self.addr, None, &opts(auth)))
    }

    /// Waits for the reboot that follows an apply, upgrade or reset.
    fn wait_reboot(&self, boots_before: u64) {
        let node = Arc::clone(self.node());
        talm::talos::block_on(async move {
            let mut rx = node.up.subscribe();
            tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|b| *b > boots_before))
                .await
                .unwrap()
                .unwrap();
        });
    }

    fn boots(&self) -> u64 {
        self.node().state().boots
    }

    fn apply(
        &self,
        auth: Auth,
        data: &str,
        mode: machine::apply_configuration_request::Mode,
        dry_run: bool,
    ) -> anyhow::Result<machine::ApplyConfiguration> {
        let c = self.connect(auth)?;
        talm::talos::block_on(c.apply(machine::ApplyConfigurationRequest {
            data: data.as_bytes().to_vec(),
            mode: mode as i32,
            dry_run,
            try_mode_timeout: None,
        }))
    }

    /// Applies a control-plane config in maintenance mode and waits until it is back.
    fn install(&self) {
        let boots = self.boots();
        let r = self
            .apply(
                Auth::Insecure,
                &config(MachineType::ControlPlane, Some("/dev/nvme0n1")),
                machine::apply_configuration_request::Mode::Auto,
                false,
            )
            .unwrap();
        assert_eq!(
            r.mode,
            machine::apply_configuration_request::Mode::NoReboot as i32
        );
        assert_eq!(r.mode_details, "Applied configuration without a reboot");
        self.wait_reboot(boots);
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(sim) = self.sim.take() {
            talm::talos::block_on(sim.stop());
        }
    }
}

/// The server certificate a node presents, read with a raw TLS handshake.
fn server_cert(addr: &str) -> Vec<u8> {
    use rustls::pki_types::ServerName;
    let addr = addr.to_string();
    talm::talos::block_on(async move {
        #[derive(Debug)]
        struct Any;
        impl rustls::client::danger::ServerCertVerifier for Any {
            fn verify_server_cert(
                &self,
                _: &rustls::pki_types::CertificateDer<'_>,
                _: &[rustls::pki_types::CertificateDer<'_>],
                _: &ServerName<'_>,
                _: &[u8],
                _: rustls::pki_types::UnixTime,
            ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            fn verify_tls12_signature(
                &self,
                _: &[u8],
                _: &rustls::pki_types::CertificateDer<'_>,
                _: &rustls::DigitallySignedStruct,
            ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error>
            {
                Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
            }
            fn verify_tls13_signature(
                &self,
                _: &[u8],
                _: &rustls::pki_types::CertificateDer<'_>,
                _: &rustls::DigitallySignedStruct,
            ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error>
            {
                Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
            }
            fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
                rustls::crypto::aws_lc_rs::default_provider()
                    .signature_verification_algorithms
                    .supported_schemes()
            }
        }
        let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Any))
        .with_no_client_auth();
        cfg.alpn_protocols = vec![b"h2".to_vec()];
        let tcp = tokio::net::TcpStream::connect(format!("{addr}:50000"))
            .await
            .unwrap();
        let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
            .connect(ServerName::try_from(addr.clone()).unwrap(), tcp)
            .await
            .unwrap();
        let (_, conn) = tls.get_ref();
        assert_eq!(conn.alpn_protocol(), Some(&b"h2"[..]));
        conn.peer_certificates().unwrap()[0].to_vec()
    })
}

fn sans(der: &[u8]) -> (String, Vec<String>, bool) {
    let (_, c) = X509Certificate::from_der(der).unwrap();
    let cn = c
        .subject()
        .iter_common_name()
        .next()
        .map(|x| x.as_str().unwrap().to_string())
        .unwrap_or_default();
    let mut ips = Vec::new();
    if let Ok(Some(san)) = c.subject_alternative_name() {
        for n in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::IPAddress(b) = n {
                if b.len() == 4 {
                    ips.push(std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string());
                }
            }
        }
    }
    let server_only = matches!(c.extended_key_usage(), Ok(Some(e)) if e.value.server_auth && !e.value.client_auth);
    (cn, ips, server_only)
}

#[test]
fn maintenance_mode_is_read_only_and_self_signed() {
    let h = Harness::start("127.0.2.1", |_| {});
    let (cn, ips, server_only) = sans(&server_cert(&h.addr));
    assert_eq!(cn, "maintenance-service.talos.dev");
    assert!(
        ips.contains(&"127.0.2.1".to_string()) && ips.contains(&"127.0.0.1".to_string()),
        "{ips:?}"
    );
    assert!(server_only);

    let c = h.connect(Auth::Insecure).unwrap();
    let v = talm::talos::block_on(c.version()).unwrap();
    assert_eq!(v.version.unwrap().tag, "v1.13.7");
    assert!(v.features.is_none(), "no features without a config");
    assert!(v.metadata.is_none());

    // Reads of non-sensitive resources work; the machine config is denied; types are checked.
    let links = talm::talos::block_on(c.list("network", "LinkStatuses.net.talos.dev")).unwrap();
    assert!(links
        .iter()
        .any(|r| r.metadata.as_ref().unwrap().id == "eth0"));
    let err = talm::talos::block_on(c.get("config", "MachineConfigs.config.talos.dev", "v1alpha1"))
        .unwrap_err();
    assert!(err.to_string().contains("not authorized"), "{err}");
    let err = talm::talos::block_on(c.list("network", "Bogus.talos.dev")).unwrap_err();
    assert!(
        err.to_string()
            .contains("resource type \"Bogus.talos.dev\" is not supported"),
        "{err}"
    );
    assert!(
        talm::talos::block_on(c.get("network", "HostnameStatuses.net.talos.dev", "hostname"))
            .unwrap()
            .is_none()
    );

    // Everything that changes a configured node is refused.
    let err = talm::talos::block_on(c.bootstrap(machine::BootstrapRequest::default())).unwrap_err();
    assert!(
        err.to_string()
            .contains("node 127.0.2.1: Bootstrap: not authorized"),
        "{err}"
    );
    assert!(talm::error::render(&err).contains("maintenance mode"));
    let err = talm::talos::block_on(c.kubeconfig()).unwrap_err();
    assert!(err.to_string().contains("not authorized"), "{err}");

    // Apply validates like Talos: unknown keys, and an install disk on metal.
    let bad = config(MachineType::ControlPlane, Some("/dev/nvme0n1")).replacen(
        "machine:\n",
        "machine:\n    bogusKey: 1\n",
        1,
    );
    let err = h
        .apply(
            Auth::Insecure,
            &bad,
            machine::apply_configuration_request::Mode::Auto,
            false,
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("unknown keys found during decoding"),
        "{err}"
    );
    assert!(talm::error::render(&err).contains("hint: the maintenance Talos parser"));
    let err = h
        .apply(
            Auth::Insecure,
            &config(MachineType::ControlPlane, None),
            machine::apply_configuration_request::Mode::Auto,
            false,
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("either install disk or diskSelector should be defined"),
        "{err}"
    );

    // A dry run changes nothing and shows an all-added diff.
    let r = h
        .apply(
            Auth::Insecure,
            &config(MachineType::ControlPlane, Some("/dev/nvme0n1")),
            machine::apply_configuration_request::Mode::Auto,
            true,
        )
        .unwrap();
    assert!(r.mode_details.starts_with("Dry run summary:\nApplied configuration without a reboot (skipped in dry-run).\nConfig diff:\n\n--- a\n+++ b\n"), "{}", r.mode_details);
    assert!(h.node().state().in_maintenance());
}

#[test]
fn apply_reboots_into_mutual_tls_with_roles() {
    let h = Harness::start("127.0.2.2", |_| {});
    h.install();

    // Normal mode: the server cert is issued by the OS CA for the node's address.
    let (_, ips, server_only) = sans(&server_cert(&h.addr));
    assert!(ips.contains(&"127.0.2.2".to_string()) && server_only);
    let err = h
        .connect(Auth::Insecure)
        .and_then(|c| talm::talos::block_on(c.version()))
        .unwrap_err();
    assert!(err.to_string().contains("not in maintenance mode"), "{err}");

    let c = h.connect(admin()).unwrap();
    let v = talm::talos::block_on(c.version()).unwrap();
    assert!(v.features.unwrap().rbac);
    let mt =
        talm::talos::block_on(c.get("config", "MachineTypes.config.talos.dev", "machine-type"))
            .unwrap()
            .unwrap();
    assert_eq!(mt.spec.unwrap().yaml_spec.trim(), "controlplane");
    assert!(
        talm::talos::block_on(c.get("config", "MachineConfigs.config.talos.dev", "v1alpha1"))
            .unwrap()
            .is_some()
    );
    let host =
        talm::talos::block_on(c.get("network", "HostnameStatuses.net.talos.dev", "hostname"))
            .unwrap()
            .unwrap();
    assert!(
        host.spec.unwrap().yaml_spec.contains("hostname: talos-"),
        "stable hostname after HostnameConfig auto: stable"
    );

    // Bootstrap once; the second gets Talos's AlreadyExists in-band through `nodes`.
    talm::talos::block_on(c.bootstrap(machine::BootstrapRequest::default())).unwrap();
    let err = talm::talos::block_on(c.bootstrap(machine::BootstrapRequest::default())).unwrap_err();
    assert!(
        err.to_string()
            .contains("code = AlreadyExists desc = etcd data directory is not empty"),
        "{err}"
    );
    let routed =
        talm::talos::block_on(Client::connect(&h.addr, Some("127.0.2.2"), &opts(admin()))).unwrap();
    let err =
        talm::talos::block_on(routed.bootstrap(machine::BootstrapRequest::default())).unwrap_err();
    assert!(err.to_string().contains("AlreadyExists"), "{err}");
    let v = talm::talos::block_on(routed.version()).unwrap();
    assert_eq!(
        v.metadata.unwrap().hostname,
        "127.0.2.2",
        "one-to-many replies name the node"
    );
    let elsewhere =
        talm::talos::block_on(Client::connect(&h.addr, Some("127.0.2.99"), &opts(admin())))
            .unwrap();
    let err = talm::talos::block_on(elsewhere.version()).unwrap_err();
    assert!(err.to_string().contains("connection refused"), "{err}");

    // Kubeconfig: the cluster CA signs an admin certificate; the server is the cluster endpoint.
    let kc = String::from_utf8(talm::talos::block_on(c.kubeconfig()).unwrap()).unwrap();
    assert!(
        kc.contains("server: https://127.0.0.1:6443") && kc.contains("current-context: admin@sim"),
        "{kc}"
    );

    // A reader may read but not change anything.
    let reader = h.connect(mutual(&["os:reader"])).unwrap();
    talm::talos::block_on(reader.version()).unwrap();
    let err = talm::talos::block_on(reader.kubeconfig()).unwrap_err();
    assert!(err.to_string().contains("not authorized"), "{err}");
    let err =
        talm::talos::block_on(reader.get("config", "MachineConfigs.config.talos.dev", "v1alpha1"))
            .unwrap_err();
    assert!(err.to_string().contains("not authorized"), "{err}");
    let err = h
        .apply(
            mutual(&["os:reader"]),
            &config(MachineType::ControlPlane, Some("/dev/nvme0n1")),
            machine::apply_configuration_request::Mode::Auto,
            false,
        )
        .unwrap_err();
    assert!(err.to_string().contains("not authorized"), "{err}");
}

#[test]
fn client_certificates_from_another_ca_are_refused() {
    let h = Harness::start("127.0.2.3", |_| {});
    h.install();
    // A certificate from another cluster's CA.
    let other =
        Bundle::generate(Contract::parse("v1.6").unwrap(), OffsetDateTime::now_utc()).unwrap();
    let (ca, key) = other.os_ca().unwrap();
    let cert = talm::secrets::pki::client_cert(&ca, &key, &["os:admin"], OffsetDateTime::now_utc())
        .unwrap();
    let (our_ca, _) = bundle().os_ca().unwrap();
    let foreign = Auth::Mutual {
        ca_pem: our_ca,
        identity: creds::Identity {
            cert_pem: cert.cert_pem,
            key_pem: talm::secrets::pki::pem_encode("PRIVATE KEY", cert.key.pkcs8_der()),
        },
    };
    let err = h
        .connect(foreign)
        .and_then(|c| talm::talos::block_on(c.version()))
        .unwrap_err();
    assert!(
        err.to_string().contains("rejected the client certificate"),
        "{err}"
    );
    // An expired certificate from the right CA, and one whose usage is not client-auth only.
    let (our_ca, our_key) = bundle().os_ca().unwrap();
    let past = OffsetDateTime::now_utc() - time::Duration::days(800);
    let expired = talm::secrets::pki::client_cert(&our_ca, &our_key, &["os:admin"], past).unwrap();
    let expired = Auth::Mutual {
        ca_pem: our_ca.clone(),
        identity: creds::Identity {
            cert_pem: expired.cert_pem,
            key_pem: talm::secrets::pki::pem_encode("PRIVATE KEY", expired.key.pkcs8_der()),
        },
    };
    let err = h
        .connect(expired)
        .and_then(|c| talm::talos::block_on(c.version()))
        .unwrap_err();
    assert!(
        err.to_string().contains("rejected the client certificate"),
        "{err}"
    );
    let key =
        talm::secrets::pki::PrivateKey::generate(talm::secrets::pki::KeyKind::Ed25519).unwrap();
    let mut p = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::OrganizationName, "os:admin");
    p.distinguished_name = dn;
    p.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
    ];
    let issuer = rcgen::Issuer::from_ca_cert_pem(&our_ca, our_key.key_pair().unwrap()).unwrap();
    let both = p.signed_by(&key.key_pair().unwrap(), &issuer).unwrap();
    let both = Auth::Mutual {
        ca_pem: our_ca,
        identity: creds::Identity {
            cert_pem: both.pem(),
            key_pem: talm::secrets::pki::pem_encode("PRIVATE KEY", key.pkcs8_der()),
        },
    };
    let err = h
        .connect(both)
        .and_then(|c| talm::talos::block_on(c.version()))
        .unwrap_err();
    assert!(
        err.to_string().contains("rejected the client certificate"),
        "{err}"
    );
    // Our client refuses a server whose CA is not the talosconfig's.
    let wrong_ca = Auth::Mutual {
        ca_pem: ca,
        identity: match admin() {
            Auth::Mutual { identity, .. } => identity,
            _ => unreachable!(),
        },
    };
    let err = h
        .connect(wrong_ca)
        .and_then(|c| talm::talos::block_on(c.version()))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("not signed by the talosconfig's CA"),
        "{err}"
    );
}

#[test]
fn apply_modes_upgrade_and_reset() {
    let h = Harness::start("127.0.2.4", |_| {});
    h.install();
    use machine::apply_configuration_request::Mode;
    let cfg = config(MachineType::ControlPlane, Some("/dev/nvme0n1"));
    let changed = cfg.replacen(
        "machine:\n",
        "machine:\n    sysctls:\n        net.core.somaxconn: \"65535\"\n",
        1,
    );

    let r = h.apply(admin(), &cfg, Mode::Auto, true).unwrap();
    assert!(
        r.mode_details.ends_with("\nNo changes."),
        "{}",
        r.mode_details
    );
    let r = h.apply(admin(), &changed, Mode::NoReboot, true).unwrap();
    assert!(
        r.mode_details
            .contains("+        net.core.somaxconn: \"65535\""),
        "{}",
        r.mode_details
    );

    let r = h.apply(admin(), &changed, Mode::Try, false).unwrap();
    assert!(
        r.mode_details
            .ends_with("will be automatically reverted back in 1m0s"),
        "{}",
        r.mode_details
    );
    let r = h.apply(admin(), &changed, Mode::Staged, false).unwrap();
    assert_eq!(
        r.mode_details,
        "Staged configuration to be applied after the next reboot"
    );
    let other_disk = cfg.replace("disk: /dev/nvme0n1", "disk: /dev/sdb");
    let err = h
        .apply(admin(), &other_disk, Mode::NoReboot, false)
        .unwrap_err();
    assert!(err.to_string().contains("machine.install"), "{err}");
    let r = h.apply(admin(), &other_disk, Mode::Auto, true).unwrap();
    assert_eq!(r.mode, Mode::Reboot as i32);

    // Upgrade: acknowledged, then the node reboots into the new version.
    let boots = h.boots();
    let c = h.connect(admin()).unwrap();
    let u = talm::talos::block_on(c.upgrade(machine::UpgradeRequest {
        image: "ghcr.io/siderolabs/installer:v1.13.8".into(),
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(u.ack, "Upgrade request received");
    assert_eq!(u.actor_id.len(), 36);
    h.wait_reboot(boots);
    let c = h.connect(admin()).unwrap();
    assert_eq!(
        talm::talos::block_on(c.version())
            .unwrap()
            .version
            .unwrap()
            .tag,
        "v1.13.8"
    );

    // Reset: validation, then back to maintenance.
    let err = talm::talos::block_on(c.reset(machine::ResetRequest {
        mode: machine::reset_request::WipeMode::SystemDisk as i32,
        user_disks_to_wipe: vec!["/dev/nvme0n1".into()],
        ..Default::default()
    }))
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("wipe mode SYSTEM_DISK doesn't support UserDisksToWipe parameter"),
        "{err}"
    );
    let boots = h.boots();
    talm::talos::block_on(c.reset(machine::ResetRequest {
        graceful: true,
        reboot: true,
        ..Default::default()
    }))
    .unwrap();
    h.wait_reboot(boots);
    let (cn, _, _) = sans(&server_cert(&h.addr));
    assert_eq!(cn, "maintenance-service.talos.dev");
}

#[test]
fn faults_end_with_clear_errors() {
    let refused = Harness::start("127.0.2.5", |s| s.faults.refuse = true);
    let err = refused.connect(Auth::Insecure).err().unwrap();
    assert_eq!(
        err.to_string(),
        "node 127.0.2.5: connect: connection refused"
    );

    let h = Harness::start("127.0.2.6", |_| {});
    h.node().set_faults(Faults {
        fail: [(
            "Version".to_string(),
            "Unavailable: apid is restarting".to_string(),
        )]
        .into(),
        ..Faults::default()
    });
    let c = h.connect(Auth::Insecure).unwrap();
    let err = talm::talos::block_on(c.version()).unwrap_err();
    assert!(
        err.to_string().contains("node 127.0.2.6: Version:")
            && err.to_string().contains("apid is restarting"),
        "{err}"
    );

    h.node().set_faults(Faults {
        drop: vec!["List".into()],
        ..Faults::default()
    });
    let err = talm::talos::block_on(c.list("network", "LinkStatuses.net.talos.dev")).unwrap_err();
    assert!(err.to_string().contains("the connection was cut"), "{err}");

    h.node().set_faults(Faults {
        delay: "3s".into(),
        ..Faults::default()
    });
    let c = talm::talos::block_on(Client::connect(
        &h.addr,
        None,
        &ClientOptions {
            auth: Auth::Insecure,
            timeout: Duration::from_millis(500),
        },
    ))
    .unwrap();
    let started = std::time::Instant::now();
    let err = talm::talos::block_on(c.version()).unwrap_err();
    assert!(err.to_string().contains("no answer within"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn reboots_keep_state_and_streams_serve() {
    let h = Harness::start("127.0.2.7", |_| {});
    h.install();
    let c = h.connect(admin()).unwrap();
    talm::talos::block_on(c.bootstrap(machine::BootstrapRequest::default())).unwrap();
    let boots = h.boots();
    let r = talm::talos::block_on(c.reboot(machine::RebootRequest::default())).unwrap();
    assert_eq!(r.actor_id.len(), 36);
    h.wait_reboot(boots);
    // Down for the reboot, up again with the same config and etcd data.
    let c = h.connect(admin()).unwrap();
    let err = talm::talos::block_on(c.bootstrap(machine::BootstrapRequest::default())).unwrap_err();
    assert!(err.to_string().contains("AlreadyExists"), "{err}");
    let services = talm::talos::block_on(c.services()).unwrap();
    assert!(
        services
            .iter()
            .any(|s| s.id == "etcd" && s.state == "Running"),
        "{services:?}"
    );
    let logs = String::from_utf8(
        talm::talos::block_on(c.logs(machine::LogsRequest {
            id: "kubelet".into(),
            tail_lines: 2,
            ..Default::default()
        }))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(logs.lines().count(), 2, "{logs}");
    let dmesg = String::from_utf8(
        talm::talos::block_on(c.dmesg(machine::DmesgRequest::default())).unwrap(),
    )
    .unwrap();
    assert!(
        dmesg.contains("(boot 3)"),
        "install and reboot are two boots after the first: {dmesg}"
    );
    let watched =
        talm::talos::block_on(c.watch_current("network", "LinkStatuses.net.talos.dev")).unwrap();
    assert_eq!(watched.len(), 2, "lo and eth0");
    assert_eq!(
        talm::talos::block_on(c.hostname()).unwrap().len(),
        "talos-xxx-yyy".len()
    );
}

#[test]
fn configured_nodes_forward_to_each_other() {
    let ips: Vec<IpAddr> = vec!["127.0.2.8".parse().unwrap(), "127.0.2.9".parse().unwrap()];
    let specs = ips
        .iter()
        .map(|ip| {
            let mut s = NodeSpec::new(*ip, 50000);
            s.reboot_delay = Duration::from_millis(300);
            s
        })
        .collect();
    let h = Harness {
        sim: Some(talm::talos::block_on(Sim::start(specs)).unwrap()),
        addr: "127.0.2.8".into(),
    };
    h.install();
    // Through node A to node B, still in maintenance: apid's forward fails its handshake.
    let via = talm::talos::block_on(Client::connect(
        "127.0.2.8",
        Some("127.0.2.9"),
        &opts(admin()),
    ))
    .unwrap();
    let err = talm::talos::block_on(via.version()).unwrap_err();
    assert!(
        err.to_string()
            .contains("node 127.0.2.9 (via 127.0.2.8:50000): Version:")
            && err
                .to_string()
                .contains("certificate signed by unknown authority"),
        "{err}"
    );
    // Once B is configured too, A forwards and the reply names B.
    let b = Harness {
        sim: None,
        addr: "127.0.2.9".into(),
    };
    let node_b = Arc::clone(h.sim.as_ref().unwrap().node("127.0.2.9").unwrap());
    let boots = node_b.state().boots;
    b.apply(
        Auth::Insecure,
        &config(MachineType::Worker, Some("/dev/nvme0n1")),
        machine::apply_configuration_request::Mode::Auto,
        false,
    )
    .unwrap();
    talm::talos::block_on(async move {
        let mut rx = node_b.up.subscribe();
        tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|x| *x > boots))
            .await
            .unwrap()
            .unwrap();
    });
    let v = talm::talos::block_on(via.version()).unwrap();
    assert_eq!(v.metadata.unwrap().hostname, "127.0.2.9");
    let err =
        talm::talos::block_on(via.bootstrap(machine::BootstrapRequest::default())).unwrap_err();
    assert!(
        err.to_string()
            .contains("bootstrap is only available on control plane nodes"),
        "{err}"
    );
    // COSI goes one-to-one through `node`.
    let mt =
        talm::talos::block_on(via.get("config", "MachineTypes.config.talos.dev", "machine-type"))
            .unwrap()
            .unwrap();
    assert_eq!(mt.spec.unwrap().yaml_spec.trim(), "worker");
}
