//! The project's Chart.yaml: the talm options it carries (strictCharts, globalOptions,
//! templateOptions, applyOptions), read leniently as the Go talm does.

use std::path::Path;

use anyhow::Result;
use serde::Deserialize;

use crate::error::hinted;

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
        let text = std::fs::read_to_string(&path).map_err(|e| {
            hinted(
                format!(
                    "error loading configuration: error reading configuration file: {file}: {e}"
                ),
                "run talm inside a project made by `talm init`, or pass --root",
            )
        })?;
        let value = crate::yaml::parse(&text, &file)?;
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
        if !chart.apply.timeout.is_empty() && parse_duration(&chart.apply.timeout).is_none() {
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

/// Parses a Go duration literal (`1m`, `30s`, `1h30m`, `1.5s`, `300ms`) into seconds.
pub fn parse_duration(s: &str) -> Option<f64> {
    let mut rest = s.trim();
    if rest == "0" {
        return Some(0.0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return None;
        }
        let n: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += n * factor;
        rest = &rest[unit_len..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("1m"), Some(60.0));
        assert_eq!(parse_duration("1h30m"), Some(5400.0));
        assert_eq!(parse_duration("300ms"), Some(0.3));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("soon"), None);
    }
}
