//! Typed option maps: each native that takes `#{...}` options declares them once with
//! [`options!`] (a struct with named, typed fields). Reading a map refuses a key the function
//! does not know (naming it, the keys that exist and the closest one) and a value of the wrong
//! type, so `#{dryrun: true}` is an error instead of being ignored. `()` counts as absent. A
//! fixed choice is the CLI's own enum ([`Choice`]), read by the names its flag takes.

use std::time::Duration;

use anyhow::Result;
use rhai::{Array, Dynamic, Map};

use crate::error::Hinted;

/// A type an option can have: its value when the key is absent, how it reads a present value,
/// and how errors describe what it expects.
pub trait FromOpt: Sized {
    /// What a valid value looks like, for errors.
    const EXPECTED: &'static str;
    /// The value of an absent key.
    fn absent() -> Self;
    /// The option from a present value, or None when the value has the wrong type.
    fn read(v: &Dynamic) -> Option<Self>;
    /// A more precise error than "must be EXPECTED" for a value `read` refused.
    fn why(_v: &Dynamic, _function: &str, _key: &str) -> Option<anyhow::Error> {
        None
    }
    /// Whether a present value counts as absent: `()` does.
    fn is_absent(v: &Dynamic) -> bool {
        v.is_unit()
    }
}

impl FromOpt for bool {
    const EXPECTED: &'static str = "true or false";
    fn absent() -> Self {
        false
    }
    fn read(v: &Dynamic) -> Option<Self> {
        v.as_bool().ok()
    }
}

impl FromOpt for String {
    const EXPECTED: &'static str = "a string";
    fn absent() -> Self {
        String::new()
    }
    fn read(v: &Dynamic) -> Option<Self> {
        v.clone().into_string().ok()
    }
}

impl FromOpt for Vec<String> {
    const EXPECTED: &'static str = "a list of strings";
    fn absent() -> Self {
        Vec::new()
    }
    fn read(v: &Dynamic) -> Option<Self> {
        v.clone()
            .try_cast::<Array>()?
            .into_iter()
            .map(|d| d.into_string().ok())
            .collect()
    }
}

impl FromOpt for Map {
    const EXPECTED: &'static str = "a map";
    fn absent() -> Self {
        Map::new()
    }
    fn read(v: &Dynamic) -> Option<Self> {
        v.clone().try_cast::<Map>()
    }
}

impl FromOpt for Dynamic {
    const EXPECTED: &'static str = "any value";
    fn absent() -> Self {
        Dynamic::UNIT
    }
    fn read(v: &Dynamic) -> Option<Self> {
        Some(v.clone())
    }
}

impl FromOpt for i64 {
    const EXPECTED: &'static str = "a whole number";
    fn absent() -> Self {
        0
    }
    fn read(v: &Dynamic) -> Option<Self> {
        v.as_int().ok()
    }
}

/// A duration: whole or fractional seconds, or Go duration text (`30s`, `2m`). Every duration
/// option is a deadline, so it must be above zero and within Go's range.
impl FromOpt for Duration {
    const EXPECTED: &'static str = "seconds or Go duration text such as 30s or 2m";
    fn absent() -> Self {
        Duration::ZERO
    }
    fn read(v: &Dynamic) -> Option<Self> {
        deadline(v, "").ok()
    }
    fn why(v: &Dynamic, _function: &str, key: &str) -> Option<anyhow::Error> {
        deadline(v, key).err()
    }
}

fn deadline(v: &Dynamic, key: &str) -> Result<Duration> {
    use talm_base::duration::{self, Zero};
    let zero = Zero::Refused("give a deadline above zero: seconds, or text such as 30s or 2m");
    if let Ok(i) = v.as_int() {
        return duration::checked(key, &i.to_string(), duration::from_seconds(i as f64), zero);
    }
    if let Ok(f) = v.as_float() {
        return duration::checked(key, &f.to_string(), duration::from_seconds(f), zero);
    }
    match v.clone().into_string() {
        Ok(t) => duration::flag(key, &t, zero),
        Err(t) => anyhow::bail!("{key} must be seconds or Go duration text, not {t}"),
    }
}

impl<T: FromOpt> FromOpt for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn absent() -> Self {
        None
    }
    fn read(v: &Dynamic) -> Option<Self> {
        T::read(v).map(Some)
    }
    fn why(v: &Dynamic, function: &str, key: &str) -> Option<anyhow::Error> {
        T::why(v, function, key)
    }
    fn is_absent(v: &Dynamic) -> bool {
        T::is_absent(v)
    }
}

