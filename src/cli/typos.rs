//! Help for a mistyped command line: clap's "a similar subcommand exists" tip for a word that is
//! neither a command nor a project script (talm takes any other word as a project script's
//! name, so clap never suggests one itself), and a tip for talosctl habits talm spells
//! differently (`logs -f`: talosctl's follow flag is talm's `-F`, `-f` names node files).

use std::ffi::OsString;

use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::CommandFactory;

use super::Cli;

/// Commands where talosctl's `-f` means follow and talm's `-F` does.
const FOLLOWING: &[&str] = &["logs", "dmesg"];

/// clap's refusal of `talm WORD` with its tip naming the commands or project `scripts` close to
/// `word`; `None` when none is.
pub fn unknown_command(word: &str, scripts: &[String]) -> Option<clap::Error> {
    let mut cmd = Cli::command()
        .external_subcommand_value_parser(None::<clap::builder::ValueParser>)
        .allow_external_subcommands(false);
    for s in scripts {
        // Only on the way to an error, once: clap takes names that live as long as the process.
        let name: &'static str = Box::leak(s.clone().into_boxed_str());
        cmd = cmd.subcommand(clap::Command::new(name).about("a project script"));
    }
    let mut e = cmd.try_get_matches_from_mut(["talm", word]).err()?;
    if e.kind() != ErrorKind::InvalidSubcommand {
        return None;
    }
    // A one- or two-letter alias (`p`) resembles every short word: named only for one as short.
    let close: Vec<String> = match e.get(ContextKind::SuggestedSubcommand) {
        Some(ContextValue::Strings(s)) => s
            .iter()
            .filter(|c| c.len() > 2 || word.len() <= 2)
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    if close.is_empty() {
        return None;
    }
    e.insert(
        ContextKind::SuggestedSubcommand,
        ContextValue::Strings(close),
    );
    Some(e)
}

/// The tip a refused command line gets for a talosctl habit it shows, if any.
pub fn habit(args: &[OsString]) -> Option<&'static str> {
    let word = super::subcommand_word(args)?;
    let dash_f = args.iter().skip(1).any(|a| a == "-f");
    (FOLLOWING.contains(&word) && dash_f).then_some(
        "talosctl's -f (follow) is -F (--follow) in talm; talm's -f names node files (--file)",
    )
}

/// `e` with `tip` among its tips.
pub fn with_tip(mut e: clap::Error, tip: &'static str) -> clap::Error {
    let mut tips = match e.get(ContextKind::Suggested) {
        Some(ContextValue::StyledStrs(t)) => t.clone(),
        _ => Vec::new(),
    };
    tips.push(StyledStr::from(tip));
    e.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn a_close_word_gets_the_command_or_script_it_resembles() {
        let e = unknown_command("aply", &[]).expect("apply is close");
        assert_eq!(
            e.get(ContextKind::SuggestedSubcommand),
            Some(&ContextValue::Strings(vec!["apply".into()]))
        );
        let e = unknown_command("helo", &["hello".into()]).expect("the project's script");
        assert_eq!(
            e.get(ContextKind::SuggestedSubcommand),
            Some(&ContextValue::Strings(vec![
                "health".into(),
                "help".into(),
                "hello".into()
            ]))
        );
        assert!(unknown_command("zzzzzzzz", &[]).is_none());
    }

    #[test]
    fn dash_f_on_logs_is_a_talosctl_habit() {
        assert!(habit(&words("talm logs kubelet -f")).is_some());
        assert!(habit(&words("talm -n 10.0.0.1 dmesg -f")).is_some());
        assert!(habit(&words("talm logs kubelet -F")).is_none());
        assert!(habit(&words("talm apply -f")).is_none());
    }
}
