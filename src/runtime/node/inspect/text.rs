//! Natives that print as talosctl prints: `table(rows)` (Go tabwriter, padding 3),
//! `columnize(lines)`, go-humanize sizes and times, Go time and mode layouts, fixed decimals,
//! hashicorp multierror lists, and error values as text.

use rhai::{Array, Dynamic, Engine, FuncRegistration};

use crate::sandbox::ScriptError;
use talm_base::{humanize, tabwriter};

fn cell(d: &Dynamic) -> String {
    if d.is_string() {
        d.clone().into_string().unwrap_or_default()
    } else if d.is_unit() {
        String::new()
    } else {
        d.to_string()
    }
}

fn number(d: &Dynamic) -> Option<f64> {
    d.as_float()
        .ok()
        .or_else(|| d.as_int().ok().map(|i| i as f64))
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

fn table(rows: Array) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| match r.clone().try_cast::<Array>() {
            Some(cells) => cells.iter().map(cell).collect(),
            None => vec![cell(r)],
        })
        .collect();
    tabwriter::table(&rows)
}

/// hashicorp/go-multierror's text of a list of errors.
pub fn multierror(errs: &[String]) -> String {
    let points: Vec<String> = errs.iter().map(|e| format!("* {e}")).collect();
    let head = if errs.len() == 1 {
        "1 error occurred:".to_string()
    } else {
        format!("{} errors occurred:", errs.len())
    };
    format!("{head}\n\t{}\n\n", points.join("\n\t"))
}

/// talosctl's list of stream errors: `2 errors occurred:` then each error on a line of its own
/// after one space.
pub fn stream_errors(errs: &[String]) -> String {
    let noun = if errs.len() == 1 { "error" } else { "errors" };
    let lines: Vec<String> = errs.iter().map(|e| format!(" {e}")).collect();
    format!("{} {noun} occurred:\n{}", errs.len(), lines.join("\n"))
}

pub fn register(engine: &mut Engine) {
    FuncRegistration::new("to_string")
        .with_comments(["/// The message of an error caught with `try { ... } catch (e) { ... }` (also `${e}` and `e.message`)."])
        .register_into_engine(engine, |e: &mut ScriptError| e.0.message.clone());
    engine.register_fn("to_debug", |e: &mut ScriptError| e.0.message.clone());
    engine.register_get("message", |e: &mut ScriptError| e.0.message.clone());
    FuncRegistration::new("table")
        .with_comments(["/// Rows of cells aligned as talosctl's tables (Go tabwriter: each column as wide as its widest cell plus 3 spaces, the last cell of a row unpadded); a row that is not an array is one cell."])
        .register_into_engine(engine, table);
    FuncRegistration::new("columnize")
        .with_comments(["/// Lines of `|`-separated cells aligned as `talosctl processes` prints them (cells trimmed, joined by two spaces), without a final newline."])
        .register_into_engine(engine, |lines: Array| {
            let lines: Vec<String> = lines.iter().map(cell).collect();
            tabwriter::columnize(&lines)
        });
    FuncRegistration::new("humanize_bytes")
        .with_comments([
            "/// A size as go-humanize `Bytes` prints it (SI): `82 B`, `1.2 kB`, `450 MB`.",
        ])
        .register_into_engine(engine, |n: i64| humanize::bytes(n.max(0) as u64));
    FuncRegistration::new("humanize_ibytes")
        .with_comments([
            "/// A size as go-humanize `IBytes` prints it (binary): `1.2 KiB`, `450 MiB`.",
        ])
        .register_into_engine(engine, |n: i64| humanize::ibytes(n.max(0) as u64));
    FuncRegistration::new("humanize_time")
        .with_comments(["/// How long ago Unix time `secs` was, as go-humanize prints it: `now`, `3 minutes ago`."])
        .register_into_engine(engine, |secs: Dynamic| humanize::relative(number(&secs).unwrap_or_default(), now()));
    FuncRegistration::new("since")
        .with_comments([
            "/// Time since Unix time `secs`, rounded to seconds, as a Go duration: `19m27s`.",
        ])
        .register_into_engine(engine, |secs: Dynamic| {
            humanize::since_rounded(number(&secs).unwrap_or_else(now), now())
        });
    FuncRegistration::new("rfc3339")
        .with_comments(["/// Unix seconds as RFC 3339 in UTC: `2026-08-01T10:00:00Z`."])
        .register_into_engine(engine, |secs: i64| humanize::rfc3339(secs));
    FuncRegistration::new("ls_time")
        .with_comments(["/// A modification time as `talosctl list -l` prints it, in local time: `Jan _2 15:04:05`, or `Jan _2 2006 15:04` when older than 180 days."])
        .register_into_engine(engine, |secs: i64| humanize::ls_time(secs, now()));
    FuncRegistration::new("file_mode")
        .with_comments([
            "/// A Go `os.FileMode` (Talos's `mode`) as text: `drwxr-xr-x`, `Lrwxrwxrwx`.",
        ])
        .register_into_engine(engine, |mode: i64| humanize::file_mode(mode as u32));
    FuncRegistration::new("fixed")
        .with_comments(["/// A number with `places` decimals, as Go's `%.2f` prints it."])
        .register_into_engine(engine, |x: Dynamic, places: i64| {
            let p = places.clamp(0, 17) as usize;
            format!("{:.p$}", number(&x).unwrap_or(f64::NAN))
        });
    FuncRegistration::new("multierror")
        .with_comments(["/// A list of errors as hashicorp/go-multierror prints it (`1 error occurred:\\n\\t* ...\\n\\n`)."])
        .register_into_engine(engine, |errs: Array| multierror(&errs.iter().map(cell).collect::<Vec<_>>()));
    FuncRegistration::new("stream_errors")
        .with_comments(["/// Errors met while reading a stream, as talosctl lists them (`2 errors occurred:` then ` <error>` lines)."])
        .register_into_engine(engine, |errs: Array| stream_errors(&errs.iter().map(cell).collect::<Vec<_>>()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_listed_as_go_multierror() {
        assert_eq!(
            multierror(&["a: x".into()]),
            "1 error occurred:\n\t* a: x\n\n"
        );
        assert_eq!(
            multierror(&["a".into(), "b".into()]),
            "2 errors occurred:\n\t* a\n\t* b\n\n"
        );
        assert_eq!(stream_errors(&["x".into()]), "1 error occurred:\n x");
        assert_eq!(
            stream_errors(&["x".into(), "y".into()]),
            "2 errors occurred:\n x\n y"
        );
    }

    #[test]
    fn rows_of_any_values_become_a_table() {
        let rows: Array = vec![
            Dynamic::from(vec![Dynamic::from("PID"), Dynamic::from("NAME")]),
            Dynamic::from(vec![Dynamic::from(1_i64), Dynamic::from("init")]),
        ];
        assert_eq!(table(rows), "PID   NAME\n1     init\n");
    }
}
