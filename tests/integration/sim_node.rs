//! The simulated node against `talos-api.md`, driven in-process through the native client over
//! real TLS on loopback: maintenance mode, apply and reboot into mTLS, certificates and roles.

use crate::common::expect::addrs;
use crate::common::net;
use crate::common::sim::*;
use talm::config::generate::MachineType;
use talm::proto::machine;
use talm::secrets::bundle::Bundle;
use talm::secrets::contract::Contract;
use talm::talos::client::Client;
use talm::talos::creds::Auth;
use time::OffsetDateTime;

#[test]
fn maintenance_mode_is_read_only_and_self_signed() {
    let h = Nodes::start(&[net::addr()], |_| {});
    let (cn, ips, server_only) = sans(&server_cert(&h.addr));
    assert_eq!(cn, "maintenance-service.talos.dev");
    // The node's own address, and 127.0.0.1, which a maintenance certificate always names.
    assert!(
        ips.contains(&h.addr) && ips.contains(&"127.0.0.1".to_string()),
        "{ips:?}"
    );
    assert!(server_only);

    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
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
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: get MachineConfigs.config.talos.dev: not authorized"
    );
    let err = talm::talos::block_on(c.list("network", "Bogus.talos.dev")).unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: list Bogus.talos.dev: resource type \"Bogus.talos.dev\" is not supported"
    );
    assert!(
        talm::talos::block_on(c.get("network", "HostnameStatuses.net.talos.dev", "hostname"))
            .unwrap()
            .is_none()
    );

    // Everything that changes a configured node is refused.
    let err = talm::talos::block_on(c.bootstrap(machine::BootstrapRequest::default())).unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: Bootstrap: not authorized"
    );
    assert_eq!(addrs(&talm::error::render(&err)), "\
Error: node $A1: Bootstrap: not authorized
hint: the node is in maintenance mode, where only reads and applying a config are allowed: apply one first (`talm apply -i`), then talk to it with the talosconfig (without -i)
");
    let err = talm::talos::block_on(c.kubeconfig()).unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: Kubeconfig: not authorized"
    );

    // Apply validates like Talos: unknown keys, and an install disk on metal.
    let bad = config(MachineType::ControlPlane, Some("/dev/nvme0n1")).replacen(
        "machine:\n",
        "machine:\n    bogusKey: 1\n",
        1,
    );
    let err = h
        .apply(
            &h.addr,
            Auth::Insecure,
            &bad,
            machine::apply_configuration_request::Mode::Auto,
            false,
        )
        .unwrap_err();
    assert_eq!(addrs(&err.to_string()), "\
node $A1: ApplyConfiguration: error decoding document /v1alpha1/ (line 1): unknown keys found during decoding:
machine:
    bogusKey: 1
");
    assert_eq!(addrs(&talm::error::render(&err)), "\
Error: node $A1: ApplyConfiguration: error decoding document /v1alpha1/ (line 1): unknown keys found during decoding:
machine:
    bogusKey: 1

hint: the maintenance Talos parser on the node didn't recognize a field talm injected. this usually means templateOptions.talosVersion / --talos-version is set to a contract newer than the running Talos. reboot the node into a maintenance image matching the configured contract, or lower templateOptions.talosVersion / --talos-version to match what's running.
");
    let err = h
        .apply(
            &h.addr,
            Auth::Insecure,
            &config(MachineType::ControlPlane, None),
            machine::apply_configuration_request::Mode::Auto,
            false,
        )
        .unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: ApplyConfiguration: rpc error: code = InvalidArgument desc = 1 error occurred:
\t* either install disk or diskSelector should be defined

"
    );

    // A dry run changes nothing and shows an all-added diff.
    let r = h
        .apply(
            &h.addr,
            Auth::Insecure,
            &config(MachineType::ControlPlane, Some("/dev/nvme0n1")),
            machine::apply_configuration_request::Mode::Auto,
            true,
        )
        .unwrap();
    assert!(r.mode_details.starts_with("Dry run summary:\nApplied configuration without a reboot (skipped in dry-run).\nConfig diff:\n\n--- a\n+++ b\n"), "{}", r.mode_details);
    assert!(h.node(&h.addr).state().in_maintenance());
}

