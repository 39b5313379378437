//! The build's version and whether it counts as a release (drift checks run only in releases).

/// The version this binary reports; `TALM_VERSION` at build time overrides the crate version.
pub fn current() -> &'static str {
    option_env!("TALM_VERSION").unwrap_or(env!("CARGO_PKG_VERSION"))
}

/// The Talos machinery version talm speaks (its client block in `talm version`; the version the
/// simulator runs by default).
pub const TALOS_MACHINERY: &str = "v1.13.7";

/// The client's side of a version report (`talm version`, `talm support`'s summary), as
/// talosctl fills it from the Talos machinery module it was built with: the SHA is the module's
/// embedded `undefined`, the platform is named as Go names it; talm's own version is
/// `talm --version`.
pub fn client_block() -> serde_json::Value {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    serde_json::json!({
        "tag": TALOS_MACHINERY,
        "sha": "undefined",
        "built": "",
        "go_version": format!("none (talm {} is Rust)", current()),
        "os": os,
        "arch": arch,
    })
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

/// The tag of an image reference (`ghcr.io/siderolabs/installer:v1.13.9@sha256:...` gives
/// `v1.13.9`): after the last `/`, between `:` and any `@` digest; `None` without one (a
/// registry port in an earlier part is no tag).
pub fn image_tag(image: &str) -> Option<String> {
    let last = image.rsplit('/').next().unwrap_or(image);
    let named = last.split('@').next().unwrap_or(last);
    match named.split_once(':') {
        Some((_, t)) if !t.is_empty() => Some(t.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod image_tags {
    use super::image_tag;

    #[test]
    fn the_tag_of_an_image_reference() {
        assert_eq!(
            image_tag("ghcr.io/siderolabs/installer:v1.13.9").as_deref(),
            Some("v1.13.9")
        );
        assert_eq!(image_tag("registry:5000/installer").as_deref(), None);
        assert_eq!(
            image_tag("ghcr.io/x/installer:v1.13.9@sha256:ab").as_deref(),
            Some("v1.13.9")
        );
        assert_eq!(image_tag("ghcr.io/x/installer@sha256:ab").as_deref(), None);
    }
}
