//! Typed flag values: fixed choices as `ValueEnum`s and Go durations, parsed once by clap and
//! serialised for scripts as the text talosctl would print.

use std::time::Duration;

use clap::ValueEnum;
use serde::{Serialize, Serializer};

use talm_base::duration::{self, DurationError};

/// A Go duration flag (`30s`, `1m30s`): kept as given for messages, parsed for use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoDuration {
    pub text: String,
    pub value: Duration,
}

impl GoDuration {
    /// The clap value parser: syntax and range; zero is a per-command question.
    pub fn parse(text: &str) -> Result<GoDuration, DurationError> {
        duration::parse(text).map(|value| GoDuration {
            text: text.to_string(),
            value,
        })
    }

    /// Refuses zero for `flag` with a hint on what to give instead.
    pub fn nonzero(&self, flag: &str, hint: &'static str) -> anyhow::Result<Duration> {
        duration::checked(
            flag,
            &self.text,
            Ok(self.value),
            duration::Zero::Refused(hint),
        )
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// `apply --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApplyMode {
    #[default]
    Auto,
    NoReboot,
    Reboot,
    Staged,
    Try,
}

/// `reboot --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RebootMode {
    #[default]
    Default,
    Powercycle,
    /// Only the reboot itself: no pod stop, no graceful service stop, no unmounting.
    Force,
}

/// `upgrade --reboot-mode`: how the node reboots into the new version (no `force` there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpgradeRebootMode {
    #[default]
    Default,
    /// A full power cycle instead of kexec.
    Powercycle,
}

/// `upgrade --progress`: talosctl's reporter styles (off a terminal both print plain lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Progress {
    Auto,
    Plain,
}

/// `reset --wipe-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WipeMode {
    // The API's default; a reset without a wipe mode (`None`) wipes only the labels it names.
    #[default]
    All,
    SystemDisk,
    UserDisks,
}

/// `-o` of every command whose output is data: table, yaml, json or jsonpath=EXPR (checked by
/// clap, kept as text for the script's `write_out` and `talos::format`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct OutputFormat(pub String);

impl OutputFormat {
    pub fn parse(text: &str) -> Result<OutputFormat, String> {
        crate::talos::resources::Output::parse(text)
            .map(|_| OutputFormat(text.to_string()))
            .map_err(|e| e.to_string())
    }
}

/// `gen config -t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GenOutputType {
    Controlplane,
    Worker,
    Talosconfig,
}

/// A clap error turned into talm's own error when a typed parser explains it (a duration
/// flag: the message names the flag and value, with a hint); other clap errors print as clap's.
pub fn explained(e: &clap::Error) -> Option<anyhow::Error> {
    use clap::error::{ContextKind, ContextValue};
    use std::error::Error as _;
    let cause = e.source()?.downcast_ref::<DurationError>()?;
    let flag = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.split_whitespace().next().unwrap_or(s).to_string(),
        _ => return None,
    };
    let given = match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => return None,
    };
    duration::checked(&flag, &given, Err(cause.clone()), duration::Zero::Allowed).err()
}