#[test]
fn apply_reboots_into_mutual_tls_with_roles() {
    let [ip, nobody] = net::addrs();
    let h = Nodes::start(&[&ip], |_| {});
    h.install_control_plane(&h.addr);

    // Normal mode: the server cert is issued by the OS CA for the node's address.
    let (_, ips, server_only) = sans(&server_cert(&h.addr));
    assert!(ips.contains(&ip) && server_only);
    let err = h
        .connect(&h.addr, Auth::Insecure)
        .and_then(|c| talm::talos::block_on(c.version()))
        .unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: connect: the node asks for a client certificate: it is not in maintenance mode"
    );

    let c = h.connect(&h.addr, admin()).unwrap();
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
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: Bootstrap: rpc error: code = AlreadyExists desc = etcd data directory is not empty"
    );
    let routed =
        talm::talos::block_on(Client::connect(&h.addr, Some(&ip), &opts(admin()))).unwrap();
    let err =
        talm::talos::block_on(routed.bootstrap(machine::BootstrapRequest::default())).unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: Bootstrap: rpc error: code = AlreadyExists desc = etcd data directory is not empty"
    );
    let v = talm::talos::block_on(routed.version()).unwrap();
    assert_eq!(
        v.metadata.unwrap().hostname,
        ip,
        "one-to-many replies name the node"
    );
    let elsewhere =
        talm::talos::block_on(Client::connect(&h.addr, Some(&nobody), &opts(admin()))).unwrap();
    let err = talm::talos::block_on(elsewhere.version()).unwrap_err();
    assert_eq!(addrs(&err.to_string()), "\
node $A1 (via $A2:50000): Version: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp $A1:50000: connect: connection refused\"");

    // Kubeconfig: the cluster CA signs an admin certificate; the server is the cluster endpoint.
    let kc = String::from_utf8(talm::talos::block_on(c.kubeconfig()).unwrap()).unwrap();
    assert!(
        kc.contains("server: https://127.0.0.1:6443") && kc.contains("current-context: admin@sim"),
        "{kc}"
    );

    // A reader may read but not change anything.
    let reader = h.connect(&h.addr, mutual(&["os:reader"])).unwrap();
    talm::talos::block_on(reader.version()).unwrap();
    let err = talm::talos::block_on(reader.kubeconfig()).unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: Kubeconfig: not authorized"
    );
    let err =
        talm::talos::block_on(reader.get("config", "MachineConfigs.config.talos.dev", "v1alpha1"))
            .unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: get MachineConfigs.config.talos.dev: not authorized"
    );
    let err = h
        .apply(
            &h.addr,
            mutual(&["os:reader"]),
            &config(MachineType::ControlPlane, Some("/dev/nvme0n1")),
            machine::apply_configuration_request::Mode::Auto,
            false,
        )
        .unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: ApplyConfiguration: not authorized"
    );
}

#[test]
fn client_certificates_from_another_ca_are_refused() {
    let h = Nodes::start(&[net::addr()], |_| {});
    h.install_control_plane(&h.addr);
    // A certificate from another cluster's CA.
    let other =
        Bundle::generate(Contract::parse("v1.6").unwrap(), OffsetDateTime::now_utc()).unwrap();
    let (ca, key) = other.os_ca().unwrap();
    let cert = talm::secrets::pki::client_cert(&ca, &key, &["os:admin"], OffsetDateTime::now_utc())
        .unwrap();
    let (our_ca, _) = bundle().os_ca().unwrap();
    let foreign = identity_auth(&our_ca, cert.cert_pem, &cert.key);
    let err = h
        .connect(&h.addr, foreign)
        .and_then(|c| talm::talos::block_on(c.version()))
        .unwrap_err();
    rejected_with(&err, "UnknownCA");
    // An expired certificate from the right CA, and one whose usage is not client-auth only.
    let (our_ca, our_key) = bundle().os_ca().unwrap();
    let past = OffsetDateTime::now_utc() - time::Duration::days(800);
    let expired = talm::secrets::pki::client_cert(&our_ca, &our_key, &["os:admin"], past).unwrap();
    let expired = identity_auth(&our_ca, expired.cert_pem, &expired.key);
    let err = h
        .connect(&h.addr, expired)
        .and_then(|c| talm::talos::block_on(c.version()))
        .unwrap_err();
    assert_eq!(addrs(&err.to_string()), "\
node $A1: Version: the node rejected the client certificate as expired or not valid yet (TLS alert CertificateExpired), though it is valid by this machine's clock");
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
    let both = identity_auth(&our_ca, both.pem(), &key);
    let err = h
        .connect(&h.addr, both)
        .and_then(|c| talm::talos::block_on(c.version()))
        .unwrap_err();
    rejected_with(&err, "HandshakeFailure");
    // Our client refuses a server whose CA is not the talosconfig's.
    let wrong_ca = Auth::Mutual {
        ca_pem: ca,
        identity: match admin() {
            Auth::Mutual { identity, .. } => identity,
            _ => unreachable!(),
        },
    };
    let err = h
        .connect(&h.addr, wrong_ca)
        .and_then(|c| talm::talos::block_on(c.version()))
        .unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: connect: the node's certificate is not signed by the talosconfig's CA"
    );
}

/// `err` is the node's refusal of the client certificate with TLS alert `alert`: seen on the
/// call itself, or (a race with the client's first write) on a second connection.
#[track_caller]
fn rejected_with(err: &impl std::fmt::Display, alert: &str) {
    let said = addrs(&err.to_string());
    let ways = [
        format!("node $A1: Version: the node rejected the client certificate (TLS alert {alert})"),
        format!("node $A1: Version: the node rejected the client certificate (it closed the connection, and answered a second one with TLS alert {alert})"),
    ];
    assert!(ways.contains(&said), "{said}");
}
