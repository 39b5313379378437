//! Connection flags written before the subcommand, as talosctl and the Go talm take them
//! (`talm --nodes 10.0.0.1 -e 10.0.0.1 template ...`): they are moved behind the subcommand
//! they precede, so that command's own flags receive them. The flags stay declared only on the
//! commands that use them (`talm sim --help` lists none); a command that does not take one
//! refuses it by name.

use std::ffi::OsString;

use anyhow::Result;
use clap::Args;

use crate::error::hinted;

/// The flags `talm` accepts before its subcommand; each is handed on to the subcommand.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Before the subcommand (passed on to it)")]
pub struct Before {
    /// Path to the talosconfig
    #[arg(long, value_name = "PATH")]
    pub talosconfig: Option<String>,
    /// talosconfig context to use
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Target nodes (comma-separated or repeated)
    #[arg(short = 'n', long, value_name = "IP", add = clap_complete::engine::ArgValueCandidates::new(crate::completion::nodes))]
    pub nodes: Vec<String>,
    /// Override the talosconfig endpoints (comma-separated or repeated)
    #[arg(short = 'e', long, value_name = "IP", add = clap_complete::engine::ArgValueCandidates::new(crate::completion::endpoints))]
    pub endpoints: Vec<String>,
    /// Skip verifying the node's certificate (the client certificate is still presented)
    #[arg(long)]
    pub skip_verify: bool,
    /// Project root
    #[arg(long, value_name = "DIR")]
    pub root: Option<String>,
}

/// One flag `talm` takes before the subcommand.
struct Global {
    long: &'static str,
    short: Option<char>,
    takes_value: bool,
}

const GLOBALS: [Global; 6] = [
    Global {
        long: "talosconfig",
        short: None,
        takes_value: true,
    },
    Global {
        long: "context",
        short: None,
        takes_value: true,
    },
    Global {
        long: "nodes",
        short: Some('n'),
        takes_value: true,
    },
    Global {
        long: "endpoints",
        short: Some('e'),
        takes_value: true,
    },
    Global {
        long: "skip-verify",
        short: None,
        takes_value: false,
    },
    Global {
        long: "root",
        short: None,
        takes_value: true,
    },
];

/// A flag found before the subcommand, rewritten in its long form.
struct Found {
    long: &'static str,
    tokens: Vec<OsString>,
}

/// Reads the global flag at `args[i]`; returns it and how many words it took, or `None` when
/// `args[i]` is no global flag (or its value is missing, which clap then reports).
fn global_at(args: &[OsString], i: usize) -> Option<(Found, usize)> {
    let tok = args[i].to_str()?;
    let next = || args.get(i + 1).cloned();
    if let Some(body) = tok.strip_prefix("--") {
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let g = GLOBALS.iter().find(|g| g.long == name)?;
        return Some(match (g.takes_value, inline) {
            (_, Some(_)) => (found(g, vec![tok.into()]), 1),
            (false, None) => (found(g, vec![tok.into()]), 1),
            (true, None) => {
                let v = next()?;
                (found(g, vec![format!("--{}", g.long).into(), v]), 2)
            }
        });
    }
    let rest = tok.strip_prefix('-')?;
    let c = rest.chars().next()?;
    let g = GLOBALS.iter().find(|g| g.short == Some(c))?;
    let attached = &rest[c.len_utf8()..];
    let flag: OsString = format!("--{}", g.long).into();
    if !attached.is_empty() {
        let v = attached.strip_prefix('=').unwrap_or(attached);
        return Some((found(g, vec![flag, v.into()]), 1));
    }
    Some((found(g, vec![flag, next()?]), 2))
}

fn found(g: &Global, tokens: Vec<OsString>) -> Found {
    Found {
        long: g.long,
        tokens,
    }
}

/// The flags before the subcommand and the index of the word after them.
fn globals(args: &[OsString]) -> (Vec<Found>, usize) {
    let mut i = 1;
    let mut found = Vec::new();
    while i < args.len() {
        match global_at(args, i) {
            Some((f, used)) => {
                found.push(f);
                i += used;
            }
            None => break,
        }
    }
    (found, i)
}

/// The word where the subcommand stands (after any flags [`carry`] moves), read before the
/// command line's definition is built: a command can start work it will need (compiling its
/// script) while clap parses. A guess, not a parse: clap still decides what the line means.
pub fn subcommand_word(args: &[OsString]) -> Option<&str> {
    let (_, i) = globals(args);
    args.get(i)?.to_str().filter(|w| !w.starts_with('-'))
}

/// The first value given to the flag `--long` (or `-short`) anywhere on the command line
/// (`--long V`, `--long=V`, `-s V`, `-sV`; the first of a comma-separated list), read as
/// [`subcommand_word`] reads: a guess clap's parse may contradict.
pub fn first_value<'a>(args: &'a [OsString], long: &str, short: Option<char>) -> Option<&'a str> {
    let mut words = args.iter().skip(1).map(|a| a.to_str());
    while let Some(word) = words.next() {
        let Some(word) = word else { continue };
        if word == "--" {
            return None;
        }
        let value = if let Some(body) = word.strip_prefix("--") {
            match body.split_once('=') {
                Some((name, v)) if name == long => Some(v),
                None if body == long => words.next().flatten(),
                _ => None,
            }
        } else {
            let rest = word.strip_prefix('-').unwrap_or_default();
            match (short, rest.chars().next()) {
                (Some(s), Some(c)) if c == s && rest.len() == c.len_utf8() => {
                    words.next().flatten()
                }
                (Some(s), Some(c)) if c == s => Some(rest[c.len_utf8()..].trim_start_matches('=')),
                _ => None,
            }
        };
        if let Some(v) = value {
            return v.split(',').next();
        }
    }
    None
}

