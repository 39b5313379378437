//! The project on disk: root detection, Chart.yaml, values, presets and their baseline, drift,
//! .gitignore, and safe writes.

pub mod chart;
pub mod confine;
pub mod drift;
pub mod exclusive;
pub mod fsutil;
pub mod gitignore;
pub mod install_image;
pub mod kubeconfig;
pub mod lock;
pub mod merge;
pub mod migrate;
pub mod modeline;
pub mod presets;
pub mod root;
pub mod rotation;
pub mod strvals;
pub mod txn;
pub mod values;
