//! Three-way merge of a preset file (Chart.yaml, values.yaml) against the baseline recorded at
//! init, so `init --update` brings in the new preset while the user's own edits survive.

use diffy::{ConflictStyle, MergeOptions};

/// What a merge produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// Every change merged cleanly.
    Clean(String),
    /// Some hunks were changed on both sides. `keep_user` resolves each of them to the user's
    /// lines; `marked` shows them with conflict markers.
    Conflict { keep_user: String, marked: String },
}

const OURS: &str = "<<<<<<< ";
const SPLIT: &str = "=======";
const THEIRS: &str = ">>>>>>> ";

/// Merges the user's file and the new preset file against the old preset file.
pub fn three_way(base: &str, user: &str, preset: &str) -> Merged {
    let mut opts = MergeOptions::new();
    opts.set_conflict_style(ConflictStyle::Merge);
    match opts.merge(base, user, preset) {
        Ok(text) => Merged::Clean(text),
        Err(marked) => Merged::Conflict {
            keep_user: resolve_to_user(&marked),
            marked: marked
                .replace("<<<<<<< ours", "<<<<<<< yours")
                .replace(">>>>>>> theirs", ">>>>>>> new preset"),
        },
    }
}

/// Resolves every conflict block to its first (user) side.
fn resolve_to_user(marked: &str) -> String {
    #[derive(PartialEq)]
    enum State {
        Outside,
        User,
        Preset,
    }
    let mut state = State::Outside;
    let mut out = String::with_capacity(marked.len());
    for line in marked.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        match state {
            State::Outside if body.starts_with(OURS) => state = State::User,
            State::User if body == SPLIT => state = State::Preset,
            State::Preset if body.starts_with(THEIRS) => state = State::Outside,
            State::Preset => {}
            _ => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_pins_and_preset_updates_both_land() {
        let base = "a: 1\nb: 2\nc: 3\nd: 4\n";
        let user = "a: pinned\nb: 2\nc: 3\nd: 4\n";
        let preset = "a: 1\nb: 2\nc: 3\nd: new\ne: 5\n";
        assert_eq!(
            three_way(base, user, preset),
            Merged::Clean("a: pinned\nb: 2\nc: 3\nd: new\ne: 5\n".into())
        );
    }

    #[test]
    fn both_sides_changing_a_line_is_a_conflict_resolved_to_user() {
        let base = "image: v1\nx: 1\n";
        let user = "image: mine\nx: 1\n";
        let preset = "image: v2\nx: 1\n";
        match three_way(base, user, preset) {
            Merged::Conflict { keep_user, marked } => {
                assert_eq!(keep_user, "image: mine\nx: 1\n");
                assert!(marked.contains("<<<<<<< yours"), "{marked}");
                assert!(marked.contains("image: v2"), "{marked}");
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
    }
}
