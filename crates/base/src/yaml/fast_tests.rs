//! The quick reader against serde_yaml_ng: where it answers, it answers the same; what it is
//! for, it answers; what it is not sure of, it leaves.

use super::stream;
use proptest::prelude::*;
use serde_yaml_ng::Value;

/// serde_yaml_ng's reading of every document.
fn slow(text: &str) -> Result<Vec<Value>, serde_yaml_ng::Error> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(serde::Deserialize::deserialize)
        .collect()
}

/// Order and scalar types count: compare the debug forms (a Mapping's `==` ignores order).
fn same(a: &[Value], b: &[Value]) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

/// Checks that the quick reader agrees with serde_yaml_ng wherever it answers; whether it did.
fn agrees(text: &str) -> bool {
    let Some(fast) = stream(text) else {
        return false;
    };
    match slow(text) {
        Ok(slow) => assert!(
            same(&fast, &slow),
            "differs on {text:?}\nfast: {fast:?}\nslow: {slow:?}"
        ),
        Err(e) => panic!("answered {fast:?} where serde_yaml_ng refuses {text:?}: {e}"),
    }
    true
}

#[test]
fn reads_what_talm_and_talos_write_as_serde_yaml_ng_does() {
    let cases = [
        "subnets: [10.0.0.0/8, 192.168.1.0/24]\nports: [ 443 , -1, +.5, 0x1F, 007, yes, Null ]\nnone: [ ]\nlist:\n- [a, b] # c\n",
        "a: 1\n",
        "a: 1",
        "# head\nversion: v1alpha1 # trailing\ndebug: false\npersist: true\nmachine:\n    type: controlplane\n    token: abc.def\n    ca:\n        crt: LS0tLS1\n        key: \"\"\n    certSANs: []\n    kubelet:\n        image: ghcr.io/siderolabs/kubelet:v1.33.1\n        extraArgs: {}\n",
        "cluster:\n  network:\n    podSubnets:\n      - 10.244.0.0/16\n    serviceSubnets:\n    - 10.96.0.0/16\n  name: c\n",
        "list:\n- a: 1\n  b: [] # c\n-   c: x\n    d:\n    - 1\n    e: |\n      one\n        two\n\n      three\n- plain\n- 'it''s'\n- \"q\\\"\\n\\t\\u00e9\\x41\"\n-\n- last\n",
        "a: |-\n  x\n\n\nb: |+\n  y\n\n\nc: |\n  z\n\n\nd: | # note\n    deep\n      deeper\n",
        "k: |\n\n  after a blank\n",
        "nums:\n- 0x1F\n- -0o17\n- 0b101\n- +5\n- -0\n- 007\n- -007\n- 1e3\n- .5\n- 5.\n- -.inf\n- .NaN\n- +.inf\n- 1_000\n- 12:30\n- 10.0.0.1\n- inf\n- 0x\n- +-5\n- 18446744073709551615\n- -9223372036854775808\n- 0.1e-3\n- 1.2.3\n- 1.5e+3\n- -2.5E-3\n- 10.0.0.0/8\n- 1.0.x\n- 0x1.8\n- 1e3/2\n- +1.5\n- v1.12\n- ~\n- Null\n- TRUE\n- yes\n- 'true'\n- \"1\"\n",
        "\"quoted key\": v\n'single key': w\n1: one\ntrue: yes\nnull: nothing\n",
        "a: 1\n---\nb: 2\n---\n- x\n",
        "---\na: b:c\nurl: http://x/y?z=1#frag\nhash: a#b\nq: it's\nd: say \"hi\"\n",
        "a:\n  # comment inside\n  b: 1\n\n  c: 2\nd: -x\ne: ?x\nf: :x\ng: ---\n",
        "-  x\n- y   \n-   # only a comment\n  - z\n",
        "a:    \n  b: c\n",
        "t: \"tab\tinside\"\n",
        "a: |\n  tab\tinside\n  \tleading tab after indent\n",
        "nameservers:\n  []\nb:\n    {}\nc:\n  [10.0.0.0/8, 1] # c\nd:\n- \n  []\n-\n    [ ]\n",
    ];
    for text in cases {
        assert!(agrees(text), "not read: {text:?}");
    }
}

