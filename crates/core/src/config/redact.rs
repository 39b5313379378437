//! A machine config with its secrets replaced, field by field, as Talos's `RedactSecrets` does
//! (`pkg/machinery/config/container`): the v1alpha1 document's tokens, CA keys, encryption
//! secrets, registry credentials, WireGuard and VIP keys, disk passphrases, and the secret
//! fields of the multi-document kinds. Empty values stay empty. The text is edited in place
//! (comments, order and quoting kept) whenever that reads back as the field-wise result;
//! otherwise the documents are re-encoded.

use anyhow::Result;
use serde_yaml_ng::Value;

use talm_base::yaml::located::{self, Seg};

/// Secret fields of the v1alpha1 document (`*` any map key, `[]` any list index).
const V1ALPHA1: &[&str] = &[
    "machine.token",
    "machine.ca.key",
    "machine.registries.config.*.auth.password",
    "machine.registries.config.*.auth.auth",
    "machine.registries.config.*.auth.identityToken",
    "machine.registries.config.*.tls.clientIdentity.key",
    "machine.network.interfaces[].wireguard.privateKey",
    "machine.network.interfaces[].vip.equinixMetal.apiToken",
    "machine.network.interfaces[].vip.hcloud.apiToken",
    "machine.network.interfaces[].vlans[].vip.equinixMetal.apiToken",
    "machine.network.interfaces[].vlans[].vip.hcloud.apiToken",
    "machine.systemDiskEncryption.state.keys[].static.passphrase",
    "machine.systemDiskEncryption.ephemeral.keys[].static.passphrase",
    "cluster.secret",
    "cluster.token",
    "cluster.aescbcEncryptionSecret",
    "cluster.secretboxEncryptionSecret",
    "cluster.serviceAccount.key",
    "cluster.ca.key",
    "cluster.aggregatorCA.key",
    "cluster.etcd.ca.key",
];

const VOLUME_KEYS: &[&str] = &["encryption.keys[].static.passphrase"];

/// Secret fields of the other documents, by `kind`.
const BY_KIND: &[(&str, &[&str])] = &[
    ("RegistryAuthConfig", &["password", "auth", "identityToken"]),
    ("RegistryTLSConfig", &["clientIdentity.key"]),
    ("HCloudVIPConfig", &["apiToken"]),
    ("WireguardConfig", &["privateKey", "peers[].presharedKey"]),
    ("SideroLinkConfig", &["uniqueToken"]),
    ("VolumeConfig", VOLUME_KEYS),
    ("UserVolumeConfig", VOLUME_KEYS),
    ("RawVolumeConfig", VOLUME_KEYS),
    ("SwapVolumeConfig", VOLUME_KEYS),
];

/// The secret fields of a document, from its content.
fn fields_of(doc: &Value) -> &'static [&'static str] {
    if doc.get("machine").is_some() || doc.get("cluster").is_some() {
        return V1ALPHA1;
    }
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    BY_KIND
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, f)| *f)
        .unwrap_or(&[])
}

fn is_siderolink(doc: &Value) -> bool {
    doc.get("kind").and_then(Value::as_str) == Some("SideroLinkConfig")
}

/// Whether `path` is the field `pattern` names.
fn matches(pattern: &str, path: &[Seg]) -> bool {
    let mut want = Vec::new();
    for part in pattern.split('.') {
        match part.strip_suffix("[]") {
            Some(name) => {
                want.push(name);
                want.push("[]");
            }
            None => want.push(part),
        }
    }
    want.len() == path.len()
        && want.iter().zip(path).all(|(w, seg)| match seg {
            Seg::Key(k) => *w == "*" || w == k,
            Seg::Index(_) => *w == "[]",
        })
}

/// Go's `url.QueryEscape`.
fn query_escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A SideroLink API URL with its `jointoken` query value replaced (the query re-sorted by key,
/// as Go's `url.Values.Encode` writes it).
fn redact_join_token(url: &str, replacement: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_string();
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, format!("#{f}")),
        None => (query, String::new()),
    };
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (p.to_string(), String::new()),
        })
        .collect();
    if !pairs.iter().any(|(k, _)| k == "jointoken") {
        return url.to_string();
    }
    let mut kept_token = false;
    pairs.retain_mut(|(k, v)| {
        if k != "jointoken" {
            return true;
        }
        // `Set` leaves one value.
        *v = query_escape(replacement);
        !std::mem::replace(&mut kept_token, true)
    });
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let q: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{base}?{}{fragment}", q.join("&"))
}

/// What a scalar at `path` of `doc` becomes, when it is a secret.
fn replaced(doc: &Value, path: &[Seg], value: &str, replacement: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    if is_siderolink(doc) && matches("apiUrl", path) {
        let url = redact_join_token(value, replacement);
        return (url != value).then_some(url);
    }
    fields_of(doc)
        .iter()
        .any(|p| matches(p, path))
        .then(|| replacement.to_string())
}

fn redact_value(doc: &Value, v: &mut Value, path: &mut Vec<Seg>, replacement: &str) {
    match v {
        Value::String(s) => {
            if let Some(new) = replaced(doc, path, s, replacement) {
                *s = new;
            }
        }
        Value::Mapping(m) => {
            for (k, x) in m.iter_mut() {
                let key = k.as_str().unwrap_or_default().to_string();
                path.push(Seg::Key(key));
                redact_value(doc, x, path, replacement);
                path.pop();
            }
        }
        Value::Sequence(items) => {
            for (i, x) in items.iter_mut().enumerate() {
                path.push(Seg::Index(i));
                redact_value(doc, x, path, replacement);
                path.pop();
            }
        }
        Value::Tagged(t) => redact_value(doc, &mut t.value, path, replacement),
        _ => {}
    }
}

