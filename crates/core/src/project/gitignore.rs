//! The project's .gitignore: the secret-bearing files must be listed; existing lines are kept.

/// Entries every project ignores, in order; the kubeconfig's base name comes last.
pub fn required(kubeconfig: &str) -> Vec<String> {
    let base = std::path::Path::new(kubeconfig)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kubeconfig".into());
    vec![
        "secrets.yaml".into(),
        "talosconfig".into(),
        "talm.key".into(),
        "values-secret.yaml".into(),
        base,
    ]
}

fn present(existing: &str, entry: &str) -> bool {
    existing.lines().map(str::trim).any(|l| {
        l == entry || l.starts_with(&format!("{entry} ")) || l.starts_with(&format!("{entry}#"))
    })
}

/// The new .gitignore content, or `None` when nothing is missing.
pub fn update(existing: Option<&str>, kubeconfig: &str) -> Option<String> {
    let mut out = existing
        .map(str::to_string)
        .unwrap_or_else(|| "# Sensitive files\n".into());
    let mut changed = existing.is_none();
    for entry in required(kubeconfig) {
        if !present(&out, &entry) {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&entry);
            out.push('\n');
            changed = true;
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_missing_entries_once() {
        let fresh = update(None, "kubeconfig").unwrap();
        assert_eq!(
            fresh,
            "# Sensitive files\nsecrets.yaml\ntalosconfig\ntalm.key\nvalues-secret.yaml\nkubeconfig\n"
        );
        assert_eq!(update(Some(&fresh), "kubeconfig"), None);
        let annotated = "target/\nsecrets.yaml # keep out\ntalosconfig#x";
        let out = update(Some(annotated), "dir/kc").unwrap();
        assert_eq!(
            out,
            "target/\nsecrets.yaml # keep out\ntalosconfig#x\ntalm.key\nvalues-secret.yaml\nkc\n"
        );
    }
}
