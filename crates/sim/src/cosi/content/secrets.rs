//! The node's roots of trust as Talos's secrets controllers derive them from the machine config
//! (sensitive types: only admins read them): OSRoot (the machine CA that issues the API's
//! certificates, the accepted CAs, the extra SANs and the join token) on every configured node
//! and, on control planes, EtcdRoot (the etcd CA) and KubernetesRoot (the cluster's CAs, keys
//! and endpoints); and APICertificates, the certificates apid serves with in this boot.

use serde_yaml_ng::Value;

use super::lookup::{at, text_at, texts_at, texts_or};
use super::{map, res, s, texts, Ctx};
use crate::cosi::facts::Res;

/// `{crt, key}` as Talos writes a PEM certificate and key (base64 of the PEM).
fn cert_and_key(crt: &str, key: &str) -> Value {
    map(vec![("crt", s(crt)), ("key", s(key))])
}

fn os_root(ctx: &Ctx) -> Option<Res> {
    let cfg = ctx.st.config.as_ref()?;
    let doc = cfg.v1alpha1();
    let (crt, key) = cfg.machine_ca();
    let mut accepted: Vec<String> = cfg.accepted_cas();
    if !crt.is_empty() {
        accepted.push(crt.clone());
    }
    // A worker's config holds the CA's certificate only: no issuing CA then.
    let issuing = if crt.is_empty() || key.is_empty() {
        Value::Null
    } else {
        cert_and_key(&crt, &key)
    };
    let (mut ips, mut names) = (Vec::new(), Vec::new());
    for san in cfg.cert_sans() {
        if san.parse::<std::net::IpAddr>().is_ok() {
            ips.push(san);
        } else {
            names.push(san);
        }
    }
    let api_access = doc
        .and_then(|d| {
            d.get("machine")?
                .get("features")?
                .get("kubernetesTalosAPIAccess")?
                .get("enabled")
        })
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if api_access {
        names.extend(["talos".to_string(), "talos.default".to_string()]);
    }
    Some(res(
        "secrets",
        "OSRootSecrets.secrets.talos.dev",
        "os",
        "secrets.RootOSController",
        map(vec![
            ("issuingCA", issuing),
            (
                "acceptedCAs",
                Value::Sequence(accepted.iter().map(|c| map(vec![("crt", s(c))])).collect()),
            ),
            ("certSANIPs", texts(&ips)),
            ("certSANDNSNames", texts(&names)),
            ("token", s(text_at(doc, &["machine", "token"]))),
        ]),
        1,
    ))
}

fn etcd_root(ctx: &Ctx) -> Option<Res> {
    let doc = ctx.st.config.as_ref()?.v1alpha1();
    ctx.is_control_plane().then(|| {
        res(
            "secrets",
            "EtcdRootSecrets.secrets.talos.dev",
            "etcd",
            "secrets.RootEtcdController",
            map(vec![(
                "etcdCA",
                cert_and_key(
                    &text_at(doc, &["cluster", "etcd", "ca", "crt"]),
                    &text_at(doc, &["cluster", "etcd", "ca", "key"]),
                ),
            )]),
            1,
        )
    })
}

/// A Go `*url.URL` as yaml.v3 writes the struct (lowercased field names).
fn url(text: &str) -> Value {
    let (scheme, rest) = text.split_once("://").unwrap_or(("", text));
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let e = || s("");
    map(vec![
        ("scheme", s(scheme)),
        ("opaque", e()),
        ("user", Value::Null),
        ("host", s(host)),
        ("path", s(path)),
        ("rawpath", e()),
        ("omithost", Value::from(false)),
        ("forcequery", Value::from(false)),
        ("rawquery", e()),
        ("fragment", e()),
        ("rawfragment", e()),
    ])
}

