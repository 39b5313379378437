//! age encryption of project files: the `talm.key` identity (age-keygen format), and sealing
//! every value of a YAML file in its `ENC[AGE,...]` envelope (`envelope`) in place in the text,
//! with incremental re-encryption that keeps the ciphertext of unchanged values.

use std::str::FromStr;

use age::secrecy::ExposeSecret;
use age::x25519::Identity;
use anyhow::Result;
use serde_yaml_ng::{Mapping, Value};

use super::envelope;
use talm_base::error::{hinted, Hinted};
use talm_base::yaml::located::{self, Scalar, Seg, Style, Unsealable};

/// The key file text for a new identity, as age-keygen writes it.
pub fn new_key_file() -> String {
    let id = Identity::generate();
    let now = time::OffsetDateTime::now_local().unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    let created = now
        .replace_nanosecond(0)
        .unwrap_or(now)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    format!(
        "# created: {created}\n# public key: {}\nAGE-SECRET-KEY{}\n",
        id.to_public(),
        &id.to_string().expose_secret()["AGE-SECRET-KEY".len()..]
    )
}

/// The project's age key file, next to Chart.yaml.
pub const KEY_FILE: &str = "talm.key";

/// Warns on stderr, once per run, when the key file at `path` can be read or written by its
/// group or others: whoever reads it opens every encrypted file of the project.
pub fn check_key_mode(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 == 0 || WARNED.swap(true, Ordering::Relaxed) {
        return;
    }
    let who = match (mode & 0o004 != 0, mode & 0o040 != 0) {
        (true, _) => "every user of this machine",
        (false, true) => "its group",
        (false, false) => "its group or others",
    };
    let file = path.display();
    talm_base::output::err(&format!(
        "WARN: {file} is open to {who} (mode {mode:04o}): whoever reads it can open every encrypted file of the project; restrict it with `chmod 600 {file}`"
    ));
}

/// The identity in a key file: the first line starting `AGE-SECRET-KEY-`, or the whole file
/// when it is nothing but the key (older plain format).
pub fn parse_key(text: &str, file: &str) -> Result<Identity> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("AGE-SECRET-KEY-"))
        .or_else(|| Some(text.trim()).filter(|t| t.starts_with("AGE-SECRET-KEY-")))
        .ok_or_else(|| {
            hinted(
                format!("{file}: no AGE-SECRET-KEY found in key file"),
                "talm.key must hold an age identity line starting with AGE-SECRET-KEY-",
            )
        })?;
    Identity::from_str(line).map_err(|e| {
        hinted(
            format!("{file}: invalid age identity: {e}"),
            "restore talm.key from your backup",
        )
    })
}

