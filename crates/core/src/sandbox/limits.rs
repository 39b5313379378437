//! The two limit profiles scripts run under: strict for templates and preset logic (code that
//! travels with presets and projects and must finish quickly), generous for playbooks, project
//! scripts, bundled commands and the REPL (raise with `talm run --max-ops N` or `TALM_MAX_OPS`).
//! Also how a limit error reads: script, line, column, the limit and how to raise it.

use std::time::Duration;

use rhai::{Engine, EvalAltResult};

use talm_base::error::Hinted;

/// Which code a profile is for; limit errors name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Templates (Tera and pure Rhai), `_context.rhai` and the stdlib they import.
    Template,
    /// Playbooks (`talm run`), project scripts (`talm NAME`), bundled commands, the REPL.
    Playbook,
}

/// The bounds of one profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    pub profile: Profile,
    /// Rhai operations per script run (0 = no limit).
    pub max_operations: u64,
    /// Nested function calls.
    pub max_call_levels: usize,
    /// Bytes of text in one value (a string, or all strings inside one array or map).
    pub max_string_bytes: usize,
    /// Items in one array (nested arrays included). Rhai measures a collection again after
    /// each change to it, so building one item by item costs the square of its size: these
    /// limits stay moderate to keep a runaway loop short.
    pub max_array_items: usize,
    /// Entries in one map (nested maps included). Rhai measures a map when it goes into or out
    /// of a function call, not on `m[k] = v`: a map filled key by key is bounded by the
    /// operation and memory limits until it next meets a call.
    pub max_map_entries: usize,
    /// Growth of talm's resident memory while one script or render runs, in MiB (None =
    /// unbounded): the backstop for growth the size limits do not see (a map filled key by key).
    pub max_memory_mib: Option<u64>,
    /// Wall-clock time of one Tera render, which has no operation counter (None = unbounded).
    pub render_time: Option<Duration>,
}

/// What `on_progress` hands Rhai when the memory limit is hit.
pub const MEMORY_TOKEN: &str = "memory limit";

// The strict profile is never looser than the generous one.
const _: () = assert!(Limits::TEMPLATE.max_operations < Limits::PLAYBOOK.max_operations);
const _: () = assert!(Limits::TEMPLATE.max_call_levels <= Limits::PLAYBOOK.max_call_levels);

/// The environment variable that sets the operation limit of playbooks, like `--max-ops`.
pub const MAX_OPS_ENV: &str = "TALM_MAX_OPS";

impl Limits {
    /// Templates and preset logic.
    pub const TEMPLATE: Limits = Limits {
        profile: Profile::Template,
        max_operations: 20_000_000,
        max_call_levels: 64,
        max_string_bytes: 16 << 20,
        max_array_items: 100_000,
        // A node's facts nest about 25 entries per resource: room for 10,000 routes.
        max_map_entries: 250_000,
        max_memory_mib: Some(512),
        render_time: Some(Duration::from_secs(10)),
    };

    /// Playbooks, project scripts, bundled commands and the REPL.
    pub const PLAYBOOK: Limits = Limits {
        profile: Profile::Playbook,
        max_operations: 1_000_000_000,
        max_call_levels: 128,
        max_string_bytes: 64 << 20,
        max_array_items: 200_000,
        max_map_entries: 500_000,
        max_memory_mib: Some(4096),
        render_time: None,
    };

    /// The playbook profile with `--max-ops` (or `TALM_MAX_OPS`) applied when given.
    pub fn playbook(max_ops: Option<u64>) -> Limits {
        Limits {
            max_operations: max_ops.unwrap_or(Limits::PLAYBOOK.max_operations),
            ..Limits::PLAYBOOK
        }
    }