/// The first address of each service subnet (the API server's service IP).
fn api_server_ips(doc: Option<&Value>) -> Vec<String> {
    let subnets = texts_or(
        doc,
        &["cluster", "network", "serviceSubnets"],
        "10.96.0.0/12",
    );
    subnets
        .iter()
        .filter_map(|c| {
            let net = talm_base::netip::cidr_network(c)?;
            net.split('/').next()?.parse::<std::net::IpAddr>().ok()
        })
        .map(|ip| match ip {
            std::net::IpAddr::V4(a) => std::net::Ipv4Addr::from(u32::from(a) + 1).to_string(),
            std::net::IpAddr::V6(a) => std::net::Ipv6Addr::from(u128::from(a) + 1).to_string(),
        })
        .collect()
}

fn kubernetes_root(ctx: &Ctx) -> Option<Res> {
    let cfg = ctx.st.config.as_ref()?;
    if !ctx.is_control_plane() {
        return None;
    }
    let doc = cfg.v1alpha1();
    let t = |path: &[&str]| text_at(doc, path);
    let prism = doc
        .and_then(|d| d.get("machine")?.get("features")?.get("kubePrism"))
        .filter(|k| k.get("enabled").and_then(Value::as_bool) == Some(true));
    let local = match prism {
        Some(k) => format!(
            "https://127.0.0.1:{}",
            k.get("port").and_then(Value::as_u64).unwrap_or(7445)
        ),
        None => format!(
            "https://localhost:{}",
            doc.and_then(|d| d
                .get("cluster")?
                .get("controlPlane")?
                .get("localAPIServerPort"))
                .and_then(Value::as_u64)
                .unwrap_or(6443)
        ),
    };
    let sans = texts_at(doc, &["cluster", "apiServer", "certSANs"]);
    let (ca_crt, ca_key) = cfg.cluster_ca();
    let mut accepted: Vec<Value> = at(doc, &["cluster", "acceptedCAs"])
        .and_then(Value::as_sequence)
        .map(|v| {
            v.iter()
                .filter_map(|c| c.get("crt")?.as_str())
                .map(|c| map(vec![("crt", s(c))]))
                .collect()
        })
        .unwrap_or_default();
    if !ca_crt.is_empty() {
        accepted.push(map(vec![("crt", s(&ca_crt))]));
    }
    let issuing = if ca_key.is_empty() {
        Value::Null
    } else {
        cert_and_key(&ca_crt, &ca_key)
    };
    let token = t(&["cluster", "token"]);
    let (token_id, token_secret) = token.split_once('.').unwrap_or(("", ""));
    Some(res(
        "secrets",
        "KubernetesRootSecrets.secrets.talos.dev",
        "k8s",
        "secrets.RootKubernetesController",
        map(vec![
            ("name", s(cfg.cluster_name())),
            ("endpoint", url(&cfg.cluster_endpoint())),
            ("local_endpoint", url(&local)),
            ("certSANs", texts(&sans)),
            ("apiServerIPs", texts(&api_server_ips(doc))),
            ("dnsDomain", s(super::kubelet::dns_domain(doc))),
            ("issuingCA", issuing),
            ("acceptedCAs", Value::Sequence(accepted)),
            (
                "serviceAccount",
                map(vec![("key", s(t(&["cluster", "serviceAccount", "key"])))]),
            ),
            (
                "aggregatorCA",
                cert_and_key(
                    &t(&["cluster", "aggregatorCA", "crt"]),
                    &t(&["cluster", "aggregatorCA", "key"]),
                ),
            ),
            (
                "aesCBCEncryptionSecret",
                s(t(&["cluster", "aescbcEncryptionSecret"])),
            ),
            ("bootstrapTokenID", s(token_id)),
            ("bootstrapTokenSecret", s(token_secret)),
            (
                "secretboxEncryptionSecret",
                s(t(&["cluster", "secretboxEncryptionSecret"])),
            ),
        ]),
        1,
    ))
}