/// The encrypted files of the project at `root` (`*.encrypted`, `*.encrypted.yaml` at the top,
/// and the encrypted value files Chart.yaml lists), sorted.
pub fn sealed_files(root: &std::path::Path) -> Vec<String> {
    let sealed = |n: &str| n.ends_with(".encrypted") || n.ends_with(".encrypted.yaml");
    let mut out: Vec<String> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| sealed(n))
                .collect()
        })
        .unwrap_or_default();
    if let Ok(chart) = crate::project::chart::Chart::load(root) {
        for f in chart.template.value_files {
            if sealed(&f) && root.join(&f).is_file() && !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

/// A new key file for the project at `root`; refused while encrypted files exist there, since
/// they were sealed to the missing talm.key and a new key could not open them.
pub fn new_key_for(root: &std::path::Path) -> Result<String> {
    let sealed = sealed_files(root);
    if sealed.is_empty() {
        return Ok(new_key_file());
    }
    Err(Hinted {
        message: format!(
            "talm.key is missing, but {} encrypted file(s) sealed to it exist: {}; refusing to generate a new key (it could not open them)",
            sealed.len(),
            sealed.join(", ")
        ),
        hints: vec![
            format!("restore talm.key from your backup into {}", root.display()),
            "if that key is lost for good, move the encrypted files out of the project first (they cannot be opened by anyone), then run the command again to seal the plain files to a new key".into(),
        ],
    }
    .into())
}

/// The hint for a missing or unusable key: restore it, or start over with new secrets.
pub fn key_recovery_hint(encrypted: &str) -> String {
    format!(
        "talm.key is required to decrypt {encrypted}. Restore your backed-up key, or re-run `talm init` to regenerate (this writes new secrets — the old {encrypted} will not be decryptable without the original key; move the *.encrypted* files out of the project first, talm will not seal new files next to ones it cannot open)."
    )
}

/// The first line of an encrypted file: the sealed SHA-256 of the values it holds, so a file
/// cut short at a line, or with values removed by hand, is refused. Only the key's holder can
/// seal one; files without it (older talm, the Go talm) are read as before.
const DIGEST_PREFIX: &str = "# talm-digest: ";

fn digest_of(v: &Value) -> String {
    use sha2::Digest as _;
    fn untagged(v: &Value) -> Value {
        match v {
            Value::Tagged(t) => untagged(&t.value),
            Value::Mapping(m) => {
                Value::Mapping(m.iter().map(|(k, x)| (untagged(k), untagged(x))).collect())
            }
            Value::Sequence(s) => Value::Sequence(s.iter().map(untagged).collect()),
            other => other.clone(),
        }
    }
    let json = serde_json::to_string(&untagged(v)).unwrap_or_default();
    sha2::Sha256::digest(json.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The digest line and the rest of an encrypted text.
fn split_digest(text: &str) -> (Option<&str>, &str) {
    match text.strip_prefix(DIGEST_PREFIX) {
        Some(rest) => {
            let (line, body) = rest.split_once('\n').unwrap_or((rest, ""));
            (Some(line.trim()), body)
        }
        None => (None, text),
    }
}

/// Checks the opened values of an encrypted text against its digest line, if it has one.
fn check_digest(
    id: &Identity,
    sealed_digest: Option<&str>,
    opened: &Value,
    file: &str,
) -> Result<()> {
    let Some(sealed) = sealed_digest else {
        return Ok(());
    };
    let want = open_one(id, sealed, "its digest line", file)?;
    if want.as_str() == Some(digest_of(opened).as_str()) {
        return Ok(());
    }
    Err(hinted(
        format!("{file} does not hold what was encrypted into it: values were removed, added or changed outside talm (the file may have been cut short); nothing was written"),
        format!("restore {file} from git (`git checkout -- {file}`) or a backup; if you edited it by hand on purpose, edit the plain file instead and run `talm init --encrypt`"),
    ))
}

/// The value at `path`; keys match by their text (`100` finds the number key 100) and tags are
/// looked through.
fn at_path<'v>(v: &'v Value, path: &[Seg]) -> Option<&'v Value> {
    let Some((first, rest)) = path.split_first() else {
        return Some(v);
    };
    match (first, v) {
        (_, Value::Tagged(t)) => at_path(&t.value, path),
        (Seg::Key(k), Value::Mapping(m)) => {
            let (_, x) = m.iter().find(|(key, _)| key_name(key) == *k)?;
            at_path(x, rest)
        }
        (Seg::Index(i), Value::Sequence(s)) => at_path(s.get(*i)?, rest),
        _ => None,
    }
}

fn set_path(v: &mut Value, path: &[Seg], new: Value) {
    let Some((first, rest)) = path.split_first() else {
        *v = new;
        return;
    };
    let next = match (first, v) {
        (_, Value::Tagged(t)) => return set_path(&mut t.value, path, new),
        (Seg::Key(k), Value::Mapping(m)) => m
            .iter_mut()
            .find(|(key, _)| key_name(key) == *k)
            .map(|(_, x)| x),
        (Seg::Index(i), Value::Sequence(s)) => s.get_mut(*i),
        _ => None,
    };
    if let Some(n) = next {
        set_path(n, rest, new);
    }
}

fn has_tags(v: &Value) -> bool {
    match v {
        Value::Tagged(_) => true,
        Value::Mapping(m) => m.iter().any(|(k, x)| has_tags(k) || has_tags(x)),
        Value::Sequence(s) => s.iter().any(has_tags),
        _ => false,
    }
}

/// Whether a mapping anywhere in `v` has a key that is a list or a mapping.
fn has_complex_keys(v: &Value) -> bool {
    let complex = |k: &Value| match k {
        Value::Tagged(t) => matches!(t.value, Value::Mapping(_) | Value::Sequence(_)),
        other => matches!(other, Value::Mapping(_) | Value::Sequence(_)),
    };
    match v {
        Value::Mapping(m) => m.iter().any(|(k, x)| complex(k) || has_complex_keys(x)),
        Value::Sequence(s) => s.iter().any(has_complex_keys),
        Value::Tagged(t) => has_complex_keys(&t.value),
        _ => false,
    }
}

/// Whether every scalar of a value is an envelope (or null): nothing left in clear.
fn all_sealed(v: &Value) -> bool {
    match v {
        Value::Mapping(m) => m.values().all(all_sealed),
        Value::Sequence(s) => s.iter().all(all_sealed),
        Value::Tagged(t) => all_sealed(&t.value),
        Value::String(s) => envelope::claims(s),
        Value::Null => true,
        _ => false,
    }
}

/// The envelope of `previous` at `path` when it still stands for `value`: the same value and
/// type, and every list on the way of the same length (a list that changed length is sealed
/// afresh, as the Go talm does).
fn kept_envelope(
    id: &Identity,
    plain: &Value,
    previous: &Value,
    path: &[Seg],
    value: &Value,
) -> Option<String> {
    for n in 0..path.len() {
        if let (Some(Value::Sequence(a)), Some(Value::Sequence(b))) =
            (at_path(plain, &path[..n]), at_path(previous, &path[..n]))
        {
            if a.len() != b.len() {
                return None;
            }
        }
    }
    let prev = at_path(previous, path)?.as_str()?;
    (envelope::claims(prev) && envelope::open(id, prev).ok().as_ref() == Some(value))
        .then(|| prev.to_string())
}

/// Quotes an envelope as the value it replaces was quoted, so the quoting survives a round trip;
/// inside a flow collection (`[a, b]`) an envelope's `,` and `]` need quotes in any case.
fn quoted_like(style: Style, in_flow: bool, sealed: &str) -> String {
    match style {
        Style::Single => format!("'{sealed}'"),
        Style::Double => format!("\"{sealed}\""),
        _ if in_flow => format!("\"{sealed}\""),
        _ => sealed.to_string(),
    }
}

/// The indentation step of a YAML text: the smallest indentation of a nested line (2 when
/// nothing is nested).
fn indent_step(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| l.len() - l.trim_start_matches(' ').len())
        .filter(|n| *n > 0)
        .min()
        .unwrap_or(2)
}

/// A decrypted value written where its envelope was, in the envelope's quoting where that
/// can hold it; block text is indented by the file's own step.
fn written_like(s: &Scalar, value: &Value, step: usize) -> String {
    let text = match value {
        Value::String(t) => t,
        other => return talm_base::yaml::to_string(other).trim_end().to_string(),
    };
    let single_ok = !text.contains(['\n', '\r']) && !text.chars().any(char::is_control);
    match s.style {
        Style::Double => talm_base::yaml::double_quoted(text),
        Style::Single if single_ok => format!("'{}'", text.replace('\'', "''")),
        Style::Single => talm_base::yaml::double_quoted(text),
        _ if text.contains('\n') && !s.in_flow && talm_base::yaml::literal_block_ok(text) => {
            talm_base::yaml::literal_block(text, s.indent + step.max(2) - 2)
        }
        _ if talm_base::yaml::plain_ok(text) => text.clone(),
        _ => talm_base::yaml::double_quoted(text),
    }
}

/// The replacement for a scalar's text, keeping the line break a block scalar's range ends with.
fn keep_break(s: &Scalar, source: &str, with: String) -> String {
    if source[s.start..s.end].ends_with('\n') {
        with + "\n"
    } else {
        with
    }
}

/// Seals every scalar value (text, numbers, booleans) of a YAML mapping, in place in the text:
/// keys, comments, order and quoting stay. Where `previous` (the existing encrypted file) holds
/// an envelope for the same value, that envelope is kept byte for byte.
pub fn encrypt_yaml(
    identity: &Identity,
    plain_text: &str,
    plain_file: &str,
    previous: Option<&str>,
) -> Result<String> {
    let (digest_line, plain_text) = split_digest(plain_text);
    let plain = Value::Mapping(talm_base::yaml::parse_map(plain_text, plain_file)?);
    let at = |what: Unsealable| match located::first_line_of(plain_text, what) {
        Some(line) => format!("{plain_file}:{}", line + usize::from(digest_line.is_some())),
        None => plain_file.to_string(),
    };
    if has_tags(&plain) {
        return Err(hinted(
            format!("refusing to encrypt {}: it holds a YAML tag (`!name`), which an encrypted value cannot keep", at(Unsealable::LocalTag)),
            format!("remove the tags from {plain_file}; values are read as plain text, numbers and booleans"),
        ));
    }
    if has_complex_keys(&plain) {
        return Err(hinted(
            format!("refusing to encrypt {}: a mapping key there is a list or a mapping (`? [a, b]`), which an encrypted file cannot keep", at(Unsealable::ComplexKey)),
            format!("write the keys of {plain_file} as text, numbers or booleans, then run `talm init --encrypt` again"),
        ));
    }
    let (prev_digest, prev_body) = match previous {
        Some(p) => split_digest(p),
        None => (None, ""),
    };
    let prev = serde_yaml_ng::from_str::<Value>(prev_body)
        .ok()
        .filter(Value::is_mapping);
    let recipient = identity.to_public();
    let mut expected = plain.clone();
    let mut sealed_at: Vec<(Vec<Seg>, String)> = Vec::new();
    for (path, value) in leaves(&plain) {
        let kept = prev
            .as_ref()
            .and_then(|p| kept_envelope(identity, &plain, p, &path, value));
        let sealed = match kept {
            Some(k) => Some(k),
            None => envelope::seal(&recipient, value)?,
        };
        if let Some(sealed) = sealed {
            set_path(&mut expected, &path, Value::String(sealed.clone()));
            sealed_at.push((path, sealed));
        }
    }
    let in_place = located::locate(plain_text).ok().and_then(|l| {
        let [doc] = l.docs.as_slice() else {
            return None;
        };
        let mut edits = Vec::new();
        for (path, s) in located::value_scalars(doc) {
            if s.tag.as_deref().is_some_and(|t| t != "str") {
                return None;
            }
            if let Some((_, sealed)) = sealed_at.iter().find(|(p, _)| *p == path) {
                let with = keep_break(s, plain_text, quoted_like(s.style, s.in_flow, sealed));
                edits.push((s.start, s.end, with));
            }
        }
        Some(located::splice(plain_text, edits))
    });
    let body = checked(in_place, &expected);
    let reread = serde_yaml_ng::from_str::<Value>(&body).unwrap_or(Value::Null);
    if !all_sealed(&reread) {
        return Err(hinted(
            format!("refusing to encrypt {plain_file}: a value would be left in clear (a key or tag talm cannot seal in place)"),
            format!("write {plain_file} with text keys and no YAML tags, then run `talm init --encrypt` again"),
        ));
    }
    let digest = digest_of(&plain);
    let kept = prev_digest.filter(|d| {
        open_one(identity, d, "its digest line", plain_file)
            .ok()
            .is_some_and(|v| v.as_str() == Some(digest.as_str()))
    });
    let sealed_digest = match kept {
        Some(d) => d.to_string(),
        None => envelope::seal(&recipient, &Value::String(digest))?.unwrap_or_default(),
    };
    Ok(format!("{DIGEST_PREFIX}{sealed_digest}\n{body}"))
}

/// The text edited in place when it reads back as `expected`, else `expected` re-encoded.
fn checked(in_place: Option<String>, expected: &Value) -> String {
    match in_place {
        Some(text) if serde_yaml_ng::from_str::<Value>(&text).ok().as_ref() == Some(expected) => {
            text
        }
        _ => talm_base::yaml::to_string(expected),
    }
}

/// Every scalar leaf of a value with its path (nulls left out).
fn leaves(v: &Value) -> Vec<(Vec<Seg>, &Value)> {
    fn walk<'v>(v: &'v Value, path: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, &'v Value)>) {
        match v {
            Value::Mapping(m) => {
                for (k, x) in m {
                    path.push(Seg::Key(key_name(k)));
                    walk(x, path, out);
                    path.pop();
                }
            }
            Value::Sequence(items) => {
                for (i, x) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    walk(x, path, out);
                    path.pop();
                }
            }
            Value::Tagged(t) => walk(&t.value, path, out),
            Value::Null => {}
            other => out.push((path.clone(), other)),
        }
    }
    let mut out = Vec::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

