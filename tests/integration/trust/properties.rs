//! Property tests for every parser (issue 9 §6): the modeline, `--set` paths, the `ENC[AGE]`
//! envelope reader, the strategic/JSON6902 patcher, the facts reader and Go durations. Arbitrary
//! input never panics and round trips hold, at 10,000 cases each. Failures are not persisted to
//! files: a case found is kept as a unit test.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::Value as Json;
use serde_yaml_ng::{Mapping, Value};

use talm::config::decode::decode_docs;
use talm::config::encode::encode;
use talm::config::patch::{apply, load_patch, Patch};
use talm::facts::Facts;
use talm::project::modeline::{find, Modeline};
use talm::project::strvals::{parse_into, typed, Typing};
use talm::secrets::crypt::{decrypt_yaml, encrypt_yaml, new_key_file, parse_key};
use talm_base::duration::{parse as parse_duration, text as duration_text};

const CASES: u32 = 10_000;

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Text with many of the characters the parsers treat specially.
fn noisy(specials: &'static str) -> impl Strategy<Value = String> {
    let chars: Vec<char> = specials.chars().chain("ab0 \n".chars()).collect();
    prop::collection::vec(
        prop_oneof![3 => prop::sample::select(chars), 1 => any::<char>()],
        0..40,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn strings(max: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(any::<String>(), 0..max)
}

// ---- modeline -------------------------------------------------------------------------------

/// A node address: IPv4 or IPv6 (optionally with a port) or a DNS name.
fn address() -> impl Strategy<Value = String> {
    prop_oneof![
        (any::<[u8; 4]>(), prop::option::of(1u16..)).prop_map(|(o, p)| {
            let ip = std::net::Ipv4Addr::from(o).to_string();
            p.map(|p| format!("{ip}:{p}")).unwrap_or(ip)
        }),
        any::<[u16; 8]>().prop_map(|s| std::net::Ipv6Addr::from(s).to_string()),
        "[a-z][a-z0-9-]{0,10}[a-z0-9](\\.[a-z][a-z0-9]{0,8}){0,3}",
    ]
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn modeline_addresses_are_checked(nodes in strings(3)) {
        let m = Modeline { nodes: nodes.clone(), endpoints: vec![], templates: vec![] };
        let found = find(&format!("{}\n", m.render()), "n.yaml");
        let all_ok = nodes.iter().all(|n| talm_base::address::check(n).is_ok());
        prop_assert_eq!(found.is_ok(), all_ok, "{:?}", nodes);
    }

    #[test]
    fn modeline_text_never_panics(body in noisy("#talm:nodes=[],\"\\{}"), any_text in any::<String>()) {
        let _ = Modeline::parse(&format!("# talm: {body}"));
        let _ = Modeline::parse(&any_text);
        let _ = find(&format!("# c\n# talm: {body}\n{any_text}"), "n.yaml");
        let _ = find(&any_text, "n.yaml");
    }

    #[test]
    fn modeline_render_then_find_round_trips(
        nodes in prop::collection::vec(address(), 0..4),
        endpoints in prop::collection::vec(address(), 0..4),
        templates in strings(4),
        // Comment lines above the modeline; a CR before the LF is dropped (CRLF files).
        leading in prop::collection::vec("(# [^\r\n]{0,12})?", 0..3),
    ) {
        let m = Modeline { nodes, endpoints, templates };
        let mut text = leading.iter().map(|l| format!("{l}\n")).collect::<String>();
        text.push_str(&m.render());
        text.push_str("\nmachine:\n  type: worker\n");
        let f = find(&text, "n.yaml").unwrap();
        prop_assert_eq!(f.modeline, m);
        prop_assert_eq!(f.leading, leading);
        prop_assert_eq!(f.body, "machine:\n  type: worker\n");
    }
}

// ---- --set paths ----------------------------------------------------------------------------

/// One step of a `--set` path.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn escape(text: &str, specials: &str) -> String {
    text.chars().fold(String::new(), |mut out, c| {
        if specials.contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

/// The argument text of `path=value`.
fn set_arg(first: &str, rest: &[Step], value: &str) -> String {
    let mut arg = escape(first, "=.[,\\");
    for step in rest {
        match step {
            Step::Key(k) => arg.push_str(&format!(".{}", escape(k, "=.[,\\"))),
            Step::Index(i) => arg.push_str(&format!("[{i}]")),
        }
    }
    format!("{arg}={}", escape(value, ",\\{"))
}

/// The tree `path=value` makes: maps for keys, lists padded with nulls for indexes.
fn set_tree(rest: &[Step], leaf: Value) -> Value {
    match rest.split_first() {
        None => leaf,
        Some((Step::Key(k), tail)) => {
            let mut m = Mapping::new();
            m.insert(Value::String(k.clone()), set_tree(tail, leaf));
            Value::Mapping(m)
        }
        Some((Step::Index(i), tail)) => {
            let mut list = vec![Value::Null; *i];
            list.push(set_tree(tail, leaf));
            Value::Sequence(list)
        }
    }
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        "\\PC{1,6}".prop_map(Step::Key),
        (0usize..5).prop_map(Step::Index),
    ]
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn set_text_never_panics(arg in noisy("=.[],{}\\"), other in any::<String>()) {
        for typing in [Typing::Typed, Typing::Strings] {
            let _ = parse_into(&arg, typing, &mut Mapping::new());
            let _ = parse_into(&other, typing, &mut Mapping::new());
        }
    }

    #[test]
    fn set_paths_build_their_tree(
        paths in prop::collection::btree_map(
            "\\PC{1,6}",
            (prop::collection::vec(step(), 0..4), "\\PC{0,8}"),
            1..4,
        ),
        strings_only in any::<bool>(),
    ) {
        let typing = if strings_only { Typing::Strings } else { Typing::Typed };
        let arg: Vec<String> = paths
            .iter()
            .map(|(first, (rest, value))| set_arg(first, rest, value))
            .collect();
        let mut got = Mapping::new();
        parse_into(&arg.join(","), typing, &mut got).unwrap();
        let mut want = Mapping::new();
        for (first, (rest, value)) in &paths {
            let leaf = match typing {
                Typing::Typed => typed(value),
                Typing::Strings => Value::String(value.clone()),
            };
            want.insert(Value::String(first.clone()), set_tree(rest, leaf));
        }
        prop_assert_eq!(got, want, "{}", arg.join(","));
    }
}

// ---- ENC[AGE] envelopes ---------------------------------------------------------------------

/// One age identity for every case: generating keys is the slow part of age.
fn identity() -> &'static age::x25519::Identity {
    static ID: OnceLock<age::x25519::Identity> = OnceLock::new();
    ID.get_or_init(|| parse_key(&new_key_file(), "talm.key").unwrap())
}

/// A real envelope, to corrupt.
fn sealed() -> &'static str {
    static SEALED: OnceLock<String> = OnceLock::new();
    SEALED.get_or_init(|| encrypt_yaml(identity(), "k: secret\n", "p.yaml", None).unwrap())
}

fn envelope_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        noisy("ENC[AGE,data:]=+/:"),
        "[A-Za-z0-9+/=]{0,120}".prop_map(|b| format!("k: ENC[AGE,data:{b}]\n")),
        prop::collection::vec(any::<u8>(), 0..200).prop_map(|bytes| {
            use base64::Engine as _;
            let b = base64::engine::general_purpose::STANDARD.encode(bytes);
            format!("a:\n  b: [ENC[AGE,data:{b}]]\n")
        }),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(at, xor)| {
            let mut bytes = sealed().as_bytes().to_vec();
            let i = at.index(bytes.len());
            bytes[i] ^= xor;
            String::from_utf8_lossy(&bytes).into_owned()
        }),
    ]
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn envelope_reader_never_panics(text in envelope_text()) {
        let _ = decrypt_yaml(identity(), &text, "secrets.encrypted.yaml");
    }
}