/// APICertificates: what apid serves with in this boot.
fn api_certificates(ctx: &Ctx) -> Option<Res> {
    let api = ctx.api?;
    Some(res(
        "secrets",
        "ApiCertificates.secrets.talos.dev",
        "api",
        "secrets.APIController",
        map(vec![
            (
                "acceptedCAs",
                Value::Sequence(
                    api.accepted
                        .iter()
                        .map(|c| map(vec![("crt", s(c))]))
                        .collect(),
                ),
            ),
            (
                "client",
                api.client
                    .as_ref()
                    .map_or(Value::Null, |(c, k)| cert_and_key(c, k)),
            ),
            ("server", cert_and_key(&api.server.0, &api.server.1)),
            ("skipVerifyingClientCert", Value::from(api.maintenance)),
        ]),
        1,
    ))
}

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    os_root(ctx)
        .into_iter()
        .chain(etcd_root(ctx))
        .chain(kubernetes_root(ctx))
        .chain(api_certificates(ctx))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{configured, hw};
    use super::*;

    #[test]
    fn a_worker_has_no_issuing_ca_and_no_etcd_root() {
        let hw = hw();
        let st = configured("worker", "Q0E=");
        let r = resources(&Ctx {
            hw: &hw,
            st: &st,
            peers: &[],
            unhealthy: &[],
            api: None,
        });
        assert_eq!(r.len(), 1);
        assert_eq!(
            serde_yaml_ng::to_string(&r[0].spec).unwrap(),
            "issuingCA: null\nacceptedCAs: []\ncertSANIPs: []\ncertSANDNSNames: []\ntoken: ''\n"
        );
        let cp = configured("controlplane", "Q0E=");
        let r = resources(&Ctx {
            hw: &hw,
            st: &cp,
            peers: &[],
            unhealthy: &[],
            api: None,
        });
        let ids: Vec<&str> = r.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["os", "etcd", "k8s"]);
        assert_eq!(
            super::super::testing::keys(&r[1].spec["etcdCA"]),
            ["crt", "key"]
        );
    }

    #[test]
    fn kubernetes_root_and_api_certificates_as_talos_writes_them() {
        let hw = hw();
        let cp = configured("controlplane", "Q0E=");
        let r = resources(&super::super::testing::alone(&hw, &cp));
        let k8s = r.iter().find(|r| r.id == "k8s").unwrap();
        assert_eq!(
            talm_base::yaml::to_string(&k8s.spec),
            "\
name: c
endpoint:
    scheme: https
    opaque: \"\"
    user: null
    host: 127.0.0.11:6443
    path: \"\"
    rawpath: \"\"
    omithost: false
    forcequery: false
    rawquery: \"\"
    fragment: \"\"
    rawfragment: \"\"
local_endpoint:
    scheme: https
    opaque: \"\"
    user: null
    host: localhost:6443
    path: \"\"
    rawpath: \"\"
    omithost: false
    forcequery: false
    rawquery: \"\"
    fragment: \"\"
    rawfragment: \"\"
certSANs: []
apiServerIPs:
    - 10.96.0.1
dnsDomain: cluster.local
issuingCA: null
acceptedCAs:
    - crt: Q0E=
serviceAccount:
    key: \"\"
aggregatorCA:
    crt: \"\"
    key: \"\"
aesCBCEncryptionSecret: \"\"
bootstrapTokenID: \"\"
bootstrapTokenSecret: \"\"
secretboxEncryptionSecret: \"\"
"
        );
        assert!(
            r.iter().all(|r| r.id != "api"),
            "no certificates before the API serves"
        );
        let api = crate::cosi::content::ApiCerts {
            server: ("U0VSVkVS".into(), "S0VZ".into()),
            client: None,
            accepted: vec![],
            maintenance: true,
        };
        let r = resources(&Ctx {
            api: Some(&api),
            ..super::super::testing::alone(&hw, &cp)
        });
        let certs = r.iter().find(|r| r.id == "api").unwrap();
        assert_eq!(
            talm_base::yaml::to_string(&certs.spec),
            "acceptedCAs: []\nclient: null\nserver:\n    crt: U0VSVkVS\n    key: S0VZ\nskipVerifyingClientCert: true\n"
        );
        let worker = configured("worker", "Q0E=");
        let r = resources(&super::super::testing::alone(&hw, &worker));
        assert!(r.iter().all(|r| r.id != "k8s"), "only control planes");
    }
}