/// A fixed choice of a CLI flag (a clap `ValueEnum`, `crate::runtime::choices`) read from an
/// option map by the names the flag takes, so a script passes `ARGS` values straight through
/// and the runtime reads the same type the CLI parsed. Absent (`()` or `""`), it is the
/// type's default; an unknown name is refused with the names there are.
pub trait Choice: clap::ValueEnum + Default {
    /// What the choice is called in errors: `apply mode`.
    const WHAT: &'static str;
    /// What leaving the option out does, when that differs from every name (a reset without a
    /// wipe mode wipes only STATE and EPHEMERAL): the hint offers it beside the names.
    const ABSENT: Option<&'static str> = None;
}

/// The names of a choice, as the flag takes them.
pub fn names<T: clap::ValueEnum>() -> Vec<String> {
    T::value_variants()
        .iter()
        .filter_map(|v| v.to_possible_value())
        .filter(|p| !p.is_hide_set())
        .map(|p| p.get_name().to_string())
        .collect()
}

/// `a, b or c`.
fn either(names: &[String]) -> String {
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

impl<T: Choice> FromOpt for T {
    const EXPECTED: &'static str = "one of the names its flag takes";
    fn absent() -> Self {
        T::default()
    }
    fn read(v: &Dynamic) -> Option<Self> {
        T::from_str(&v.clone().into_string().ok()?, false).ok()
    }
    fn why(v: &Dynamic, function: &str, key: &str) -> Option<anyhow::Error> {
        let valid = either(&names::<T>());
        let message = match v.clone().into_string() {
            Ok(name) => format!("unknown {} {name:?} for {function}", T::WHAT),
            Err(_) => format!(
                "option {key:?} of {function} must be one of {valid}, not {} ({})",
                shown(v),
                v.type_name()
            ),
        };
        Some(
            Hinted {
                message,
                hints: vec![
                    match T::ABSENT {
                        Some(absent) => format!("use {valid}, or leave {key} out to {absent}"),
                        None => format!("use {valid}"),
                    },
                    format!("`talm help api {}` describes the options", topic(function)),
                ],
            }
            .into(),
        )
    }
    fn is_absent(v: &Dynamic) -> bool {
        v.is_unit() || v.clone().into_string().is_ok_and(|s| s.is_empty())
    }
}

/// The `talm help api` topic of a function as errors name it (`n.apply` → `apply`).
fn topic(function: &str) -> &str {
    function.strip_prefix("n.").unwrap_or(function)
}

fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The known key an unknown one was probably meant to be.
fn closest<'a>(key: &str, keys: &[&'a str]) -> Option<&'a str> {
    let plain = |s: &str| s.to_lowercase().replace(['_', '-'], "");
    keys.iter()
        .copied()
        .map(|k| {
            let d = if plain(k) == plain(key) {
                0
            } else {
                distance(key, k)
            };
            (d, k)
        })
        .filter(|(d, k)| *d <= 2.min(k.len() / 2).max(1))
        .min()
        .map(|(_, k)| k)
}

/// Refuses keys of `m` that `function` does not know.
pub fn check_keys(function: &str, keys: &[&str], m: &Map) -> Result<()> {
    let mut unknown: Vec<&str> = m
        .keys()
        .map(|k| k.as_str())
        .filter(|k| !keys.contains(k))
        .collect();
    unknown.sort();
    let Some(first) = unknown.first() else {
        return Ok(());
    };
    let what = if unknown.len() == 1 {
        format!("unknown option {first:?}")
    } else {
        format!("unknown options {}", quoted(&unknown))
    };
    let mut hints = Vec::new();
    for k in &unknown {
        if let Some(c) = closest(k, keys) {
            hints.push(format!("did you mean {c:?} instead of {k:?}?"));
        }
    }
    hints.push(format!(
        "`talm help api {}` describes the options",
        topic(function)
    ));
    Err(Hinted {
        message: format!(
            "{what} for {function}; the options are: {}",
            keys.join(", ")
        ),
        hints,
    }
    .into())
}