#[test]
fn leaves_what_it_is_not_sure_of() {
    let cases = [
        "",
        "# only a comment\n",
        "---\n",
        "a: 1\n---\n---\nb: 2\n",
        "--- a: 1\n",
        "a: 1\n...\n",
        "%YAML 1.2\n---\na: 1\n",
        "just a scalar\n",
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: [\"q\", 2]\n",
        "a: [1, [2]]\n",
        "a: [a b]\n",
        "a: [1,]\n",
        "a: [1,\n  2]\n",
        "a: [-, x]\n",
        "a: [x: y]\n",
        "a: [1]x\n",
        "a: [1] x\n",
        "a: {b: 1}\n",
        "a: >\n  folded\n",
        "a: |2\n  x\n",
        "a: multi\n  line\n",
        "a: \"multi\n  line\"\n",
        "a: 1\na: 2\n",
        "a:\n\tb: 1\n",
        "a: 1\n  b: 2\n",
        "a: b: c\n",
        "a: b:\n",
        "? a\n: b\n",
        "a: 340282366920938463463374607431768211455\n",
        "a: é\n",
        "a: 1\r\n",
        "a: \"\\N\"\n",
        "a: \"\\ud800\"\n",
        "- - a\n",
        "-   # a comment, then a scalar on the next line\n  z\n",
        "a: - b\n",
        "a: |\n  x",
        "a: |\nb: 1\n",
        "a: |\n    \n  x\n",
        "a:\n  []\n  b: 1\n",
        "a:\n  [1]\n   x\n",
        "a:\n  {b: 1}\n",
        "a:\n  [b, 'c']\n",
    ];
    for text in cases {
        assert!(stream(text).is_none(), "read: {text:?}");
    }
    let deep = (0..80).fold(String::new(), |mut s, i| {
        s.push_str(&" ".repeat(i * 2));
        s.push_str("k:\n");
        s
    });
    assert!(stream(&deep).is_none());
}

/// Every YAML file the tests hold (Talos's generated configs, golden renders, values, patches):
/// where the quick reader answers, it agrees; and it answers for Talos's own configs.
#[test]
fn agrees_on_every_fixture() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                out.push(p);
            }
        }
    }
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let stability = fixtures.join("talos/stability");
    let mut files = Vec::new();
    walk(&fixtures, &mut files);
    assert!(files.len() > 50);
    let mut read = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        if agrees(&text) {
            read += 1;
        } else {
            // Flow collections (`[a, b]`) and templates are left to serde_yaml_ng; the
            // shapes a bring-up reads are not.
            let name = f.file_name().unwrap().to_string_lossy();
            assert!(
                !name.ends_with("multidoc.golden.yaml") && !f.starts_with(&stability),
                "not read: {}",
                f.display()
            );
        }
    }
    assert!(read * 2 > files.len(), "read {read} of {}", files.len());
}

/// The presets' values.yaml files are read on the quick path: each render reads its preset's
/// defaults (for the shapes of the values), and a project made by `talm init` starts with them.
#[test]
fn reads_every_presets_values() {
    let presets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    let mut read = 0;
    for e in std::fs::read_dir(presets).unwrap().flatten() {
        let values = e.path().join("values.yaml");
        if let Ok(text) = std::fs::read_to_string(&values) {
            assert!(agrees(&text), "not read: {}", values.display());
            read += 1;
        }
    }
    assert!(read >= 2, "cozystack and generic");
}

/// Scalars chosen to sit on the edges of the resolution rules and of the syntax.
const SCALARS: &[&str] = &[
    "a",
    "x y",
    "1",
    "-1",
    "+1",
    "0",
    "-0",
    "01",
    "0x1f",
    "0xZ",
    "-0x10",
    "0o17",
    "0b11",
    "1.5",
    "1e5",
    ".5",
    "5.",
    "-.inf",
    ".nan",
    "inf",
    "NaN",
    "1_0",
    "~",
    "null",
    "Null",
    "true",
    "False",
    "yes",
    "'q'",
    "'it''s'",
    "\"d\"",
    "\"e\\n\"",
    "\"\\x41\"",
    "[]",
    "[ ]",
    "[1, 10.0.0.0/8]",
    "[a,b]",
    "[-1, +x]",
    "{}",
    "a#b",
    "a #c",
    "http://h:1/p",
    "a:b",
    "-x",
    "?x",
    ":x",
    "---",
    "a'b",
    "99999999999999999999",
    "-99999999999999999999",
    "1.2.3",
    "10.0.0.1/8",
    "|",
    "|-",
    "|+",
    "#c",
    "",
];

/// A random block node of depth up to `depth`, written at `indent`.
fn node(depth: u32) -> impl Strategy<Value = Tree> {
    let leaf = prop::sample::select(SCALARS).prop_map(|s| Tree::Scalar(s.to_string()));
    leaf.prop_recursive(depth, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec((prop::sample::select(SCALARS), inner.clone()), 1..4)
                .prop_map(|v| Tree::Map(v.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
            prop::collection::vec(inner, 1..4).prop_map(Tree::Seq),
        ]
    })
}

