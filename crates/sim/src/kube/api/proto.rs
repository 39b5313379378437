//! Kubernetes protobuf bodies (`application/vnd.kubernetes.protobuf`), which kubectl's
//! `create` subcommands send: the `k8s\0` envelope (`runtime.Unknown`: type meta and raw
//! bytes) and the typed message, decoded to JSON with the field numbers of the types kubectl
//! creates (namespaces, config maps, secrets, service accounts, services, deployments,
//! budgets, roles and bindings). Other kinds are refused (415) by the caller.

use base64::Engine as _;
use serde_json::{Map, Value};

/// How a field's value reads.
#[derive(Clone, Copy)]
enum T {
    Str,
    /// Bytes, shown base64 (secret data).
    Bytes,
    /// An integer where zero means unset.
    Int,
    /// An integer that is shown even when zero (pointer fields such as `replicas`).
    Int0,
    Bool,
    /// `meta/v1 Time`: seconds and nanos, shown as RFC 3339.
    Time,
    /// `intstr.IntOrString`: type, intVal, strVal.
    IntOrStr,
    /// `resource.Quantity`: its string.
    Qty,
    Msg(&'static [F]),
    MapStr,
    MapBytes,
    MapQty,
}

/// A field: number, JSON name, type, repeated.
#[derive(Clone, Copy)]
struct F(u32, &'static str, T, bool);

use T::*;

const META: &[F] = &[
    F(1, "name", Str, false),
    F(2, "generateName", Str, false),
    F(3, "namespace", Str, false),
    F(5, "uid", Str, false),
    F(6, "resourceVersion", Str, false),
    F(7, "generation", Int, false),
    F(8, "creationTimestamp", Time, false),
    F(11, "labels", MapStr, false),
    F(12, "annotations", MapStr, false),
    F(13, "ownerReferences", Msg(OWNER), true),
    F(14, "finalizers", Str, true),
];
const OWNER: &[F] = &[
    F(1, "kind", Str, false),
    F(3, "name", Str, false),
    F(4, "uid", Str, false),
    F(5, "apiVersion", Str, false),
    F(6, "controller", Bool, false),
    F(7, "blockOwnerDeletion", Bool, false),
];
const SELECTOR: &[F] = &[
    F(1, "matchLabels", MapStr, false),
    F(2, "matchExpressions", Msg(REQUIREMENT), true),
];
const REQUIREMENT: &[F] = &[
    F(1, "key", Str, false),
    F(2, "operator", Str, false),
    F(3, "values", Str, true),
];
const NAMESPACE: &[F] = &[
    F(1, "metadata", Msg(META), false),
    F(2, "spec", Msg(&[F(1, "finalizers", Str, true)]), false),
    F(3, "status", Msg(&[F(1, "phase", Str, false)]), false),
];
const CONFIG_MAP: &[F] = &[
    F(1, "metadata", Msg(META), false),
    F(2, "data", MapStr, false),
    F(3, "binaryData", MapBytes, false),
    F(4, "immutable", Bool, false),
];
const SECRET: &[F] = &[
    F(1, "metadata", Msg(META), false),
    F(2, "data", MapBytes, false),
    F(3, "type", Str, false),
    F(4, "stringData", MapStr, false),
    F(5, "immutable", Bool, false),
];
const REF: &[F] = &[F(1, "name", Str, false)];
const SERVICE_ACCOUNT: &[F] = &[
    F(1, "metadata", Msg(META), false),
    F(2, "secrets", Msg(REF), true),
    F(3, "imagePullSecrets", Msg(REF), true),
    F(4, "automountServiceAccountToken", Bool, false),
];
const SERVICE_PORT: &[F] = &[
    F(1, "name", Str, false),
    F(2, "protocol", Str, false),
    F(3, "port", Int, false),
    F(4, "targetPort", IntOrStr, false),
    F(5, "nodePort", Int, false),
];
const SERVICE: &[F] = &[
    F(1, "metadata", Msg(META), false),
    F(
        2,
        "spec",
        Msg(&[
            F(1, "ports", Msg(SERVICE_PORT), true),
            F(2, "selector", MapStr, false),
            F(3, "clusterIP", Str, false),
            F(4, "type", Str, false),
            F(5, "externalIPs", Str, true),
            F(7, "sessionAffinity", Str, false),
            F(11, "externalName", Str, false),
        ]),
        false,
    ),
    F(3, "status", Msg(&[]), false),
];
const CONTAINER: &[F] = &[
    F(1, "name", Str, false),
    F(2, "image", Str, false),
    F(3, "command", Str, true),
    F(4, "args", Str, true),
    F(5, "workingDir", Str, false),
    F(
        6,
        "ports",
        Msg(&[
            F(1, "name", Str, false),
            F(2, "hostPort", Int, false),
            F(3, "containerPort", Int, false),
            F(4, "protocol", Str, false),
        ]),
        true,
    ),
    F(
        7,
        "env",
        Msg(&[F(1, "name", Str, false), F(2, "value", Str, false)]),
        true,
    ),
    F(
        8,
        "resources",
        Msg(&[
            F(1, "limits", MapQty, false),
            F(2, "requests", MapQty, false),
        ]),
        false,
    ),
    F(13, "terminationMessagePath", Str, false),
    F(14, "imagePullPolicy", Str, false),
    F(20, "terminationMessagePolicy", Str, false),
];
const POD_SPEC: &[F] = &[
    F(2, "containers", Msg(CONTAINER), true),
    F(3, "restartPolicy", Str, false),
    F(4, "terminationGracePeriodSeconds", Int0, false),
    F(6, "dnsPolicy", Str, false),
    F(7, "nodeSelector", MapStr, false),
    F(8, "serviceAccountName", Str, false),
    F(10, "nodeName", Str, false),
    F(11, "hostNetwork", Bool, false),
    F(19, "schedulerName", Str, false),
    F(20, "initContainers", Msg(CONTAINER), true),
    F(24, "priorityClassName", Str, false),
];
const TEMPLATE: &[F] = &[
    F(1, "metadata", Msg(META), false),
    F(2, "spec", Msg(POD_SPEC), false),
];
const DEPLOYMENT: &[F] = &[
    F(1, "metadata", Msg(META), false),
    F(
        2,
        "spec",
        Msg(&[
            F(1, "replicas", Int0, false),
            F(2, "selector", Msg(SELECTOR), false),
            F(3, "template", Msg(TEMPLATE), false),
            F(
                4,
                "strategy",
                Msg(&[
                    F(1, "type", Str, false),
                    F(
                        2,
                        "rollingUpdate",
                        Msg(&[
                            F(1, "maxUnavailable", IntOrStr, false),
                            F(2, "maxSurge", IntOrStr, false),
                        ]),
                        false,
                    ),
                ]),
                false,
            ),
            F(5, "minReadySeconds", Int, false),
            F(6, "revisionHistoryLimit", Int0, false),
            F(7, "paused", Bool, false),
            F(9, "progressDeadlineSeconds", Int0, false),
        ]),
        false,
    ),
    F(3, "status", Msg(&[]), false),
];
const PDB: &[F] = &[
    F(1, "metadata", Msg(META), false),
    F(
        2,
        "spec",
        Msg(&[
            F(1, "minAvailable", IntOrStr, false),
            F(2, "selector", Msg(SELECTOR), false),
            F(3, "maxUnavailable", IntOrStr, false),
            F(4, "unhealthyPodEvictionPolicy", Str, false),
        ]),
        false,
    ),
    F(3, "status", Msg(&[]), false),
];
const RULE: &[F] = &[
    F(1, "verbs", Str, true),
    F(2, "apiGroups", Str, true),
    F(3, "resources", Str, true),
    F(4, "resourceNames", Str, true),
    F(5, "nonResourceURLs", Str, true),
];
const ROLE: &[F] = &[
    F(1, "metadata", Msg(META), false),
    F(2, "rules", Msg(RULE), true),
];
const BINDING: &[F] = &[
    F(1, "metadata", Msg(META), false),
    F(
        2,
        "subjects",
        Msg(&[
            F(1, "kind", Str, false),
            F(2, "apiGroup", Str, false),
            F(3, "name", Str, false),
            F(4, "namespace", Str, false),
        ]),
        true,
    ),
    F(
        3,
        "roleRef",
        Msg(&[
            F(1, "apiGroup", Str, false),
            F(2, "kind", Str, false),
            F(3, "name", Str, false),
        ]),
        false,
    ),
];

/// The message of a kind kubectl may send.
fn schema(kind: &str) -> Option<&'static [F]> {
    Some(match kind {
        "Namespace" => NAMESPACE,
        "ConfigMap" => CONFIG_MAP,
        "Secret" => SECRET,
        "ServiceAccount" => SERVICE_ACCOUNT,
        "Service" => SERVICE,
        "Deployment" => DEPLOYMENT,
        "PodDisruptionBudget" => PDB,
        "Role" | "ClusterRole" => ROLE,
        "RoleBinding" | "ClusterRoleBinding" => BINDING,
        _ => return None,
    })
}

/// One field's raw value on the wire.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The fields of a message, in order.
fn fields(b: &[u8]) -> Option<Vec<(u32, Wire<'_>)>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let tag = varint(b, &mut at)?;
        let num = u32::try_from(tag >> 3).ok()?;
        let wire = match tag & 7 {
            0 => Wire::Varint(varint(b, &mut at)?),
            1 => {
                at += 8;
                Wire::Fixed
            }
            2 => {
                let len = usize::try_from(varint(b, &mut at)?).ok()?;
                let v = b.get(at..at.checked_add(len)?)?;
                at += len;
                Wire::Bytes(v)
            }
            5 => {
                at += 4;
                Wire::Fixed
            }
            _ => return None,
        };
        out.push((num, wire));
    }
    (at == b.len()).then_some(out)
}

