//! Resources, limits and writes as real Talos has them: proto_spec, grpc-go's size and ALPN rules, client configs, refused COSI writes, followed logs.

use super::*;

#[test]
fn every_resource_carries_its_proto_spec() {
    use talm::proto::talos::resource::definitions::network;
    let lan = net::subnet(24);
    let h = Nodes::start(&[lan.host(6)], |_| {});
    let ip: std::net::Ipv4Addr = h.addr.parse().unwrap();
    let gw: std::net::Ipv4Addr = lan.host(1).parse().unwrap();
    h.install_control_plane(&h.addr);
    let c = h.connect(&h.addr, admin()).unwrap();
    // A META tag, so MetaKeys has a resource to carry a spec.
    on(c.meta_write(0x0c, b"tag".to_vec())).unwrap();
    let defs = on(c.list("meta", RDS)).unwrap();
    assert_eq!(defs.len(), talm::registry::registry().types.len());
    // The types the simulator holds content for; every other registered type lists empty.
    let content = [
        "Disks.block.talos.dev",
        "SystemDisks.block.talos.dev",
        "LinkStatuses.net.talos.dev",
        "AddressStatuses.net.talos.dev",
        "RouteStatuses.net.talos.dev",
        "HostnameStatuses.net.talos.dev",
        "NodeAddresses.net.talos.dev",
        "ResolverStatuses.net.talos.dev",
        "MachineTypes.config.talos.dev",
        "MachineConfigs.config.talos.dev",
        "DiscoveredVolumes.block.talos.dev",
        "MetaKeys.runtime.talos.dev",
        "MachineStatuses.runtime.talos.dev",
        "SecurityStates.talos.dev",
        "Versions.runtime.talos.dev",
        "Services.v1alpha1.talos.dev",
        "TimeStatuses.v1alpha1.talos.dev",
        "Processors.hardware.talos.dev",
        "MemoryModules.hardware.talos.dev",
        "SystemInformations.hardware.talos.dev",
        "Identities.cluster.talos.dev",
        "Affiliates.cluster.talos.dev",
        "Members.cluster.talos.dev",
        "Nodenames.kubernetes.talos.dev",
        "APIServerConfigs.kubernetes.talos.dev",
        "ControllerManagerConfigs.kubernetes.talos.dev",
        "SchedulerConfigs.kubernetes.talos.dev",
        "OSRootSecrets.secrets.talos.dev",
        "EtcdRootSecrets.secrets.talos.dev",
        "MountStatuses.runtime.talos.dev",
        // A configured control plane whose etcd is not bootstrapped: no static pods yet.
        "KubeletSpecs.kubernetes.talos.dev",
        "Manifests.kubernetes.talos.dev",
        "VolumeStatuses.block.talos.dev",
        "KubernetesRootSecrets.secrets.talos.dev",
        "ApiCertificates.secrets.talos.dev",
        RDS,
        "Namespaces.meta.cosi.dev",
    ];
    let mut with_content = 0;
    for d in &defs {
        let spec = d.spec.as_ref().unwrap();
        let rd = cosi::meta::ResourceDefinitionSpec::decode(spec.proto_spec.as_slice()).unwrap();
        let items = on(c.list(&rd.default_namespace, &rd.resource_type)).unwrap();
        let held = content.contains(&rd.resource_type.as_str());
        assert_eq!(
            !items.is_empty(),
            held,
            "{} has resources",
            rd.resource_type
        );
        with_content += usize::from(held);
        for r in items {
            let s = r.spec.unwrap();
            assert!(
                !s.proto_spec.is_empty(),
                "{} {} has a proto_spec",
                rd.resource_type,
                r.metadata.unwrap().id
            );
        }
        let sensitive = talm::registry::registry()
            .find(&rd.resource_type)
            .unwrap()
            .sensitive;
        assert_eq!(rd.sensitivity == 1, sensitive, "{}", rd.resource_type);
    }
    assert_eq!(with_content, content.len());
    let eth0 = on(c.get("network", LINKS, "eth0")).unwrap().unwrap();
    let link = network::LinkStatusSpec::decode(eth0.spec.unwrap().proto_spec.as_slice()).unwrap();
    assert_eq!(
        (link.r#type, link.mtu, link.operational_state),
        (1, 1500, 6)
    );
    let o = ip.octets();
    assert_eq!(link.hardware_addr, [0x52, 0x54, 0x00, o[1], o[2], o[3]]);
    assert_eq!(link.flags & 0x1, 1, "UP");
    let route = on(c.get(
        "network",
        "RouteStatuses.net.talos.dev",
        &format!("inet4/{gw}//1024"),
    ))
    .unwrap()
    .unwrap();
    let route =
        network::RouteStatusSpec::decode(route.spec.unwrap().proto_spec.as_slice()).unwrap();
    assert_eq!(route.gateway.unwrap().ip, gw.octets());
    assert_eq!(
        (route.table, route.protocol, route.priority),
        (254, 16, 1024)
    );
    let mc = on(c.get("config", "MachineConfigs.config.talos.dev", "v1alpha1"))
        .unwrap()
        .unwrap();
    let spec = talm::proto::resource::config::MachineConfigSpec::decode(
        mc.spec.unwrap().proto_spec.as_slice(),
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(spec.yaml_marshalled).unwrap(),
        config(MachineType::ControlPlane, Some("/dev/nvme0n1"))
    );
}

#[test]
fn oversized_requests_are_resource_exhausted() {
    let h = Nodes::start(&[net::addr()], |_| {});
    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
    let req = machine::ApplyConfigurationRequest {
        data: vec![b'#'; (32 << 20) + 1],
        ..Default::default()
    };
    let len = req.encoded_len();
    let st = on(c
        .machine()
        .max_encoding_message_size(usize::MAX)
        .apply_configuration(req))
    .unwrap_err();
    assert_eq!(st.code(), Code::ResourceExhausted, "{st:?}");
    assert_eq!(
        st.message(),
        format!("grpc: received message larger than max ({len} vs. 33554432)")
    );
    // The COSI service takes Talos's 32 MiB too, not tonic's default 4 MiB.
    let list = cosi::ListRequest {
        namespace: "network".into(),
        r#type: LINKS.into(),
        options: Some(cosi::ListOptions {
            label_query: vec![query(vec![term(
                &"k".repeat(5 << 20),
                cosi::label_term::Operation::Exists,
                &[],
            )])],
            id_query: None,
        }),
    };
    let found = on(async {
        let mut s = c
            .state()
            .max_encoding_message_size(usize::MAX)
            .list(list)
            .await
            .unwrap()
            .into_inner();
        let mut n = 0;
        while s.message().await.unwrap().is_some() {
            n += 1;
        }
        n
    });
    assert_eq!(found, 0, "no link has that label");
}

/// A TLS connection to `addr`, offering `alpn`; what the server says after an HTTP/2 preface
/// (`None` when it closed the connection instead).
fn after_preface(addr: &str, alpn: Option<&[u8]>) -> Option<usize> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = addr.to_string();
    let alpn = alpn.map(<[u8]>::to_vec);
    on(async move {
        let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NodeVerifier::new(None, Default::default())))
        .with_no_client_auth();
        cfg.alpn_protocols = alpn.into_iter().collect();
        let tcp = tokio::net::TcpStream::connect(format!("{addr}:50000"))
            .await
            .unwrap();
        let name = rustls::pki_types::ServerName::try_from(addr).unwrap();
        let mut tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
            .connect(name, tcp)
            .await
            .ok()?;
        // The client preface and an empty SETTINGS frame.
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        tls.write_all(&hello).await.ok()?;
        let mut buf = [0u8; 64];
        match tokio::time::timeout(Duration::from_secs(5), tls.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => Some(n),
            _ => None,
        }
    })
}

