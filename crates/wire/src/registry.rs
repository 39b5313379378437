//! The resource types and namespaces a Talos v1.13 node registers, as Talos declares them: each
//! type's definition (display name, default namespace, declared aliases, print columns,
//! sensitivity) and each namespace's description, in Talos's order. Read from
//! `data/resources-v1.13.yaml` (taken from Talos's source; its header says from where), parsed
//! once.

use std::sync::OnceLock;

use serde::Deserialize;

/// The Talos release the data was taken from.
pub const TALOS: &str = "v1.13.7";

const DATA: &str = include_str!("../data/resources-v1.13.yaml");

/// One registered resource type, as its definition declares it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    /// The full type (`LinkStatuses.net.talos.dev`).
    #[serde(rename = "type")]
    pub ty: String,
    /// The singular name COSI derives from the plural type name (`LinkStatus`).
    pub display: String,
    /// The namespace the type's resources live in when none is asked for.
    pub namespace: String,
    /// The aliases the definition declares (COSI adds the automatic ones before serving it).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The print columns: name and JSONPath over the spec, in order.
    #[serde(default)]
    pub columns: Vec<(String, String)>,
    /// Readable only with the admin role.
    #[serde(default)]
    pub sensitive: bool,
    /// COSI adds no automatic aliases (the definition declares `SkipAutomaticAliases`).
    #[serde(default)]
    pub no_automatic_aliases: bool,
}

/// One registered namespace.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Namespace {
    pub name: String,
    pub description: String,
}

/// Everything a node registers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    pub namespaces: Vec<Namespace>,
    pub types: Vec<Definition>,
}

impl Registry {
    /// The definition of `ty` (the full type, as registered).
    pub fn find(&self, ty: &str) -> Option<&Definition> {
        self.types.iter().find(|d| d.ty == ty)
    }

    /// The namespace named `name`.
    pub fn namespace(&self, name: &str) -> Option<&Namespace> {
        self.namespaces.iter().find(|n| n.name == name)
    }
}

/// The registry, parsed on first use.
pub fn registry() -> &'static Registry {
    /// Listed in [`talm_base::caches::KEPT`].
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        serde_yaml_ng::from_str(DATA).unwrap_or_else(|e| panic!("resources-v1.13.yaml: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_and_namespace_of_talos_is_there() {
        let r = registry();
        assert_eq!((r.types.len(), r.namespaces.len()), (167, 17));
        let mut seen = std::collections::HashSet::new();
        for d in &r.types {
            assert!(seen.insert(d.ty.as_str()), "{} twice", d.ty);
            assert!(
                r.namespace(&d.namespace).is_some(),
                "{}: namespace {} is registered",
                d.ty,
                d.namespace
            );
            let plural = d.ty.split('.').next().unwrap_or_default();
            assert!(
                plural.starts_with(&d.display[..d.display.len() - 1]),
                "{}",
                d.ty
            );
        }
        assert_eq!(r.namespaces[0].name, "meta");
        assert_eq!(r.types[0].ty, "ResourceDefinitions.meta.cosi.dev");
    }

    #[test]
    fn definitions_read_as_talos_declares_them() {
        let r = registry();
        let link = r.find("LinkStatuses.net.talos.dev").unwrap();
        assert_eq!(
            (link.display.as_str(), link.namespace.as_str()),
            ("LinkStatus", "network")
        );
        assert_eq!(link.aliases, ["link", "links"]);
        assert_eq!(
            link.columns[3],
            ("Hw Addr".into(), "{.hardwareAddr}".into())
        );
        assert!(!link.sensitive);
        assert!(r.find("MachineConfigs.config.talos.dev").unwrap().sensitive);
        let mounts = r.find("MountStatuses.runtime.talos.dev").unwrap();
        assert!(mounts.no_automatic_aliases);
        assert_eq!(mounts.aliases, ["mounts"]);
        assert_eq!(
            r.namespace("network-config").unwrap().description,
            "Networking configuration resources."
        );
    }
}