fn text(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

fn time_of(b: &[u8]) -> Option<Value> {
    let mut secs = 0i64;
    for (n, w) in fields(b)? {
        if let (1, Wire::Varint(v)) = (n, w) {
            secs = v as i64;
        }
    }
    if secs == 0 {
        return Some(Value::Null);
    }
    let t = time::OffsetDateTime::from_unix_timestamp(secs).ok()?;
    Some(
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
        .into(),
    )
}

fn int_or_string(b: &[u8]) -> Option<Value> {
    let (mut ty, mut int, mut s) = (0u64, 0i64, String::new());
    for (n, w) in fields(b)? {
        match (n, w) {
            (1, Wire::Varint(v)) => ty = v,
            (2, Wire::Varint(v)) => int = v as i32 as i64,
            (3, Wire::Bytes(v)) => s = text(v)?,
            _ => {}
        }
    }
    Some(if ty == 1 { s.into() } else { int.into() })
}

fn entry(b: &[u8], value: T) -> Option<(String, Value)> {
    let (mut k, mut v) = (String::new(), Value::String(String::new()));
    for (n, w) in fields(b)? {
        match (n, w) {
            (1, Wire::Bytes(x)) => k = text(x)?,
            (2, Wire::Bytes(x)) => v = scalar(value, x)?,
            _ => {}
        }
    }
    Some((k, v))
}

fn scalar(ty: T, b: &[u8]) -> Option<Value> {
    Some(match ty {
        Str | MapStr => text(b)?.into(),
        Bytes | MapBytes => base64::engine::general_purpose::STANDARD.encode(b).into(),
        Qty | MapQty => fields(b)?
            .into_iter()
            .find_map(|(n, w)| match (n, w) {
                (1, Wire::Bytes(x)) => text(x),
                _ => None,
            })
            .unwrap_or_default()
            .into(),
        Time => time_of(b)?,
        IntOrStr => int_or_string(b)?,
        Msg(s) => message(s, b)?,
        Int | Int0 | Bool => return None,
    })
}

/// Decodes a message by its schema; unknown fields are skipped, empty values left out.
fn message(schema: &[F], b: &[u8]) -> Option<Value> {
    let mut out = Map::new();
    for (n, w) in fields(b)? {
        let Some(F(_, name, ty, repeated)) = schema.iter().find(|f| f.0 == n).copied() else {
            continue;
        };
        let v = match (ty, w) {
            (Int | Int0, Wire::Varint(v)) => Value::from(v as i64),
            (Bool, Wire::Varint(v)) => Value::Bool(v != 0),
            (MapStr | MapBytes | MapQty, Wire::Bytes(x)) => {
                let value = match ty {
                    MapBytes => Bytes,
                    MapQty => Qty,
                    _ => Str,
                };
                let (k, v) = entry(x, value)?;
                let map = out.entry(name).or_insert_with(|| Value::Object(Map::new()));
                map[k] = v;
                continue;
            }
            (_, Wire::Bytes(x)) => scalar(ty, x)?,
            _ => continue,
        };
        let empty = match (&v, ty) {
            (Value::Null, _) => true,
            (Value::String(s), Str) => s.is_empty() && !repeated,
            (Value::Number(n), Int) => n.as_i64() == Some(0),
            (Value::Bool(b), Bool) => !b,
            _ => false,
        };
        if empty {
            continue;
        }
        if repeated {
            if let Value::Array(items) = out.entry(name).or_insert_with(|| Value::Array(Vec::new()))
            {
                items.push(v);
            }
        } else {
            out.insert(name.to_string(), v);
        }
    }
    Some(Value::Object(out))
}

/// Why a protobuf body could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// Not the `k8s\0` envelope, or malformed.
    Malformed,
    /// A kind this server cannot decode (the caller answers 415).
    Kind(String),
}

