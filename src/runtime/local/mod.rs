//! The natives that work on local files: the project (`project::`, `file::`), its secrets,
//! presets and renders, machine configs, kubeconfig merges, migrations, the CA rotation's
//! journal, and what playbooks build on (`talm([...])`, `template_file`, `use_project`).

pub(crate) mod config;
pub(crate) mod kubeconfig;
pub(crate) mod migrate;
pub mod playbook;
pub(crate) mod preset;
pub(crate) mod project;
pub(crate) mod render;
pub(crate) mod rotate_journal;
pub(crate) mod secrets;
