//! Unit tests of the encrypted-file reader and writer: sealing in place, digests, refusals.

use super::*;

fn key() -> Identity {
    parse_key(&new_key_file(), "talm.key").unwrap()
}

#[test]
fn key_file_layout_and_legacy_form() {
    let text = new_key_file();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("# created: "));
    assert!(lines[1].starts_with("# public key: age1"));
    assert!(lines[2].starts_with("AGE-SECRET-KEY-1"));
    let id = parse_key(&text, "k").unwrap();
    assert_eq!(
        lines[1].trim_start_matches("# public key: "),
        id.to_public().to_string()
    );
    let legacy = format!("  {}  \n", lines[2]);
    assert!(parse_key(&legacy, "k").is_ok());
    assert!(parse_key("# nothing\n", "k").is_err());
}

#[test]
fn every_scalar_is_sealed_and_roundtrips_with_types() {
    let id = key();
    let plain =
        "a: hello\nn: 5\nb: true\nz: null\nl:\n    - x\n    - 2\nm:\n    k: \"multi\\nline\\n\"\n";
    let enc = encrypt_yaml(&id, plain, "p.yaml", None).unwrap();
    let v: Value = serde_yaml_ng::from_str(&enc).unwrap();
    assert!(envelope::claims(v["a"].as_str().unwrap()));
    assert!(v["n"].as_str().unwrap().ends_with(",type:int]"));
    assert!(v["b"].as_str().unwrap().ends_with(",type:bool]"));
    assert_eq!(v["z"], Value::Null);
    assert_eq!(count_sealed(&v), 6);
    let dec = decrypt_yaml(&id, &enc, "p.encrypted.yaml").unwrap();
    assert_eq!(dec, plain, "the text comes back as it was");
}

#[test]
fn comments_and_quoting_survive_a_round_trip() {
    let id = key();
    let plain = "# registry credentials\nregistry:\n  user: \"bot\"   # the CI account\n  password: 'p@ss: word'\n  token: abc\n  port: 5000\n  cert: |\n    line one\n    line two\n# trailing comment\n";
    let enc = encrypt_yaml(&id, plain, "values-secret.yaml", None).unwrap();
    assert!(enc.starts_with("# talm-digest: ENC[AGE,data:"), "{enc}");
    let body = enc.split_once('\n').unwrap().1;
    assert!(
        body.starts_with("# registry credentials\nregistry:\n  user: \"ENC[AGE,data:"),
        "{enc}"
    );
    assert!(
        enc.contains("# the CI account") && enc.ends_with("# trailing comment\n"),
        "{enc}"
    );
    assert!(
        !enc.contains("p@ss") && !enc.contains("line one") && !enc.contains("5000"),
        "{enc}"
    );
    assert_eq!(decrypt_yaml(&id, &enc, "v.encrypted.yaml").unwrap(), plain);
}

#[test]
fn a_file_cut_at_a_line_or_edited_is_refused_by_its_digest() {
    let id = key();
    let enc = encrypt_yaml(&id, "a: one\nb: two\nc: [x, y]\n", "v.yaml", None).unwrap();
    let lines: Vec<&str> = enc.lines().collect();
    let cut = lines[..lines.len() - 2].join("\n") + "\n";
    let err = decrypt_yaml(&id, &cut, "v.encrypted.yaml").unwrap_err();
    assert!(
        err.to_string()
            .contains("v.encrypted.yaml does not hold what was encrypted into it"),
        "{err}"
    );
    // The same values re-encrypted keep the digest line; a changed value gets a new one.
    let again = encrypt_yaml(&id, "a: one\nb: two\nc: [x, y]\n", "v.yaml", Some(&enc)).unwrap();
    assert_eq!(again, enc);
    let changed = encrypt_yaml(&id, "a: one\nb: 2\nc: [x, y]\n", "v.yaml", Some(&enc)).unwrap();
    assert_ne!(changed.lines().next(), enc.lines().next());
    // Files without a digest (older talm, the Go talm) still open.
    let body = enc.split_once('\n').unwrap().1;
    assert_eq!(
        decrypt_yaml(&id, body, "v").unwrap(),
        "a: one\nb: two\nc: [\"x\", \"y\"]\n"
    );
}

