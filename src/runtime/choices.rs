//! The CLI's fixed choices (`crate::cli::values`) as the runtime reads them from option maps and
//! sends them to nodes: one type on both sides. Scripts pass the `ARGS` values (serialised by
//! the same names) straight through; a native reads them as an option of the enum's type
//! ([`Choice`]) and turns them into the Talos API's enum with `From`.

use crate::cli::values::{ApplyMode, RebootMode, UpgradeRebootMode, WipeMode};
use crate::proto::machine::upgrade_request;
use crate::proto::machine::{apply_configuration_request, reboot_request, reset_request};
use crate::runtime::opts::Choice;

impl Choice for ApplyMode {
    const WHAT: &'static str = "apply mode";
}

impl Choice for RebootMode {
    const WHAT: &'static str = "reboot mode";
}

impl Choice for UpgradeRebootMode {
    const WHAT: &'static str = "reboot mode";
}

impl Choice for WipeMode {
    const WHAT: &'static str = "wipe mode";
    const ABSENT: Option<&'static str> = Some("wipe only STATE and EPHEMERAL");
}

impl From<ApplyMode> for apply_configuration_request::Mode {
    fn from(m: ApplyMode) -> Self {
        match m {
            ApplyMode::Auto => Self::Auto,
            ApplyMode::NoReboot => Self::NoReboot,
            ApplyMode::Reboot => Self::Reboot,
            ApplyMode::Staged => Self::Staged,
            ApplyMode::Try => Self::Try,
        }
    }
}

/// The mode a node reports it applied a config in.
impl From<apply_configuration_request::Mode> for ApplyMode {
    fn from(m: apply_configuration_request::Mode) -> Self {
        use apply_configuration_request::Mode;
        match m {
            Mode::Auto => ApplyMode::Auto,
            Mode::NoReboot => ApplyMode::NoReboot,
            Mode::Reboot => ApplyMode::Reboot,
            Mode::Staged => ApplyMode::Staged,
            Mode::Try => ApplyMode::Try,
        }
    }
}

impl From<RebootMode> for reboot_request::Mode {
    fn from(m: RebootMode) -> Self {
        match m {
            RebootMode::Default => Self::Default,
            RebootMode::Powercycle => Self::Powercycle,
            RebootMode::Force => Self::Force,
        }
    }
}

impl From<UpgradeRebootMode> for upgrade_request::RebootMode {
    fn from(m: UpgradeRebootMode) -> Self {
        match m {
            UpgradeRebootMode::Default => Self::Default,
            UpgradeRebootMode::Powercycle => Self::Powercycle,
        }
    }
}

impl From<WipeMode> for reset_request::WipeMode {
    fn from(m: WipeMode) -> Self {
        match m {
            WipeMode::All => Self::All,
            WipeMode::SystemDisk => Self::SystemDisk,
            WipeMode::UserDisks => Self::UserDisks,
        }
    }
}

