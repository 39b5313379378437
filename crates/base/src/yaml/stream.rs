//! The documents of a YAML stream, parsed once per text: applying a node's config reads the
//! same few texts (the rendered config, the node file, the running config) in several steps
//! (declared resources, drift, node body merge, redaction), and a fleet does so per node on
//! many threads. Each thread keeps the last streams it parsed, by their whole text: one node's
//! command runs on one thread, so its steps find their texts however many other nodes' commands
//! run beside it (a process-wide memory of a few was emptied by them between two steps).

use std::sync::Arc;

use serde_yaml_ng::Value;

use crate::caches::memo::Memo;

/// Streams kept per thread: the texts one node's command reads again (its patch, its node
/// file, its whole config); a step reads its own text again within the next two parses. Each
/// kept whole config is a tree of some hundred KiB, and a fleet runs 32 commands at once.
const KEPT: usize = 3;

thread_local! {
    /// Listed in [`crate::caches::KEPT`].
    static PARSED: Memo<String, Arc<Vec<Value>>> = const { Memo::new(KEPT) };
}

/// The kept parse of `text` (parsed now if it is not kept), shared: a reader that only needs
/// to know the text parses, or only reads it, does not copy it.
pub fn parsed(text: &str) -> Result<Arc<Vec<Value>>, serde_yaml_ng::Error> {
    let parse = |text: &str| super::read_stream(text).map(Arc::new);
    if text.len() > super::KEPT_TEXT_MAX {
        return parse(text);
    }
    PARSED.with(|kept| kept.get_or_try(text.to_string(), |text| parse(text)))
}

/// Every document of `text` in order, empty ones as `Value::Null`.
pub fn stream(text: &str) -> Result<Vec<Value>, serde_yaml_ng::Error> {
    Ok(parsed(text)?.as_ref().clone())
}

/// The documents of `text` that are not empty.
pub fn documents(text: &str) -> Result<Vec<Value>, serde_yaml_ng::Error> {
    let mut docs = stream(text)?;
    docs.retain(|d| !d.is_null());
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_in_order_and_errors_every_time() {
        let text = "a: 1\n---\n---\nb: [2]\n";
        assert_eq!(stream(text).unwrap().len(), 3);
        let docs = documents(text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1]["b"][0].as_i64(), Some(2));
        // A kept result is a copy: changing it leaves the next reader's alone.
        let mut mine = documents(text).unwrap();
        mine[0]["a"] = 5.into();
        assert_eq!(documents(text).unwrap()[0]["a"].as_i64(), Some(1));
        for _ in 0..2 {
            let e = stream("a: [b\n").unwrap_err();
            assert!(e.location().is_some(), "{e}");
        }
        assert_eq!(documents("").unwrap().len(), 0);
    }

    #[test]
    fn a_threads_streams_outlive_other_threads_parses() {
        // A node's command between two of its steps, while 32 other nodes' commands parse
        // their own texts on their threads.
        let mine = "node: mine\n".to_string();
        parsed(&mine).unwrap();
        std::thread::scope(|s| {
            for t in 0..32 {
                s.spawn(move || {
                    for i in 0..KEPT * 2 {
                        parsed(&format!("node: n{t}-{i}\n")).unwrap();
                    }
                });
            }
        });
        assert!(PARSED.with(|kept| kept.holds(&mine)));
        // Its own next texts do push it out: what a thread keeps stays small.
        for i in 0..KEPT {
            parsed(&format!("step: {i}\n")).unwrap();
        }
        assert!(!PARSED.with(|kept| kept.holds(&mine)));
    }

    #[test]
    fn large_texts_are_parsed_but_not_kept() {
        let small = "kept: stream\n".to_string();
        let large = format!("big: \"{}\"\n", "x".repeat(super::super::KEPT_TEXT_MAX));
        assert_eq!(parsed(&small).unwrap().len(), 1);
        assert!(PARSED.with(|kept| kept.holds(&small)));
        let got = parsed(&large).unwrap();
        assert_eq!(
            got[0]["big"].as_str().unwrap().len(),
            super::super::KEPT_TEXT_MAX
        );
        assert!(!PARSED.with(|kept| kept.holds(&large)));
    }
}