#[test]
fn clients_without_alpn_are_dropped() {
    let h = Nodes::start(&[net::addr()], |_| {});
    assert!(
        after_preface(&h.addr, Some(b"h2")).is_some(),
        "h2 is served"
    );
    assert_eq!(after_preface(&h.addr, None), None, "no ALPN: dropped");
}

#[test]
fn generate_client_configuration_issues_certificates_for_admins() {
    let h = Nodes::start(&[net::addr()], |_| {});
    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
    let err =
        on(c.generate_client_configuration(&["os:reader"], Duration::from_secs(3600))).unwrap_err();
    assert!(err.to_string().contains("not authorized"), "{err:#}");
    h.install_control_plane(&h.addr);
    let c = h.connect(&h.addr, admin()).unwrap();
    let g = on(c.generate_client_configuration(&["os:reader"], Duration::from_secs(3600))).unwrap();
    let (ca, _) = bundle().os_ca().unwrap();
    assert_eq!(String::from_utf8(g.ca.clone()).unwrap(), ca);
    let crt = String::from_utf8(g.crt.clone()).unwrap();
    let (_, der) = talm::secrets::pki::pem_decode(&crt).unwrap();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    let orgs: Vec<_> = cert
        .subject()
        .iter_organization()
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    assert_eq!(orgs, ["os:reader"]);
    let v = cert.validity();
    let life = v.not_after.timestamp() - v.not_before.timestamp();
    assert_eq!(life, 3600, "crt_ttl");
    let tc: serde_yaml_ng::Value = serde_yaml_ng::from_slice(&g.talosconfig).unwrap();
    assert_eq!(tc["context"].as_str(), Some("reader@sim"));
    let ctx = &tc["contexts"]["reader@sim"];
    assert_eq!(ctx["endpoints"], serde_yaml_ng::Value::Sequence(vec![]));

    // The issued identity works, with the reader's rights.
    let key =
        talm::secrets::pki::PrivateKey::from_pem(std::str::from_utf8(&g.key).unwrap()).unwrap();
    let reader = h.connect(&h.addr, identity_auth(&ca, crt, &key)).unwrap();
    assert!(on(reader.list("network", LINKS)).is_ok());
    let err = on(reader.generate_client_configuration(&["os:admin"], Duration::from_secs(60)))
        .unwrap_err();
    assert!(err.to_string().contains("not authorized"), "{err:#}");

    let req = machine::GenerateClientConfigurationRequest {
        roles: vec!["os:admin".into()],
        crt_ttl: None,
    };
    let st = on(c.machine().generate_client_configuration(req)).unwrap_err();
    assert_eq!(
        (st.code(), st.message()),
        (Code::InvalidArgument, "crt_ttl should be positive")
    );
}