/// A scalar as values-secret.yaml holds them: text (YAML-looking text included), integers
/// over both ranges, floats with YAML's special ones (`.inf`, `-.inf`, `.nan`), booleans.
fn typed_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => "\\PC{0,16}".prop_map(Value::from),
        1 => any::<String>().prop_map(Value::from),
        1 => prop::sample::select(vec!["true", "1.5", "0x1F", "~", ".inf", "yes", "5432"]).prop_map(Value::from),
        2 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        2 => any::<f64>().prop_map(Value::from),
        1 => prop::sample::select(vec![f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -0.0]).prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::from),
    ]
}

proptest! {
    // Two age operations per leaf (seal, open) plus the digest: 10,000 cases of up to three
    // leaves, about 12 s in the test profile (the slowest property, on a core of its own).
    #![proptest_config(config(CASES))]

    #[test]
    fn encrypt_then_decrypt_round_trips(
        plain in prop::collection::btree_map("\\PC{1,10}", typed_leaf(), 0..4),
    ) {
        let map: Mapping = plain
            .iter()
            .map(|(k, v)| (Value::String(k.clone()), v.clone()))
            .collect();
        let text = serde_yaml_ng::to_string(&map).unwrap();
        let sealed = encrypt_yaml(identity(), &text, "plain.yaml", None).unwrap();
        // Nothing but the keys is left in clear: every value is an envelope.
        let reread: Value = serde_yaml_ng::from_str(&sealed).unwrap();
        if let Value::Mapping(m) = &reread {
            for v in m.values() {
                prop_assert!(v.as_str().is_some_and(|s| s.starts_with("ENC[AGE,data:")), "{:?} in clear:\n{}", v, sealed);
            }
        }
        let opened = decrypt_yaml(identity(), &sealed, "sealed.yaml").unwrap();
        let back: Value = serde_yaml_ng::from_str(&opened).unwrap();
        let back = match back {
            Value::Null => Value::Mapping(Mapping::new()),
            v => v,
        };
        // Same values of the same types (`Value` compares NaN equal to NaN).
        prop_assert_eq!(back, Value::Mapping(map), "{}", opened);
        // Re-encrypting with the previous file keeps every envelope.
        let again = encrypt_yaml(identity(), &text, "plain.yaml", Some(&sealed)).unwrap();
        prop_assert_eq!(again, sealed);
    }
}

