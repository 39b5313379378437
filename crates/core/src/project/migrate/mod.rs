//! `talm migrate`: adopting a project made by the Go talm. Detection of the preset and Go
//! versions from embedded digests (`detect`, `digests`), the plan (`plan`), custom template
//! edits as hunks (`edits`, `lcs`), the backup (`backup`) and the staged proof and switch
//! (`switch`). The command's flow is scripts/migrate.rhai over the `migrate::` natives.

pub mod backup;
pub mod detect;
pub mod digests;
pub mod edits;
pub mod lcs;
pub mod plan;
pub mod switch;
