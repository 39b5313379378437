//! The node's roots of trust as Talos's secrets controllers derive them from the machine config
//! (sensitive types: only admins read them): OSRoot (the machine CA that issues the API's
//! certificates, the accepted CAs, the extra SANs and the join token) on every configured node
//! and, on control planes, EtcdRoot (the etcd CA).

use serde_yaml_ng::Value;

use super::{map, res, s, texts, Ctx};
use crate::cosi::facts::Res;

fn text_at(doc: Option<&Value>, path: &[&str]) -> String {
    let found = || {
        path.iter()
            .try_fold(doc?, |cur, k| cur.get(*k))
            .and_then(Value::as_str)
    };
    found().unwrap_or("").to_string()
}

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

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    os_root(ctx).into_iter().chain(etcd_root(ctx)).collect()
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
        });
        let ids: Vec<&str> = r.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["os", "etcd"]);
        assert_eq!(
            super::super::testing::keys(&r[1].spec["etcdCA"]),
            ["crt", "key"]
        );
    }
}