/// Decodes a protobuf request body into the JSON object it carries.
pub fn decode(body: &[u8]) -> Result<Value, Unreadable> {
    let inner = body.strip_prefix(b"k8s\0").ok_or(Unreadable::Malformed)?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (n, w) in fields(inner).ok_or(Unreadable::Malformed)? {
        match (n, w) {
            (1, Wire::Bytes(tm)) => {
                for (m, x) in fields(tm).ok_or(Unreadable::Malformed)? {
                    match (m, x) {
                        (1, Wire::Bytes(v)) => api_version = text(v).unwrap_or_default(),
                        (2, Wire::Bytes(v)) => kind = text(v).unwrap_or_default(),
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(r)) => raw = r,
            _ => {}
        }
    }
    let schema = schema(&kind).ok_or_else(|| Unreadable::Kind(kind.clone()))?;
    let mut obj = message(schema, raw).ok_or(Unreadable::Malformed)?;
    obj["apiVersion"] = api_version.into();
    obj["kind"] = kind.into();
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(num: u32, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(num << 3 | 2) as u8, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn a_config_map_in_its_envelope() {
        let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let meta = [field(1, b"cfg"), field(2, b""), field(3, b"default")].concat();
        let entry = [field(1, b"k"), field(2, b"v")].concat();
        let raw = [field(1, &meta), field(2, &entry)].concat();
        let body = [b"k8s\0".to_vec(), field(1, &type_meta), field(2, &raw)].concat();
        assert_eq!(
            decode(&body),
            Ok(
                json!({"metadata": {"name": "cfg", "namespace": "default"}, "data": {"k": "v"},
                "apiVersion": "v1", "kind": "ConfigMap"})
            )
        );
        let pod = [
            b"k8s\0".to_vec(),
            field(1, &[field(1, b"v1"), field(2, b"Pod")].concat()),
        ]
        .concat();
        assert_eq!(decode(&pod), Err(Unreadable::Kind("Pod".into())));
        assert_eq!(decode(b"{}"), Err(Unreadable::Malformed));
    }
}
