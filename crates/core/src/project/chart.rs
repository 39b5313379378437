//! The project's Chart.yaml: the talm options it carries (strictCharts, globalOptions,
//! templateOptions, applyOptions), read leniently as the Go talm does.

use std::path::Path;

use anyhow::Result;
use serde::Deserialize;

use talm_base::error::hinted;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Chart {
    pub name: String,
    pub version: String,
    #[serde(rename = "strictCharts")]
    pub strict_charts: bool,
    #[serde(rename = "globalOptions")]
    pub global: GlobalOptions,
    #[serde(rename = "templateOptions")]
    pub template: TemplateOptions,
    #[serde(rename = "applyOptions")]
    pub apply: ApplyOptions,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GlobalOptions {
    pub talosconfig: String,
    pub kubeconfig: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TemplateOptions {
    #[serde(rename = "talosVersion")]
    pub talos_version: String,
    #[serde(rename = "kubernetesVersion")]
    pub kubernetes_version: String,
    #[serde(rename = "withSecrets")]
    pub with_secrets: String,
    #[serde(rename = "valueFiles")]
    pub value_files: Vec<String>,
    pub values: Vec<String>,
    #[serde(rename = "stringValues")]
    pub string_values: Vec<String>,
    #[serde(rename = "fileValues")]
    pub file_values: Vec<String>,
    #[serde(rename = "jsonValues")]
    pub json_values: Vec<String>,
    #[serde(rename = "literalValues")]
    pub literal_values: Vec<String>,
    pub offline: bool,
    pub full: bool,
    /// `--debug` by default.
    pub debug: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ApplyOptions {
    pub timeout: String,
}

impl Chart {
    /// Loads `<root>/Chart.yaml`.
    pub fn load(root: &Path) -> Result<Chart> {
        let path = root.join("Chart.yaml");
        let file = path.display().to_string();
        let text =
            talm_base::input::try_read_text(&path, talm_base::input::Kind::Text).map_err(|e| {
                hinted(
                    format!(
                        "error loading configuration: error reading configuration file: {file}: {}",
                        e.problem
                    ),
                    "run talm inside a project made by `talm init`, or pass --root",
                )
            })?;
        let value = talm_base::yaml::parse(&text, &file)?;
        let chart: Chart = if value.is_null() {
            Chart::default()
        } else {
            serde_yaml_ng::from_value(value).map_err(|e| {
                hinted(
                    format!("error loading configuration: {file}: {e}"),
                    "compare the talm options in Chart.yaml with a fresh `talm init` project",
                )
            })?
        };
        if !chart.apply.timeout.is_empty()
            && talm_base::duration::parse(&chart.apply.timeout).is_err()
        {
            return Err(hinted(
                format!("parsing applyOptions.timeout {:?} from {file}", chart.apply.timeout),
                "applyOptions.timeout in Chart.yaml must be a Go duration literal (e.g. \"30s\", \"2m\", \"1h\")",
            ));
        }
        Ok(chart)
    }

    /// The kubeconfig path relative to the root (`globalOptions.kubeconfig` or `kubeconfig`).
    pub fn kubeconfig(&self) -> String {
        if self.global.kubeconfig.is_empty() {
            "kubeconfig".into()
        } else {
            self.global.kubeconfig.clone()
        }
    }

    /// The talosconfig path relative to the root.
    pub fn talosconfig(&self) -> String {
        if self.global.talosconfig.is_empty() {
            "talosconfig".into()
        } else {
            self.global.talosconfig.clone()
        }
    }

    /// The secrets bundle path relative to the root.
    pub fn secrets(&self) -> String {
        if self.template.with_secrets.is_empty() {
            "secrets.yaml".into()
        } else {
            self.template.with_secrets.clone()
        }
    }
}