/// The command line with the flags before the subcommand moved behind it (behind the last of
/// nested subcommands: `talm -n X image list` → `talm image list --nodes X`). Unchanged when
/// there are none; an error naming the flag when the command does not take it.
pub fn carry(args: Vec<OsString>, cli: &clap::Command) -> Result<Vec<OsString>> {
    let (globals, i) = globals(&args);
    if globals.is_empty() {
        return Ok(args);
    }
    let Some(name) = args.get(i).and_then(|a| a.to_str()) else {
        return Ok(args);
    };
    if name.starts_with('-') {
        // `--help`, `--version` or a mistake: clap tells.
        return Ok(args);
    }
    let flag_names = || {
        let names: Vec<String> = globals.iter().map(|g| format!("--{}", g.long)).collect();
        names.join(", ")
    };
    let Some(mut target) = cli.find_subcommand(name) else {
        return Err(hinted(
            format!(
                "{} given before {name:?}, which is no talm command (a project script takes only its own arguments)",
                flag_names()
            ),
            "see `talm --help`; a project script reads its nodes from its arguments or the project",
        ));
    };
    let mut path = vec![target.get_name().to_string()];
    let mut at = i;
    while let Some(sub) = args
        .get(at + 1)
        .and_then(|a| a.to_str())
        .and_then(|n| target.find_subcommand(n))
    {
        target = sub;
        path.push(sub.get_name().to_string());
        at += 1;
    }
    let shown = format!("talm {}", path.join(" "));
    for g in &globals {
        let takes = target.get_arguments().any(|a| a.get_long() == Some(g.long));
        if !takes {
            return Err(hinted(
                format!("`{shown}` does not take --{}, given before it", g.long),
                format!("flags before the subcommand are passed on to it; `{shown} --help` lists the flags it takes"),
            ));
        }
    }
    let mut out: Vec<OsString> = vec![args[0].clone()];
    out.extend(args[i..=at].iter().cloned());
    for g in globals {
        out.extend(g.tokens);
    }
    out.extend(args[at + 1..].iter().cloned());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_subcommand_word_is_read_past_the_flags_carried() {
        let word = |line: &str| {
            let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
            subcommand_word(&args).map(str::to_string)
        };
        assert_eq!(word("talm template -t x").as_deref(), Some("template"));
        assert_eq!(
            word("talm -n 10.0.0.1 --endpoints=10.0.0.2 --skip-verify apply -f n.yaml").as_deref(),
            Some("apply")
        );
        assert_eq!(
            word("talm --root dir template").as_deref(),
            Some("template")
        );
        assert_eq!(word("talm --version"), None);
        assert_eq!(word("talm -n"), None);
    }

    #[test]
    fn the_first_value_of_a_flag_is_read_in_each_of_its_spellings() {
        let value = |line: &str| {
            let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
            first_value(&args, "file", Some('f')).map(str::to_string)
        };
        for line in [
            "talm apply -f a.yaml -f b.yaml",
            "talm apply --file a.yaml",
            "talm apply --file=a.yaml,b.yaml",
            "talm apply -fa.yaml",
            "talm apply -f=a.yaml",
        ] {
            assert_eq!(value(line).as_deref(), Some("a.yaml"), "{line}");
        }
        assert_eq!(value("talm apply --files x -i"), None);
        assert_eq!(value("talm apply -- -f a.yaml"), None);
        assert_eq!(value("talm apply -f"), None);
    }

    fn carried(line: &str) -> Result<String> {
        let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        let out = carry(args, &crate::cli::Cli::command())?;
        let words: Vec<String> = out
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        Ok(words.join(" "))
    }

    #[test]
    fn flags_before_the_subcommand_move_behind_it() {
        assert_eq!(
            carried("talm --nodes 10.0.0.1 -e 10.0.0.2 template -t t.yaml").unwrap(),
            "talm template --nodes 10.0.0.1 --endpoints 10.0.0.2 -t t.yaml"
        );
        assert_eq!(
            carried("talm -n10.0.0.1 --talosconfig=tc --skip-verify version").unwrap(),
            "talm version --nodes 10.0.0.1 --talosconfig=tc --skip-verify"
        );
        assert_eq!(
            carried("talm -e=a,b image list").unwrap(),
            "talm image list --endpoints a,b"
        );
        assert_eq!(carried("talm template -e x").unwrap(), "talm template -e x");
    }

    #[test]
    fn commands_without_the_flag_refuse_it() {
        let e = carried("talm -e 10.0.0.1 sim").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`talm sim` does not take --endpoints, given before it"
        );
        let e = carried("talm --nodes a nosuch").unwrap_err();
        assert!(e.to_string().contains("no talm command"), "{e}");
        let e = carried("talm --skip-verify gen config c https://x:6443").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`talm gen config` does not take --skip-verify, given before it"
        );
    }
}