fn docs(text: &str) -> Result<Vec<Value>> {
    Ok(talm_base::yaml::stream(text)?)
}

/// `text` (a machine config, any number of documents) with every secret field replaced by
/// `replacement`.
pub fn redact_secrets(text: &str, replacement: &str) -> Result<String> {
    let originals = docs(text)?;
    let want: Vec<Value> = originals
        .iter()
        .map(|d| {
            let mut v = d.clone();
            redact_value(d, &mut v, &mut Vec::new(), replacement);
            v
        })
        .collect();
    if want == originals {
        return Ok(text.to_string());
    }
    let in_place = located::locate(text).ok().and_then(|l| {
        if l.docs.len() != originals.len() {
            return None;
        }
        let mut edits = Vec::new();
        for (node, doc) in l.docs.iter().zip(&originals) {
            for (path, s) in located::value_scalars(node) {
                if let Some(new) = replaced(doc, &path, &s.value, replacement) {
                    let shown = talm_base::yaml::to_string(&Value::String(new));
                    let shown = shown.strip_suffix('\n').unwrap_or(&shown);
                    if shown.contains('\n') || s.in_flow && shown.starts_with('|') {
                        return None;
                    }
                    // A block scalar's range runs to the next line's indentation: kept.
                    let raw = &text[s.start..s.end];
                    let tail = raw.rfind('\n').map_or("", |i| &raw[i..]);
                    edits.push((s.start, s.end, format!("{shown}{tail}")));
                }
            }
        }
        Some(located::splice(text, edits))
    });
    if let Some(t) = in_place {
        if docs(&t).ok().as_ref() == Some(&want) {
            return Ok(t);
        }
    }
    Ok(want
        .iter()
        .map(talm_base::yaml::to_string)
        .collect::<Vec<_>>()
        .join("---\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: &str = "<REDACTED>";

    #[test]
    fn v1alpha1_secrets_are_replaced_in_place() {
        let text = "version: v1alpha1 # keep me\nmachine:\n    token: abc.def\n    ca:\n        crt: CERT\n        key: KEY\n    registries:\n        config:\n            r.example:\n                auth:\n                    username: u\n                    password: \"p w\"\n    network:\n        interfaces:\n            - interface: eth0\n              vip:\n                  ip: 10.0.0.9\n                  hcloud:\n                      apiToken: HC\n    systemDiskEncryption:\n        state:\n            keys:\n                - slot: 0\n                  static:\n                      passphrase: PP\ncluster:\n    secret: S\n    token: \"\"\n    ca:\n        crt: CC\n        key: |\n            MULTI\n            LINE\n    etcd:\n        ca:\n            key: EK\n";
        let got = redact_secrets(text, R).unwrap();
        assert_eq!(got, "version: v1alpha1 # keep me\nmachine:\n    token: <REDACTED>\n    ca:\n        crt: CERT\n        key: <REDACTED>\n    registries:\n        config:\n            r.example:\n                auth:\n                    username: u\n                    password: <REDACTED>\n    network:\n        interfaces:\n            - interface: eth0\n              vip:\n                  ip: 10.0.0.9\n                  hcloud:\n                      apiToken: <REDACTED>\n    systemDiskEncryption:\n        state:\n            keys:\n                - slot: 0\n                  static:\n                      passphrase: <REDACTED>\ncluster:\n    secret: <REDACTED>\n    token: \"\"\n    ca:\n        crt: CC\n        key: <REDACTED>\n    etcd:\n        ca:\n            key: <REDACTED>\n");
    }

    #[test]
    fn documents_by_kind() {
        let text = "apiVersion: v1alpha1\nkind: WireguardConfig\nname: wg0\nprivateKey: PK\npeers:\n  - publicKey: PUB\n    presharedKey: PSK\n---\napiVersion: v1alpha1\nkind: SideroLinkConfig\napiUrl: https://omni.example/?jointoken=SECRET&grpc_tunnel=true\nuniqueToken: UT\n---\napiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\nprivateKey: not-a-secret-here\n";
        let got = redact_secrets(text, R).unwrap();
        assert!(got.contains("privateKey: <REDACTED>\n"), "{got}");
        assert!(got.contains("presharedKey: <REDACTED>\n"), "{got}");
        assert!(got.contains("publicKey: PUB\n"), "{got}");
        assert!(
            got.contains(
                "apiUrl: https://omni.example/?grpc_tunnel=true&jointoken=%3CREDACTED%3E\n"
            ),
            "{got}"
        );
        assert!(got.contains("uniqueToken: <REDACTED>\n"), "{got}");
        assert!(got.ends_with("privateKey: not-a-secret-here\n"), "{got}");
        for secret in ["PK", "PSK", "SECRET", "UT"] {
            assert!(
                !got.contains(&format!(": {secret}\n")),
                "{secret} left in {got}"
            );
        }
    }

    #[test]
    fn flow_style_falls_back_to_reencoding_when_needed() {
        let text = "machine: {token: T, type: worker}\ncluster: {secret: S}\n";
        let got = redact_secrets(text, R).unwrap();
        let v: Value = serde_yaml_ng::from_str(&got).unwrap();
        assert_eq!(v["machine"]["token"], R);
        assert_eq!(v["machine"]["type"], "worker");
        assert_eq!(v["cluster"]["secret"], R);
        let untouched = "machine:\n  type: worker\n";
        assert_eq!(redact_secrets(untouched, R).unwrap(), untouched);
    }
}