#[test]
fn odd_keys_and_tags_are_sealed_or_refused_never_left_in_clear() {
    let id = key();
    for plain in [
        "vlans:\n  100: psk-secret\ntrue: yes-secret\n",
        "db: !vault {pw: tagged-secret}\n",
    ] {
        match encrypt_yaml(&id, plain, "v.yaml", None) {
            Ok(enc) => {
                assert!(!enc.contains("-secret"), "{enc}");
                let back = decrypt_value(&id, &enc, "v").unwrap();
                let want: Value = serde_yaml_ng::from_str(plain).unwrap();
                assert_eq!(back, want);
            }
            Err(e) => assert!(
                e.to_string().contains("left in clear") || e.to_string().contains("YAML tag"),
                "{e}"
            ),
        }
    }
}

#[test]
fn complex_keys_and_tags_are_refused_naming_the_line() {
    let id = key();
    for (plain, want) in [
        (
            "a: x\n? [a, b]\n: [c]\n",
            "refusing to encrypt v.yaml:2: a mapping key there is a list or a mapping",
        ),
        (
            "a:\n  ? {x: secretkey}\n  : v\n",
            "refusing to encrypt v.yaml:2: a mapping key",
        ),
        (
            "a: 1\nb: !vault x\n",
            "refusing to encrypt v.yaml:2: it holds a YAML tag",
        ),
    ] {
        let err = encrypt_yaml(&id, plain, "v.yaml", None).unwrap_err();
        assert!(err.to_string().starts_with(want), "{plain:?}: {err}");
        assert!(!err.to_string().contains("secretkey"), "{err}");
    }
}

#[test]
fn damaged_envelopes_are_refused_naming_the_path() {
    let id = key();
    let enc = encrypt_yaml(&id, "a:\n  b: secret\n  c: x\n", "p", None).unwrap();
    let (digest, body) = enc.split_once('\n').unwrap();
    let cut = format!("{digest}\n{}", body.replacen("]\n", "\n", 1));
    let err = decrypt_yaml(&id, &cut, "s.encrypted.yaml").unwrap_err();
    assert!(
        err.to_string().contains(
            "s.encrypted.yaml: cannot decrypt the value at a.b: it does not end with `]`"
        ),
        "{err}"
    );
}

#[test]
fn unchanged_values_keep_ciphertext() {
    let id = key();
    let first = encrypt_yaml(&id, "a: one\nb: two\nl: [x, y]\n", "p", None).unwrap();
    let second = encrypt_yaml(&id, "a: one\nb: changed\nl: [x, y]\n", "p", Some(&first)).unwrap();
    let f: Value = serde_yaml_ng::from_str(&first).unwrap();
    let s: Value = serde_yaml_ng::from_str(&second).unwrap();
    assert_eq!(f["a"], s["a"]);
    assert_ne!(f["b"], s["b"]);
    assert_eq!(f["l"], s["l"]);
    // A list that changes length is sealed afresh.
    let third = encrypt_yaml(
        &id,
        "a: one\nb: changed\nl: [x, y, z]\n",
        "p",
        Some(&second),
    )
    .unwrap();
    let t: Value = serde_yaml_ng::from_str(&third).unwrap();
    assert_ne!(s["l"][0], t["l"][0]);
}

#[test]
fn wrong_key_and_damage_name_the_path() {
    let enc = encrypt_yaml(&key(), "a:\n  b: secret\n", "p", None).unwrap();
    let err = decrypt_yaml(&key(), &enc, "x.encrypted.yaml").unwrap_err();
    assert!(
        err.to_string()
            .contains("x.encrypted.yaml: cannot decrypt the value at a.b"),
        "{err}"
    );
    let damaged = enc.replace("ENC[AGE,data:", "ENC[AGE,data:!!");
    assert!(decrypt_yaml(&key(), &damaged, "x")
        .unwrap_err()
        .to_string()
        .contains("not base64"));
}