// ---- strategic merge and JSON6902 ------------------------------------------------------------

const BASE: &str = include_str!("../../fixtures/talos/configpatcher/apply/config.yaml");

fn json() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Json::from),
        "\\PC{0,10}".prop_map(Json::String),
        any::<String>().prop_map(Json::String),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
            prop::collection::btree_map("\\PC{0,8}", inner, 0..4)
                .prop_map(|m| Json::Object(m.into_iter().collect())),
        ]
    })
}

fn pointer() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-c]",
            "[0-3]",
            Just("-".to_string()),
            Just("~1".to_string()),
            "\\PC{0,3}"
        ],
        0..4,
    )
    .prop_map(|segs| segs.iter().map(|s| format!("/{s}")).collect())
}

fn operation() -> impl Strategy<Value = Json> {
    let op = prop::sample::select(vec![
        "add", "remove", "replace", "move", "copy", "test", "frob",
    ]);
    (op, pointer(), pointer(), prop::option::of(json())).prop_map(|(op, path, from, value)| {
        let mut m = serde_json::Map::new();
        m.insert("op".into(), op.into());
        m.insert("path".into(), path.into());
        m.insert("from".into(), from.into());
        if let Some(v) = value {
            m.insert("value".into(), v);
        }
        Json::Object(m)
    })
}

fn object() -> impl Strategy<Value = Json> {
    prop::collection::btree_map("[a-c]|\\PC{0,6}", json(), 0..5)
        .prop_map(|m| Json::Object(m.into_iter().collect()))
}

fn labels(values: &'static str) -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("[a-z]{1,3}(/[a-z.]{1,4})?", values, 0..4)
}

fn labels_value(labels: &BTreeMap<String, String>) -> Value {
    Value::Mapping(
        labels
            .iter()
            .map(|(k, v)| (Value::String(k.clone()), Value::String(v.clone())))
            .collect(),
    )
}

/// The fixture config with `machine.nodeLabels` set.
fn with_labels(labels: &BTreeMap<String, String>) -> String {
    let mut doc: Value = serde_yaml_ng::from_str(BASE).unwrap();
    doc["machine"]
        .as_mapping_mut()
        .unwrap()
        .insert("nodeLabels".into(), labels_value(labels));
    serde_yaml_ng::to_string(&doc).unwrap()
}

fn yaml_as_json(text: &str) -> Json {
    serde_yaml_ng::from_str(text).unwrap()
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn patch_text_never_panics(config in any::<String>(), patch in noisy("[]{}:-$\"/,op")) {
        for text in [&config, &patch] {
            if let Ok(p) = load_patch(text) {
                let _ = apply(BASE, std::slice::from_ref(&p));
                let _ = apply(&config, &[p]);
            }
        }
        let _ = apply(&config, &[]);
    }

    #[test]
    fn json_patches_never_panic(doc in object(), ops in prop::collection::vec(operation(), 0..4)) {
        let text = serde_yaml_ng::to_string(&doc).unwrap();
        let patch = load_patch(&serde_json::to_string(&ops).unwrap()).unwrap();
        let _ = apply(&text, &[patch]);
    }

    #[test]
    fn empty_json_patch_is_identity(doc in object()) {
        let text = serde_yaml_ng::to_string(&doc).unwrap();
        let out = apply(&text, &[Patch::Json(Vec::new())]).unwrap();
        prop_assert_eq!(yaml_as_json(&out), yaml_as_json(&text), "{}", out);
    }
}