/// Decrypts every envelope of an encrypted YAML file in place in the text (comments, order
/// and quoting stay). Every value that claims to be an envelope must open; an error names the
/// file and the key path.
pub fn decrypt_yaml(identity: &Identity, text: &str, file: &str) -> Result<String> {
    let opened = decrypt_value(identity, text, file)?;
    let (_, text) = split_digest(text);
    let in_place = located::locate(text).ok().and_then(|l| {
        let [doc] = l.docs.as_slice() else {
            return None;
        };
        let step = indent_step(text);
        let mut edits = Vec::new();
        for (path, s) in located::value_scalars(doc) {
            if !envelope::claims(&s.value) {
                continue;
            }
            let value = at_path(&opened, &path)?;
            edits.push((
                s.start,
                s.end,
                keep_break(s, text, written_like(s, value, step)),
            ));
        }
        Some(located::splice(text, edits))
    });
    Ok(checked(in_place, &opened))
}

/// Decrypts an encrypted YAML file into a value, for reading in memory only.
pub fn decrypt_value(identity: &Identity, text: &str, file: &str) -> Result<Value> {
    let (digest, body) = split_digest(text);
    // The digest line stays a line, so positions in errors match the file.
    let shifted = if digest.is_some() {
        format!("\n{body}")
    } else {
        body.to_string()
    };
    let value = Value::Mapping(talm_base::yaml::parse_map(&shifted, file)?);
    let opened = open_walk(identity, &value, "", file)?;
    check_digest(identity, digest, &opened, file)?;
    Ok(opened)
}

