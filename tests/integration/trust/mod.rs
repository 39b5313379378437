//! The trust suite (issue 9): secrets never lost, writes all-or-nothing, values validated where
//! they enter, scripts bounded, node faults named truly, parsers that never panic. One module per
//! subject.

/// `talm template` rewriting `nodes/n.yaml` in place from the golden facts.
pub(crate) const IN_PLACE: &[&str] = &[
    "template",
    "--facts",
    "facts.yaml",
    "-f",
    "nodes/n.yaml",
    "-I",
];
/// `talm template` of the control-plane template from the golden facts.
pub(crate) const RENDER_CP: &[&str] = &[
    "template",
    "--facts",
    "facts.yaml",
    "-t",
    "templates/controlplane.yaml",
];

/// A command line: `base` followed by `extra`.
pub(crate) fn args<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}
mod concurrency;
mod confinement;
mod damage;
mod durations;
mod faults;
mod inputs;
mod kills;
mod properties;
mod sandbox;
mod secrets;
mod special_files;
