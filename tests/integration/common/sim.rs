//! Simulated Talos nodes started in-process for a test, on loopback addresses of its own, and
//! the credentials and configs tests drive them with.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use talm::config::generate::{self, Input, MachineType, Options};
use talm::proto::machine;
use talm::proto::machine::apply_configuration_request::Mode;
use talm::secrets::bundle::Bundle;
use talm::secrets::contract::Contract;
use talm::sim::{Node, NodeSpec, Sim};
use talm::talos::client::{Client, Options as ClientOptions};
use talm::talos::creds::{self, Auth};
use time::OffsetDateTime;
use x509_parser::prelude::{FromDer, X509Certificate};

const SECRETS: &str = include_str!("../../fixtures/talos/stability/secrets.yaml");

pub fn bundle() -> Bundle {
    Bundle::load(SECRETS, "secrets.yaml").unwrap()
}

pub fn config(kind: MachineType, install_disk: Option<&str>) -> String {
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
pub fn mutual(roles: &[&str]) -> Auth {
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

pub fn admin() -> Auth {
    mutual(&["os:admin"])
}

pub fn opts(auth: Auth) -> ClientOptions {
    ClientOptions {
        auth,
        timeout: Duration::from_secs(5),
    }
}

/// The guide's line: `talm template -e IP --nodes IP -t templates/controlplane.yaml -i`.
pub fn template_node(d: &super::Dir, ip: &str) -> String {
    d.talm([
        "template",
        "-e",
        ip,
        "--nodes",
        ip,
        "-t",
        "templates/controlplane.yaml",
        "-i",
    ])
    .ok()
    .stdout
}

/// Credentials for a certificate and its key.
pub fn identity_auth(ca_pem: &str, cert_pem: String, key: &talm::secrets::pki::PrivateKey) -> Auth {
    Auth::Mutual {
        ca_pem: ca_pem.to_string(),
        identity: creds::Identity {
            cert_pem,
            key_pem: talm::secrets::pki::pem_encode("PRIVATE KEY", key.pkcs8_der()),
        },
    }
}

/// Running nodes; stopped when dropped. `addr` is the first node's address.
pub struct Nodes {
    sim: Option<Sim>,
    pub addr: String,
}

impl Nodes {
    /// Nodes at `addrs` (port 50000, 300 ms reboots), each adjusted by `tweak`. The addresses
    /// come from `super::net`, so no other test listens on or dials them.
    pub fn start<A: AsRef<str>>(addrs: &[A], tweak: impl Fn(&mut NodeSpec)) -> Nodes {
        let specs = addrs
            .iter()
            .map(|a| {
                let ip: IpAddr = a.as_ref().parse().unwrap();
                let mut spec = NodeSpec::new(ip, 50000);
                spec.reboot_delay = Duration::from_millis(300);
                tweak(&mut spec);
                spec
            })
            .collect();
        Nodes {
            sim: Some(talm::talos::block_on(Sim::start(specs)).unwrap()),
            addr: addrs[0].as_ref().to_string(),
        }
    }

    pub fn node(&self, addr: &str) -> &Arc<Node> {
        self.sim.as_ref().unwrap().node(addr).unwrap()
    }

    pub fn boots(&self, addr: &str) -> u64 {
        self.node(addr).state().boots
    }

    /// Waits for the boot after `boots_before` (the reboot an apply, upgrade or reset starts).
    pub fn wait_reboot(&self, addr: &str, boots_before: u64) {
        let node = Arc::clone(self.node(addr));
        talm::talos::block_on(async move {
            let mut rx = node.up.subscribe();
            tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|b| *b > boots_before))
                .await
                .unwrap()
                .unwrap();
        });
    }

    /// Waits until the node at `addr` is down and stays so (a shutdown, a reset without reboot).
    pub fn wait_down(&self, addr: &str) {
        let node = Arc::clone(self.node(addr));
        talm::talos::block_on(async move {
            let mut rx = node.up.subscribe();
            tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|b| *b == 0))
                .await
                .unwrap()
                .unwrap();
        });
        assert!(self.node(addr).state().changes.powered_off, "powered off");
    }

    pub fn connect(&self, addr: &str, auth: Auth) -> anyhow::Result<Client> {
        talm::talos::block_on(Client::connect(addr, None, &opts(auth)))
    }

    pub fn apply(
        &self,
        addr: &str,
        auth: Auth,
        data: &str,
        mode: Mode,
        dry_run: bool,
    ) -> anyhow::Result<machine::ApplyConfiguration> {
        let c = self.connect(addr, auth)?;
        talm::talos::block_on(c.apply(machine::ApplyConfigurationRequest {
            data: data.as_bytes().to_vec(),
            mode: mode as i32,
            dry_run,
            try_mode_timeout: None,
        }))
    }

    /// Applies `config` to the maintenance node at `addr` and waits until it is back configured.
    pub fn install(&self, addr: &str, config: &str) {
        let boots = self.boots(addr);
        let r = self
            .apply(addr, Auth::Insecure, config, Mode::Auto, false)
            .unwrap();
        assert_eq!(r.mode, Mode::NoReboot as i32);
        assert_eq!(r.mode_details, "Applied configuration without a reboot");
        self.wait_reboot(addr, boots);
    }

    /// Configures the node at `addr` with the whole machine config of `d`'s `nodes/node1.yaml`
    /// (`talm template --full`).
    pub fn configure(&self, d: &super::Dir, addr: &str) {
        let full = d
            .talm([
                "template",
                "-f",
                "nodes/node1.yaml",
                "--full",
                "-i",
                "--show-secrets",
            ])
            .ok()
            .stdout;
        self.install(addr, &full);
    }

    /// A generic project with its control plane at `cp` (`nodes/cp.yaml`) and its worker at
    /// `worker` (`nodes/worker.yaml`) configured through `talm apply`.
    pub fn cluster(&self, cp: &str, worker: &str) -> super::Dir {
        let d = super::Dir::project("generic");
        d.write("nodes/cp.yaml", &template_node(&d, cp));
        let w = d
            .talm([
                "template",
                "-e",
                cp,
                "--nodes",
                worker,
                "-t",
                "templates/worker.yaml",
                "-i",
            ])
            .ok()
            .stdout;
        d.write("nodes/worker.yaml", &w);
        for (ip, file) in [(cp, "nodes/cp.yaml"), (worker, "nodes/worker.yaml")] {
            let boots = self.boots(ip);
            d.talm(["apply", "-f", file, "-i"]).ok();
            self.wait_reboot(ip, boots);
        }
        d
    }

    /// Installs the test cluster's control-plane config on `addr`.
    pub fn install_control_plane(&self, addr: &str) {
        self.install(
            addr,
            &config(MachineType::ControlPlane, Some("/dev/nvme0n1")),
        );
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        if let Some(sim) = self.sim.take() {
            talm::talos::block_on(sim.stop());
        }
    }
}

pub fn server_cert(addr: &str) -> Vec<u8> {
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

pub fn sans(der: &[u8]) -> (String, Vec<String>, bool) {
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