    /// `TALM_MAX_OPS` for scripts started without a `--max-ops` flag (project scripts).
    pub fn max_ops_from_env() -> anyhow::Result<Option<u64>> {
        match std::env::var(MAX_OPS_ENV) {
            Err(_) => Ok(None),
            Ok(v) if v.trim().is_empty() => Ok(None),
            Ok(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
                talm_base::error::hinted(
                    format!("{MAX_OPS_ENV}={v:?} is not a number of operations"),
                    format!("set {MAX_OPS_ENV} to a whole number (0 = no limit), or unset it"),
                )
            }),
        }
    }

    /// Applies the limits to an engine.
    pub fn apply(&self, engine: &mut Engine) {
        engine.set_max_expr_depths(256, 256);
        engine.set_max_operations(self.max_operations);
        engine.set_max_call_levels(self.max_call_levels);
        engine.set_max_string_size(self.max_string_bytes);
        engine.set_max_array_size(self.max_array_items);
        engine.set_max_map_size(self.max_map_entries);
    }

    fn who(&self) -> &'static str {
        match self.profile {
            Profile::Template => "templates and preset logic run with strict limits",
            Profile::Playbook => "playbooks run with generous limits",
        }
    }

    fn raise(&self, what: &str) -> String {
        match self.profile {
            Profile::Template => format!(
                "template logic cannot raise its {what}: look for an endless loop, runaway recursion or a value that keeps growing at the position shown"
            ),
            Profile::Playbook if what == "operation limit" => format!(
                "raise it with `talm run --max-ops N` (or {MAX_OPS_ENV}=N; 0 = no limit), or look for an endless loop at the position shown"
            ),
            Profile::Playbook => format!(
                "look for runaway recursion or a value that keeps growing at the position shown (the {what} is fixed)"
            ),
        }
    }

    /// The user-facing error for a limit the script hit, or None for any other error.
    /// `at` is `script:line:col`.
    pub fn explain(&self, err: &EvalAltResult, at: &str) -> Option<Hinted> {
        let (what, limit) = match err {
            EvalAltResult::ErrorTooManyOperations(_) => (
                "operation limit",
                format!("the limit of {} operations", self.max_operations),
            ),
            EvalAltResult::ErrorStackOverflow(_) => (
                "call-depth limit",
                format!(
                    "the call-depth limit of {} nested function calls",
                    self.max_call_levels
                ),
            ),
            EvalAltResult::ErrorTerminated(token, _)
                if token.clone().into_string().ok().as_deref() == Some(MEMORY_TOKEN) =>
            {
                (
                    "memory limit",
                    format!(
                        "the memory limit of {} MiB (growth of talm's memory while it runs)",
                        self.max_memory_mib.unwrap_or_default()
                    ),
                )
            }
            EvalAltResult::ErrorDataTooLarge(kind, _) => {
                let limit = if kind.starts_with("Length of string") {
                    format!("the size limit of {} bytes of text", self.max_string_bytes)
                } else if kind.starts_with("Size of array") {
                    format!("the size limit of {} array items", self.max_array_items)
                } else {
                    format!("the size limit of {} map entries", self.max_map_entries)
                };
                ("size limit", limit)
            }
            _ => return None,
        };
        Some(Hinted {
            message: format!("{at}: the script exceeded {limit} ({})", self.who()),
            hints: vec![self.raise(what)],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn playbook_limits_take_the_override() {
        assert_eq!(Limits::playbook(None), Limits::PLAYBOOK);
        assert_eq!(Limits::playbook(Some(0)).max_operations, 0);
    }

    #[test]
    fn explanations_name_the_limit_and_the_way_out() {
        let e = EvalAltResult::ErrorTooManyOperations(rhai::Position::NONE);
        let t = Limits::TEMPLATE
            .explain(&e, "templates/x.rhai:3:1")
            .unwrap();
        assert_eq!(t.message, "templates/x.rhai:3:1: the script exceeded the limit of 20000000 operations (templates and preset logic run with strict limits)");
        let p = Limits::playbook(Some(5)).explain(&e, "p.rhai:1:1").unwrap();
        assert!(p.message.contains("limit of 5 operations"), "{}", p.message);
        assert!(p.hints[0].contains("--max-ops"), "{:?}", p.hints);
        let s = EvalAltResult::ErrorDataTooLarge("Length of string".into(), rhai::Position::NONE);
        assert!(Limits::PLAYBOOK
            .explain(&s, "p.rhai:1:1")
            .unwrap()
            .message
            .contains("size limit of 67108864 bytes of text"));
        let other = EvalAltResult::ErrorFor(rhai::Position::NONE);
        assert!(Limits::PLAYBOOK.explain(&other, "p.rhai:1:1").is_none());
    }
}