proptest! {
    // Three strict decodes and Talos encodings a case: about 1 ms in the test profile, so
    // 10,000 cases take about ten seconds on one core.
    #![proptest_config(config(CASES))]

    #[test]
    fn strategic_merge_adds_labels_and_keeps_the_rest(base in labels("\\PC{0,8}"), patch in labels("\\PC{1,8}")) {
        // Patch values are not empty: Talos's merge keeps the base's value over an empty one.
        let config = with_labels(&base);
        let mut machine = Mapping::new();
        machine.insert("nodeLabels".into(), labels_value(&patch));
        let mut top = Mapping::new();
        top.insert("machine".into(), Value::Mapping(machine));
        let p = load_patch(&serde_yaml_ng::to_string(&top).unwrap()).unwrap();
        let out: Value = serde_yaml_ng::from_str(&apply(&config, &[p]).unwrap()).unwrap();
        // The config as Talos encodes it, unpatched.
        let encoded = encode(&decode_docs(&config).unwrap());
        let unpatched: Value = serde_yaml_ng::from_str(&encoded).unwrap();
        let mut want = base.clone();
        want.extend(patch.clone());
        // Talos writes no empty `nodeLabels` (omitempty).
        let want = if want.is_empty() { Value::Null } else { labels_value(&want) };
        prop_assert_eq!(&out["machine"]["nodeLabels"], &want);
        prop_assert_eq!(&out["machine"]["network"], &unpatched["machine"]["network"]);
        prop_assert_eq!(&out["cluster"], &unpatched["cluster"]);
        // A patch of nothing gives the config as Talos encodes it.
        let empty = load_patch("machine: {}\n").unwrap();
        prop_assert_eq!(apply(&config, &[empty]).unwrap(), encoded);
    }
}

// ---- facts ----------------------------------------------------------------------------------

fn resource() -> impl Strategy<Value = Value> {
    // An empty id asks `lookup` for the whole list, so ids here are not empty.
    ("[a-z]{0,4}", "\\PC{1,8}", json()).prop_map(|(ns, id, spec)| {
        let mut meta = Mapping::new();
        meta.insert("namespace".into(), ns.into());
        meta.insert("id".into(), id.into());
        let mut r = Mapping::new();
        r.insert("metadata".into(), Value::Mapping(meta));
        r.insert("spec".into(), serde_yaml_ng::to_value(spec).unwrap());
        Value::Mapping(r)
    })
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn facts_text_never_panics(text in prop_oneof![any::<String>(), noisy("resources:node-[]{}")]) {
        if let Ok(f) = Facts::parse(&text, "facts.yaml") {
            let _ = f.lookup("links", "", "");
            let _ = f.to_yaml();
        }
    }

    #[test]
    fn facts_write_then_read_round_trips(
        node in "\\PC{0,12}",
        resources in prop::collection::btree_map("[a-z]{1,6}", prop::collection::vec(resource(), 0..3), 0..3),
    ) {
        let f = Facts { node, version: None, resources, ..Facts::default() };
        let text = f.to_yaml().unwrap();
        let back = Facts::parse(&text, "facts.yaml").unwrap();
        prop_assert_eq!(yaml_as_json(&back.to_yaml().unwrap()), yaml_as_json(&text));
        prop_assert_eq!(&back.node, &f.node);
        for (kind, items) in &f.resources {
            for item in items {
                let id = item["metadata"]["id"].as_str().unwrap();
                let found = back.lookup(kind, "", id);
                prop_assert_eq!(&found["metadata"]["id"], &item["metadata"]["id"]);
            }
        }
    }
}

// ---- durations ------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn duration_text_never_panics(
        go_like in "[-+]?([0-9]{0,25}(\\.[0-9]{0,25})?(ns|us|µs|μs|ms|s|m|h|x|)){1,4}",
        other in any::<String>(),
    ) {
        for text in [&go_like, &other] {
            if let Ok(d) = parse_duration(text) {
                // Whatever parses, its Go text parses back to it.
                prop_assert_eq!(parse_duration(&duration_text(d)), Ok(d));
            }
        }
    }

    #[test]
    fn duration_format_then_parse_round_trips(nanos in 0..=i64::MAX as u64) {
        let d = Duration::from_nanos(nanos);
        prop_assert_eq!(parse_duration(&duration_text(d)), Ok(d));
    }
}
