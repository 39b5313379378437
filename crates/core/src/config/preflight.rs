//! The Talos-version pre-flight of `apply` (a warning only): the configured version contract
//! (empty = the newest this talm knows) must not be newer, by major.minor, than the Talos the
//! node runs, or the config may carry fields the node's machinery cannot read.

use crate::render::pipeline::NEWEST_CONTRACT;
use crate::secrets::contract::Contract;

/// major.minor of a Talos tag such as `v1.13.7` or `v1.14.0-beta.1`.
fn minor_of(tag: &str) -> Option<(u32, u32)> {
    Contract::parse(tag).ok()?.0
}

/// The warning and hint lines when `configured` is newer than `running`; `None` when it is
/// not, or when either cannot be read (the check then stays silent, as the Go talm's).
pub fn talos_version(configured: &str, running: &str) -> Option<String> {
    let (want, shown) = match configured.trim() {
        "" => (NEWEST_CONTRACT, "current".to_string()),
        c => {
            let v = minor_of(c)?;
            (v, format!("v{}.{}", v.0, v.1))
        }
    };
    let have = minor_of(running)?;
    (want > have).then(|| {
        format!(
            "warning: pre-flight: configured talosVersion={shown} is newer than the node's running Talos {running}\n\
             hint: the generated config may include fields the node's machinery doesn't know; either reboot the node into a maintenance image matching templateOptions.talosVersion / --talos-version, or lower templateOptions.talosVersion / --talos-version to match the running Talos."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_only_when_the_contract_is_newer() {
        let w = talos_version("", "v1.12.6").unwrap();
        assert!(w.starts_with("warning: pre-flight: configured talosVersion=current is newer than the node's running Talos v1.12.6\nhint: "), "{w}");
        assert_eq!(talos_version("", "v1.13.7"), None);
        assert_eq!(talos_version("v1.12", "v1.12.0"), None, "patch ignored");
        assert!(talos_version("v1.13.2", "v1.12.9")
            .unwrap()
            .contains("talosVersion=v1.13 is newer"));
        assert_eq!(talos_version("v1.11", "v1.12.1"), None);
        assert_eq!(talos_version("nonsense", "v1.12.1"), None);
        assert_eq!(talos_version("", "unknown"), None);
    }
}