#[derive(Debug, Clone)]
enum Tree {
    Scalar(String),
    Map(Vec<(String, Tree)>),
    Seq(Vec<Tree>),
}

/// Writes `t` as block YAML: `step` spaces an indentation level, sequences under a key at the
/// key's own column when `flush`, a literal block's lines from `block`.
fn write(t: &Tree, indent: usize, step: usize, flush: bool, block: &str, out: &mut String) {
    let pad = " ".repeat(indent);
    let scalar = |s: &str, out: &mut String, at: usize| {
        out.push_str(s);
        out.push('\n');
        if s.starts_with('|') {
            for l in block.split('\n') {
                if !l.is_empty() {
                    out.push_str(&" ".repeat(at + step));
                }
                out.push_str(l);
                out.push('\n');
            }
        }
    };
    match t {
        Tree::Scalar(s) => {
            out.push_str(&pad);
            scalar(s, out, indent);
        }
        Tree::Map(entries) => {
            for (k, v) in entries {
                out.push_str(&pad);
                out.push_str(k);
                out.push(':');
                match v {
                    Tree::Scalar(s) => {
                        out.push(' ');
                        scalar(s, out, indent);
                    }
                    Tree::Seq(_) if flush => {
                        out.push('\n');
                        write(v, indent, step, flush, block, out);
                    }
                    _ => {
                        out.push('\n');
                        write(v, indent + step, step, flush, block, out);
                    }
                }
            }
        }
        Tree::Seq(items) => {
            for v in items {
                out.push_str(&pad);
                out.push('-');
                match v {
                    Tree::Scalar(s) => {
                        out.push(' ');
                        scalar(s, out, indent);
                    }
                    _ => {
                        out.push('\n');
                        write(v, indent + step, step, flush, block, out);
                    }
                }
            }
        }
    }
}

/// One edit to a text: replace, insert or delete a byte (characters YAML gives meaning to).
fn mutate(text: &str, edits: &[(usize, u8, u8)]) -> String {
    const BYTES: &[u8] = b" :-#'\"|\n\t>[]{}&*!?,.0123456789ax\\";
    let mut b = text.as_bytes().to_vec();
    for &(at, what, op) in edits {
        if b.is_empty() {
            break;
        }
        let at = at % b.len();
        let c = BYTES[what as usize % BYTES.len()];
        match op % 3 {
            0 => b[at] = c,
            1 => b.insert(at, c),
            _ => {
                b.remove(at);
            }
        }
    }
    String::from_utf8(b).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn agrees_on_generated_block_yaml(
        t in node(4),
        step in 1usize..5,
        flush: bool,
        block in prop::sample::select(&["x", "x\n", "x\n\ny", " x\n\n", "x\n  y\n\n\n", "\nx"][..]),
        edits in prop::collection::vec((0usize..4096, 0u8..64, 0u8..3), 0..3),
    ) {
        let mut text = String::new();
        write(&t, 0, step, flush, block, &mut text);
        // About half of these the quick reader answers; the rest it leaves to serde_yaml_ng.
        agrees(&text);
        agrees(&mutate(&text, &edits));
        agrees(&format!("---\n{text}---\n{text}"));
    }
}

/// How a line starts after its indentation, and what it ends with.
const HEADS: &[&str] = &[
    "", "- ", "-", "- - ", "a: ", "b:", "c: ", "a:", "\"k\": ", "'k': ", "- a: ", "- b:", "? ",
    "#c",
];
const TAILS: &[&str] = &[
    "", "x", "1", "0x1", "-2", "'s'", "\"d\"", "\"\\t\"", "|", "|-", "|+", " #c", "[]", "{}",
    "---", "~", "true", "a b", ".5", "&a x", "*a", "!t x", ">", "[1]", "x: y", "x:", "\t", "é",
    "x #c", "'a''b'", "\"a", "...", "[a, 1]", "[ ]", "[a]#c", "[a] #c", "[a,]", "[-]", "[a b]",
    "[[a]]", "[a, 'b']",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Lines of a random indentation, start and end: shapes no tree writer makes (odd
    /// indentation, stray indicators, comments and blocks in odd places).
    #[test]
    fn agrees_on_random_lines(
        lines in prop::collection::vec(
            (0usize..7, prop::sample::select(HEADS), prop::sample::select(TAILS)),
            1..7,
        ),
        final_newline: bool,
    ) {
        let mut text = lines
            .iter()
            .map(|(indent, head, tail)| format!("{}{head}{tail}", " ".repeat(*indent)))
            .collect::<Vec<_>>()
            .join("\n");
        if final_newline {
            text.push('\n');
        }
        agrees(&text);
    }
}