/// The name a choice has on the command line (and in `ARGS`).
pub fn name<T: clap::ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::opts::{names, FromOpt};
    use clap::ValueEnum;
    use rhai::{Dynamic, Map};

    crate::runtime::opts::options! {
        /// Every choice as an option.
        struct Modes for "n.modes" {
            apply: ApplyMode,
            reboot: RebootMode,
            upgrade: UpgradeRebootMode,
            wipe: Option<WipeMode>,
        }
    }

    fn modes(key: &str, v: Dynamic) -> anyhow::Result<Modes> {
        let mut m = Map::new();
        m.insert(key.into(), v);
        Modes::read(&m)
    }

    /// Each value's name in `ARGS` (serde) is the one its flag takes (clap) and the one the
    /// option reads back.
    fn same_names<T: Choice + serde::Serialize + PartialEq + std::fmt::Debug>() {
        for v in T::value_variants() {
            let serialised = serde_json::to_value(v).unwrap();
            assert_eq!(serialised.as_str(), Some(name(v).as_str()), "{v:?}");
            assert_eq!(T::read(&Dynamic::from(name(v))).as_ref(), Some(v));
        }
    }

    #[test]
    fn args_names_are_the_flags_names_and_read_back() {
        same_names::<ApplyMode>();
        same_names::<RebootMode>();
        same_names::<UpgradeRebootMode>();
        same_names::<WipeMode>();
    }

    #[test]
    fn every_cli_value_maps_to_its_api_value() {
        use apply_configuration_request::Mode;
        let apply: Vec<_> = ApplyMode::value_variants()
            .iter()
            .map(|&m| (name(&m), Mode::from(m).as_str_name()))
            .collect();
        assert_eq!(
            apply,
            [
                ("auto".into(), "AUTO"),
                ("no-reboot".into(), "NO_REBOOT"),
                ("reboot".into(), "REBOOT"),
                ("staged".into(), "STAGED"),
                ("try".into(), "TRY"),
            ]
        );
        for &m in ApplyMode::value_variants() {
            assert_eq!(
                ApplyMode::from(Mode::from(m)),
                m,
                "the reply's mode reads back"
            );
        }
        let reboot: Vec<_> = RebootMode::value_variants()
            .iter()
            .map(|&m| (name(&m), reboot_request::Mode::from(m).as_str_name()))
            .collect();
        assert_eq!(
            reboot,
            [
                ("default".into(), "DEFAULT"),
                ("powercycle".into(), "POWERCYCLE"),
                ("force".into(), "FORCE"),
            ]
        );
        let upgrade: Vec<_> = UpgradeRebootMode::value_variants()
            .iter()
            .map(|&m| (name(&m), upgrade_request::RebootMode::from(m).as_str_name()))
            .collect();
        assert_eq!(
            upgrade,
            [
                ("default".into(), "DEFAULT"),
                ("powercycle".into(), "POWERCYCLE"),
            ]
        );
        let wipe: Vec<_> = WipeMode::value_variants()
            .iter()
            .map(|&m| (name(&m), reset_request::WipeMode::from(m).as_str_name()))
            .collect();
        assert_eq!(
            wipe,
            [
                ("all".into(), "ALL"),
                ("system-disk".into(), "SYSTEM_DISK"),
                ("user-disks".into(), "USER_DISKS"),
            ]
        );
    }

    #[test]
    fn absent_choices_are_the_defaults() {
        for absent in [Dynamic::UNIT, Dynamic::from("")] {
            let m = modes("wipe", absent.clone()).unwrap();
            assert_eq!(m.wipe, None);
            let m = modes("apply", absent).unwrap();
            assert_eq!(m.apply, ApplyMode::Auto);
            assert_eq!(m.reboot, RebootMode::Default);
            assert_eq!(m.upgrade, UpgradeRebootMode::Default);
        }
        let m = modes("wipe", "system-disk".into()).unwrap();
        assert_eq!(m.wipe, Some(WipeMode::SystemDisk));
    }

    #[test]
    fn an_unknown_choice_is_refused_naming_the_valid_ones() {
        let err = modes("wipe", "everything".into()).unwrap_err();
        assert_eq!(
            crate::error::render(&err),
            "Error: unknown wipe mode \"everything\" for n.modes\n\
             hint: use all, system-disk or user-disks, or leave wipe out to wipe only STATE and \
             EPHEMERAL\n\
             hint: `talm help api modes` describes the options\n"
        );
        let err = modes("apply", "sometimes".into()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown apply mode \"sometimes\" for n.modes"
        );
        assert!(
            crate::error::render(&err).contains("hint: use auto, no-reboot, reboot, staged or try")
        );
        let err = modes("reboot", 1.into()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "option \"reboot\" of n.modes must be one of default, powercycle or force, not 1 (i64)"
        );
        assert_eq!(names::<UpgradeRebootMode>(), ["default", "powercycle"]);
    }
}