/// Counts the values that claim to be envelopes.
pub fn count_sealed(v: &Value) -> usize {
    match v {
        Value::Mapping(m) => m.values().map(count_sealed).sum(),
        Value::Sequence(s) => s.iter().map(count_sealed).sum(),
        Value::String(s) => usize::from(envelope::claims(s)),
        Value::Tagged(t) => count_sealed(&t.value),
        _ => 0,
    }
}

fn path_join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn key_name(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}

fn open_walk(id: &Identity, v: &Value, path: &str, file: &str) -> Result<Value> {
    Ok(match v {
        Value::Mapping(m) => {
            let mut out = Mapping::new();
            for (k, val) in m {
                out.insert(
                    k.clone(),
                    open_walk(id, val, &path_join(path, &key_name(k)), file)?,
                );
            }
            Value::Mapping(out)
        }
        Value::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, val) in items.iter().enumerate() {
                out.push(open_walk(id, val, &format!("{path}[{i}]"), file)?);
            }
            Value::Sequence(out)
        }
        Value::String(s) if envelope::claims(s) => open_one(id, s, path, file)?,
        Value::Tagged(t) => Value::Tagged(Box::new(serde_yaml_ng::value::TaggedValue {
            tag: t.tag.clone(),
            value: open_walk(id, &t.value, path, file)?,
        })),
        other => other.clone(),
    })
}

fn open_one(id: &Identity, sealed: &str, path: &str, file: &str) -> Result<Value> {
    envelope::open(id, sealed).map_err(|e| {
        let wrong_key = e.to_string().contains("another talm.key");
        let mut hints = vec![format!(
            "{file} is damaged or was cut short at {path}; nothing was written: restore it from git (`git checkout -- {file}`) or from a backup"
        )];
        if wrong_key {
            hints = vec![key_recovery_hint(file)];
        }
        anyhow::Error::from(Hinted {
            message: format!("{file}: cannot decrypt the value at {path}: {e}"),
            hints,
        })
    })
}

#[cfg(test)]
#[path = "crypt_tests.rs"]
mod tests;