#[test]
fn cosi_writes_are_refused_as_talos_refuses_them() {
    let h = Nodes::start(&[net::addr()], |_| {});
    h.install_control_plane(&h.addr);
    let admin = h.connect(&h.addr, admin()).unwrap();
    let reader = h.connect(&h.addr, mutual(&["os:reader"])).unwrap();
    let eth0 = on(admin.get("network", LINKS, "eth0")).unwrap();
    let create = |c: &Client, resource: Option<cosi::Resource>| {
        let req = cosi::CreateRequest {
            resource,
            options: None,
        };
        on(c.state().create(req)).unwrap_err()
    };
    let st = create(&admin, eth0.clone());
    assert_eq!(
        (st.code(), st.message()),
        (Code::PermissionDenied, "write access is not allowed")
    );
    let st = create(&reader, eth0.clone());
    assert_eq!(
        (st.code(), st.message()),
        (Code::PermissionDenied, "not authorized")
    );
    let st = create(&admin, None);
    assert_eq!(
        (st.code(), st.message()),
        (Code::Unknown, "metadata is missing")
    );
    let st = on(admin.state().update(cosi::UpdateRequest {
        new_resource: eth0,
        options: None,
    }))
    .unwrap_err();
    assert_eq!(
        (st.code(), st.message()),
        (Code::PermissionDenied, "write access is not allowed")
    );
    let st = on(admin.state().destroy(cosi::DestroyRequest {
        namespace: "network".into(),
        r#type: LINKS.into(),
        id: "eth0".into(),
        options: None,
    }))
    .unwrap_err();
    assert_eq!(
        (st.code(), st.message()),
        (Code::PermissionDenied, "write access is not allowed")
    );
}

async fn until(s: &mut DataStream, needle: &str) -> String {
    let mut got = String::new();
    while !got.contains(needle) {
        let chunk = tokio::time::timeout(Duration::from_secs(5), s.next())
            .await
            .unwrap_or_else(|_| panic!("{needle:?} within 5s; got {got:?}"))
            .unwrap()
            .expect("the stream is still open");
        got.push_str(&String::from_utf8(chunk).unwrap());
    }
    got
}

#[test]
fn followed_logs_and_dmesg_carry_new_lines_until_cancelled() {
    let h = Nodes::start(&[net::addr()], |_| {});
    h.install_control_plane(&h.addr);
    let c = h.connect(&h.addr, admin()).unwrap();
    let reader = h.connect(&h.addr, mutual(&["os:reader"])).unwrap();
    let logs = |tail_lines, follow| machine::LogsRequest {
        namespace: "system".into(),
        id: "machined".into(),
        follow,
        tail_lines,
        ..Default::default()
    };
    let none = on(c.logs(logs(0, false))).unwrap();
    assert!(none.is_empty(), "tail 0: no history");
    on(async {
        let mut log = reader.logs_stream(logs(2, true)).await.unwrap();
        let first = until(&mut log, "started with PID 1893\n").await;
        // machined's lines after their stamp (`2026/12/06 05:42:06.015641 `).
        let said: Vec<&str> = first.lines().map(|l| &l[27..]).collect();
        assert_eq!(
            said,
            [
                "[talos] service[apid](Waiting): Waiting for service \"containerd\" to be \"up\", api certificates",
                "[talos] service[udevd](Running): Process Process([\"/sbin/udevd\" \"--resolve-names=never\"]) started with PID 1893"
            ]
        );
        let mut kmsg = reader
            .dmesg_stream(machine::DmesgRequest {
                follow: true,
                tail: true,
            })
            .await
            .unwrap();
        let silent = tokio::time::timeout(Duration::from_millis(300), kmsg.next()).await;
        assert!(
            silent.is_err(),
            "tail: no history, and the stream stays open"
        );
        c.bootstrap(machine::BootstrapRequest::default())
            .await
            .unwrap();
        let line = until(&mut log, "\n").await;
        assert!(
            line.ends_with(" [talos] bootstrap request received\n") && line.len() > 60,
            "{line:?}"
        );
        let record = until(&mut kmsg, "\n").await;
        assert!(
            record.starts_with("user: warning: [20")
                && record.ends_with("Z]: [talos] bootstrap request received\n"),
            "{record:?}"
        );
        let open = tokio::time::timeout(Duration::from_millis(300), log.next()).await;
        assert!(open.is_err(), "follow keeps the stream open");
    });
    let st = on(c.machine().logs(machine::LogsRequest {
        namespace: "system".into(),
        id: "nosuch".into(),
        ..Default::default()
    }))
    .map(|_| ());
    let st = match st {
        Err(st) => st,
        Ok(()) => panic!("an unknown log is refused"),
    };
    assert_eq!(
        (st.code(), st.message()),
        (Code::Unknown, "log \"nosuch\" was not registered")
    );
}