fn quoted(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One option of `function`'s map: absent (or `()`) gives the type's default.
pub fn get<T: FromOpt>(function: &str, m: &Map, key: &str) -> Result<T> {
    match m.get(key) {
        None => Ok(T::absent()),
        Some(v) if T::is_absent(v) => Ok(T::absent()),
        Some(v) => T::read(v).ok_or_else(|| {
            T::why(v, function, key).unwrap_or_else(|| {
                Hinted {
                    message: format!(
                        "option {key:?} of {function} must be {}, not {} ({})",
                        T::EXPECTED,
                        shown(v),
                        v.type_name()
                    ),
                    hints: vec![format!(
                        "`talm help api {}` describes the options",
                        topic(function)
                    )],
                }
                .into()
            })
        }),
    }
}

fn shown(v: &Dynamic) -> String {
    let text = if v.is_string() {
        format!("{:?}", v.to_string())
    } else {
        v.to_string()
    };
    match text.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text,
    }
}

/// Declares the options of a native once: a struct with named, typed fields, its `KEYS`, and
/// `read(&Map)` which refuses unknown keys and wrong types (see the module docs).
macro_rules! options {
    ($(#[$m:meta])* $vis:vis struct $name:ident for $func:literal {
        $($(#[$fm:meta])* $field:ident : $ty:ty),* $(,)?
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default)]
        $vis struct $name { $($(#[$fm])* pub $field: $ty,)* }

        impl $name {
            /// Every key the map may hold.
            #[allow(dead_code)]
            pub const KEYS: &'static [&'static str] = &[$(stringify!($field)),*];

            /// Reads the options from a script's map.
            pub fn read(m: &rhai::Map) -> anyhow::Result<Self> {
                $crate::runtime::opts::check_keys($func, Self::KEYS, m)?;
                Ok(Self {
                    $($field: $crate::runtime::opts::get($func, m, stringify!($field))?,)*
                })
            }
        }
    };
}
pub(crate) use options;

#[cfg(test)]
mod tests {
    use super::*;

    options! {
        /// Test options.
        struct Demo for "n.demo" {
            dry_run: bool,
            mode: String,
            labels: Vec<String>,
            timeout: Option<Duration>,
            limit: Option<i64>,
        }
    }

    fn map(pairs: &[(&str, Dynamic)]) -> Map {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), v.clone()))
            .collect()
    }

    #[test]
    fn typed_options_read_and_default() {
        let d = Demo::read(&map(&[
            ("dry_run", true.into()),
            ("labels", vec![Dynamic::from("STATE")].into()),
            ("timeout", "2m".into()),
            ("mode", Dynamic::UNIT),
        ]))
        .unwrap();
        assert!(d.dry_run);
        assert_eq!(d.mode, "");
        assert_eq!(d.labels, ["STATE"]);
        assert_eq!(d.timeout, Some(Duration::from_secs(120)));
        assert_eq!(d.limit, None);
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_named() {
        let err = Demo::read(&map(&[("dryrun", true.into())])).unwrap_err();
        let text = crate::error::render(&err);
        assert!(text.contains("unknown option \"dryrun\" for n.demo; the options are: dry_run, mode, labels, timeout, limit"), "{text}");
        assert!(
            text.contains("did you mean \"dry_run\" instead of \"dryrun\"?"),
            "{text}"
        );
        assert!(text.contains("`talm help api demo`"), "{text}");
        let err = Demo::read(&map(&[("zzz", 1.into()), ("yyy", 1.into())])).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("unknown options \"yyy\", \"zzz\" for n.demo"));
        let err = Demo::read(&map(&[("dry_run", "yes".into())])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "option \"dry_run\" of n.demo must be true or false, not \"yes\" (string)"
        );
        let err = Demo::read(&map(&[("labels", vec![Dynamic::from(1)].into())])).unwrap_err();
        assert!(
            err.to_string().contains("must be a list of strings"),
            "{err}"
        );
        let err = Demo::read(&map(&[("timeout", "soon".into())])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "timeout \"soon\" is not a duration: time: invalid duration \"soon\""
        );
    }

    #[test]
    fn closest_keys() {
        let keys = ["system_labels", "user_disks", "wipe_mode", "reboot"];
        assert_eq!(closest("system_label", &keys), Some("system_labels"));
        assert_eq!(closest("systemLabels", &keys), Some("system_labels"));
        assert_eq!(closest("wipemode", &keys), Some("wipe_mode"));
        assert_eq!(closest("color", &keys), None);
    }
}
