//! The node's system extensions as Talos's `runtime.ExtensionStatusController` lists them from
//! the boot image's extensions config: one ExtensionStatus per layer, ID its index (the
//! squashfs image's name), whether or not the node is configured.

use super::{map, res, s, Ctx};
use crate::cosi::facts::Res;

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    ctx.hw
        .extensions
        .iter()
        .enumerate()
        .map(|(i, name)| {
            res(
                "runtime",
                "ExtensionStatuses.runtime.talos.dev",
                i.to_string(),
                "runtime.ExtensionStatusController",
                map(vec![
                    ("image", s(format!("{i}.sqsh"))),
                    (
                        "metadata",
                        map(vec![
                            ("name", s(name)),
                            ("version", s(&ctx.st.version)),
                            ("author", s("Sidero Labs")),
                            ("description", s(format!("{name} system extension"))),
                            (
                                "compatibility",
                                map(vec![(
                                    "talos",
                                    map(vec![("version", s(format!(">= {}", ctx.st.version)))]),
                                )]),
                            ),
                        ]),
                    ),
                ]),
                1,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{alone, hw};
    use super::*;
    use crate::node::state::State;

    #[test]
    fn one_status_per_extension_of_the_image() {
        let mut hw = hw();
        let st = State::new("v1.13.7", "n1");
        assert!(resources(&alone(&hw, &st)).is_empty());
        hw.extensions = vec!["iscsi-tools".into(), "hello".into()];
        let r = resources(&alone(&hw, &st));
        let ids: Vec<&str> = r.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["0", "1"]);
        assert_eq!(
            talm_base::yaml::to_string(&r[0].spec),
            "image: 0.sqsh\nmetadata:\n    name: iscsi-tools\n    version: v1.13.7\n    author: Sidero Labs\n    description: iscsi-tools system extension\n    compatibility:\n        talos:\n            version: \">= v1.13.7\"\n"
        );
    }
}
