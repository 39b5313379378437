//! The playbooks bundled with talm: the scripts of `scripts/` that no command runs. `talm run
//! NAME` (or `talm run NAME.rhai`) runs one when the working folder holds no such file (a local
//! file wins); `talm run --list` lists them with the first line of their `//!` doc.

use crate::embedded::{find, SCRIPTS};

/// The bundled playbooks, by name: `scripts/NAME.rhai`.
const NAMES: &[&str] = &["bringup"];

/// One bundled playbook.
#[derive(Clone, Copy, Debug)]
pub struct Playbook {
    pub name: &'static str,
    pub source: &'static str,
}

impl Playbook {
    /// The first line of its `//!` doc: what it does.
    pub fn summary(&self) -> &'static str {
        self.source
            .lines()
            .find_map(|l| l.strip_prefix("//!"))
            .map(str::trim)
            .unwrap_or("")
    }

    /// The name its errors carry (its place in talm's sources, as the commands' scripts).
    pub fn script_name(&self) -> String {
        format!("scripts/{}.rhai", self.name)
    }
}

/// Every bundled playbook, by name.
pub fn all() -> impl Iterator<Item = Playbook> {
    NAMES.iter().filter_map(|name| {
        Some(Playbook {
            name,
            source: find(SCRIPTS, &format!("{name}.rhai"))?,
        })
    })
}

/// The bundled playbook `given` names: `NAME` or `NAME.rhai`.
pub fn named(given: &str) -> Option<Playbook> {
    let name = given.strip_suffix(".rhai").unwrap_or(given);
    all().find(|p| p.name == name)
}

/// `talm run --list`: one line per playbook, its name and what it does.
pub fn listing() -> String {
    let width = all().map(|p| p.name.len()).max().unwrap_or(0);
    all()
        .map(|p| format!("{:width$}  {}\n", p.name, p.summary()))
        .collect()
}

/// The names, for a hint: `bringup, other`.
pub fn names() -> String {
    all().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_playbook_is_bundled_and_says_what_it_does() {
        assert_eq!(all().count(), NAMES.len());
        for p in all() {
            assert!(!p.summary().is_empty(), "{}", p.name);
        }
    }

    #[test]
    fn a_playbook_is_named_with_or_without_its_extension() {
        assert_eq!(named("bringup").map(|p| p.name), Some("bringup"));
        assert_eq!(named("bringup.rhai").map(|p| p.name), Some("bringup"));
        assert!(
            named("apply").is_none(),
            "a command's script is no playbook"
        );
        assert!(named("./bringup.rhai").is_none());
    }
}
