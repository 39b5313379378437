//! The build's version and whether it counts as a release (drift checks run only in releases).

/// The version this binary reports; `TALM_VERSION` at build time overrides the crate version.
pub fn current() -> &'static str {
    option_env!("TALM_VERSION").unwrap_or(env!("CARGO_PKG_VERSION"))
}

/// A release is any version but `""`, `dev`, or a git-describe suffix (`-N-gHASH`, `-dirty`).
pub fn is_release(v: &str) -> bool {
    if v.is_empty() || v == "dev" || v.ends_with("-dirty") {
        return false;
    }
    // `-<digits>-g<hex>` at the end marks a git-describe build between tags.
    let parts: Vec<&str> = v.rsplitn(3, '-').collect();
    if parts.len() == 3 {
        let (g, n) = (parts[0], parts[1]);
        if g.len() > 1
            && g.starts_with('g')
            && g[1..].chars().all(|c| c.is_ascii_hexdigit())
            && !n.is_empty()
            && n.chars().all(|c| c.is_ascii_digit())
        {
            return false;
        }
    }
    true
}

/// The version without a leading `v`, as stamped into generated Chart.yaml files.
pub fn chart_version() -> String {
    let v = current();
    if is_release(v) {
        v.trim_start_matches('v').to_string()
    } else {
        "0.1.0".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_rules() {
        assert!(is_release("v0.30.0"));
        assert!(is_release("0.30.0-rc.1"));
        assert!(!is_release(""));
        assert!(!is_release("dev"));
        assert!(!is_release("v0.30.0-3-gabc123"));
        assert!(!is_release("v0.30.0-3-gabc123-dirty"));
        assert!(!is_release("v0.30.0-dirty"));
    }
}
