//! The declared-resources gate: links and disks a machine config names must exist on the node
//! it is applied to (checked against the node's discovered facts before anything is sent).

use anyhow::Result;
use serde_yaml_ng::Value;

use talm_wire::facts::Facts;

/// One problem found: blocking or not, what, where, and a hint.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub blocker: bool,
    pub reason: String,
    pub source: String,
    pub hint: String,
}

fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("").to_string()
}

fn spec_text(r: &Value, key: &str) -> String {
    match r.get("spec").and_then(|s| s.get(key)) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

struct Disk {
    paths: Vec<String>,
    model: String,
    serial: String,
    wwid: String,
    transport: String,
    rotational: bool,
    size: u64,
    bus_path: String,
}

fn disks(facts: &Facts) -> Vec<Disk> {
    facts
        .resources
        .get("disks")
        .map(|v| v.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|d| {
            spec_text(d, "readonly") != "true"
                && spec_text(d, "cdrom") != "true"
                && !spec_text(d, "bus_path").starts_with("/virtual")
        })
        .map(|d| {
            let mut paths = vec![spec_text(d, "dev_path")];
            if let Some(Value::Sequence(s)) = d.get("spec").and_then(|s| s.get("symlinks")) {
                paths.extend(s.iter().filter_map(|x| x.as_str().map(str::to_string)));
            }
            Disk {
                paths,
                model: spec_text(d, "model"),
                serial: spec_text(d, "serial"),
                wwid: spec_text(d, "wwid"),
                transport: spec_text(d, "transport"),
                rotational: spec_text(d, "rotational") == "true",
                size: spec_text(d, "size").parse().unwrap_or(0),
                bus_path: spec_text(d, "bus_path"),
            }
        })
        .collect()
}

fn listing(mut names: Vec<String>, kind: &str) -> String {
    names.sort();
    names.dedup();
    let n = names.len();
    let shown = if n == 0 {
        "<none>".to_string()
    } else {
        names
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    };
    let more = if n > 10 {
        format!(" ... and {} more", n - 10)
    } else {
        String::new()
    };
    format!("available {kind}s: {shown}{more}")
}

fn glob(pattern: &str, value: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == value,
        Some((head, tail)) => value.starts_with(head) && glob_rest(tail, &value[head.len()..]),
    }
}

fn glob_rest(pattern: &str, value: &str) -> bool {
    if pattern.is_empty() {
        return true;
    }
    (0..=value.len()).any(|i| value.is_char_boundary(i) && glob(pattern, &value[i..]))
}

/// Bytes of `500GB`, `1.5 TB`, `1000000`.
fn bytes(text: &str) -> Option<u64> {
    let t = text.trim().replace(' ', "");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1.0,
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KIB" => 1024.0,
        "MIB" => 1024f64.powi(2),
        "GIB" => 1024f64.powi(3),
        "TIB" => 1024f64.powi(4),
        _ => return None,
    };
    Some((n * mult) as u64)
}

fn size_matches(expr: &str, size: u64) -> bool {
    let e = expr.trim();
    for (op, f) in [
        (">=", u64::ge as fn(&u64, &u64) -> bool),
        ("<=", u64::le),
        ("==", u64::eq),
        (">", u64::gt),
        ("<", u64::lt),
    ] {
        if let Some(rest) = e.strip_prefix(op) {
            return bytes(rest).is_some_and(|b| f(&size, &b));
        }
    }
    bytes(e).is_some_and(|b| size == b)
}

fn selector_matches(sel: &Value, d: &Disk) -> bool {
    let Some(m) = sel.as_mapping() else {
        return false;
    };
    m.iter().all(|(k, v)| {
        let want = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return true,
        };
        match k.as_str().unwrap_or("") {
            "model" => glob(&want, &d.model),
            "serial" => want == d.serial,
            "wwid" => want == d.wwid,
            "busPath" => glob(&want, &d.bus_path),
            "name" => d.paths.first().is_some_and(|p| *p == want),
            "size" => size_matches(&want, d.size),
            "type" => match want.to_ascii_lowercase().as_str() {
                "nvme" => d.transport == "nvme",
                "sd" => d.transport == "mmc",
                "hdd" => d.rotational,
                "ssd" => !d.rotational,
                _ => false,
            },
            _ => true,
        }
    })
}

/// Checks every link and disk `config` references against the node's `facts`.
pub fn check(config: &str, facts: &Facts) -> Result<Vec<Finding>> {
    let link_ids: Vec<String> = facts
        .resources
        .get("links")
        .map(|v| v.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|l| text(l.get("metadata").and_then(|m| m.get("id"))))
        .collect();
    let disks = disks(facts);
    // Read in place from the kept parse (the full config was parsed when it was checked).
    let kept = talm_base::yaml::parsed(config)?;
    let docs: Vec<&Value> = kept.iter().filter(|d| !d.is_null()).collect();
    // Links the config itself creates count as present.
    let created: Vec<String> = docs
        .iter()
        .filter(|d| {
            matches!(
                d.get("kind").and_then(Value::as_str),
                Some(
                    "BondConfig"
                        | "VLANConfig"
                        | "BridgeConfig"
                        | "WireguardConfig"
                        | "DummyLinkConfig"
                        | "LinkAliasConfig"
                )
            )
        })
        .map(|d| text(d.get("name")))
        .collect();
    let mut out = Vec::new();
    let mut link = |name: String, source: String| {
        if !name.is_empty() && !link_ids.contains(&name) && !created.contains(&name) {
            out.push(Finding {
                blocker: true,
                reason: format!("declared link {name:?} not found on target node"),
                source,
                hint: listing(
                    link_ids.iter().filter(|l| *l != "lo").cloned().collect(),
                    "link",
                ),
            });
        }
    };
    let mut disk_refs = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let kind = d.get("kind").and_then(Value::as_str).unwrap_or("");
        if d.get("machine").is_some() {
            let m = &d["machine"];
            let install = m.get("install");
            let disk = text(install.and_then(|x| x.get("disk")));
            if !disk.is_empty() {
                disk_refs.push((disk, format!("doc[{i}].machine.install.disk"), None));
            }
            if let Some(sel) = install
                .and_then(|x| x.get("diskSelector"))
                .filter(|s| s.as_mapping().is_some_and(|m| !m.is_empty()))
            {
                disk_refs.push((
                    String::new(),
                    format!("doc[{i}].machine.install.diskSelector"),
                    Some(sel.clone()),
                ));
            }
            if let Some(Value::Sequence(ifs)) = m.get("network").and_then(|n| n.get("interfaces")) {
                for (j, x) in ifs.iter().enumerate() {
                    link(
                        text(x.get("interface")),
                        format!("doc[{i}].machine.network.interfaces[{j}].interface"),
                    );
                }
            }
        }
        match kind {
            "LinkConfig" | "DHCPv4Config" | "DHCPv6Config" | "EthernetConfig" => {
                link(text(d.get("name")), format!("doc[{i}].name"))
            }
            "BondConfig" | "BridgeConfig" => {
                if let Some(Value::Sequence(ls)) = d.get("links") {
                    for (k, l) in ls.iter().enumerate() {
                        link(text(Some(l)), format!("doc[{i}].links[{k}]"));
                    }
                }
            }
            "VLANConfig" => link(text(d.get("parent")), format!("doc[{i}].parent")),
            "Layer2VIPConfig" | "HCloudVIPConfig" => {
                link(text(d.get("link")), format!("doc[{i}].link"))
            }
            _ => {}
        }
    }
    let describe = |d: &Disk| {
        format!(
            "{} model={} serial={} size={}",
            d.paths[0],
            d.model,
            d.serial,
            talm_base::humanize::pretty_size(d.size)
        )
    };
    for (disk, source, selector) in disk_refs {
        match selector {
            None => {
                if !disks.iter().any(|d| d.paths.contains(&disk)) {
                    out.push(Finding {
                        blocker: true,
                        reason: format!("declared disk {disk:?} not found on target node"),
                        source,
                        hint: listing(disks.iter().map(|d| d.paths[0].clone()).collect(), "disk"),
                    });
                }
            }
            Some(sel) => {
                let hits: Vec<&Disk> = disks.iter().filter(|d| selector_matches(&sel, d)).collect();
                if hits.is_empty() {
                    out.push(Finding {
                        blocker: true,
                        reason: "disk selector matches zero disks on target node".into(),
                        source,
                        hint: format!(
                            "available disks: {}",
                            disks.iter().map(describe).collect::<Vec<_>>().join("; ")
                        ),
                    });
                } else if hits.len() > 1 {
                    out.push(Finding {
                        blocker: false,
                        reason:
                            "disk selector matches multiple disks; install picks the first match"
                                .into(),
                        source,
                        hint: format!(
                            "matched: {}",
                            hits.iter()
                                .map(|d| describe(d))
                                .collect::<Vec<_>>()
                                .join("; ")
                        ),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Findings as printed: `[blocker|warning] reason (source: path)` and a hint line each.
pub fn report(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "[{}] {} (source: {})\n  hint: {}\n",
                if f.blocker { "blocker" } else { "warning" },
                f.reason,
                f.source,
                f.hint
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts::parse(
            "resources:\n  links:\n    - metadata: {id: lo}\n    - metadata: {id: eth0}\n  disks:\n    - spec: {dev_path: /dev/sda, model: Samsung SSD 870, serial: S1, size: 500107862016, rotational: false, symlinks: [/dev/disk/by-id/ata-S1]}\n    - spec: {dev_path: /dev/sdb, model: WDC HDD, serial: W1, size: 4000787030016, rotational: true}\n    - spec: {dev_path: /dev/sr0, cdrom: true}\n",
            "f",
        )
        .unwrap()
    }

    #[test]
    fn links_and_disks_must_exist() {
        let cfg = "machine:\n  install:\n    disk: /dev/nvme0n1\n---\nkind: LinkConfig\nname: eth1\n---\nkind: BondConfig\nname: bond0\nlinks: [eth0]\n---\nkind: VLANConfig\nname: bond0.10\nparent: bond0\n";
        let f = check(cfg, &facts()).unwrap();
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(
            f[0].reason,
            "declared link \"eth1\" not found on target node"
        );
        assert_eq!(f[0].source, "doc[1].name");
        assert_eq!(f[0].hint, "available links: eth0");
        assert_eq!(
            f[1].reason,
            "declared disk \"/dev/nvme0n1\" not found on target node"
        );
        assert_eq!(f[1].hint, "available disks: /dev/sda, /dev/sdb");
        assert!(check(
            "machine:\n  install:\n    disk: /dev/disk/by-id/ata-S1\n",
            &facts()
        )
        .unwrap()
        .is_empty());
    }

    #[test]
    fn selectors_match_like_talos() {
        let one = check(
            "machine:\n  install:\n    diskSelector:\n      size: '>= 1TB'\n",
            &facts(),
        )
        .unwrap();
        assert!(one.is_empty(), "{one:?}");
        let none = check(
            "machine:\n  install:\n    diskSelector:\n      type: nvme\n",
            &facts(),
        )
        .unwrap();
        assert_eq!(
            none[0].reason,
            "disk selector matches zero disks on target node"
        );
        let many = check(
            "machine:\n  install:\n    diskSelector:\n      model: '*'\n",
            &facts(),
        )
        .unwrap();
        assert!(!many[0].blocker && many[0].reason.contains("multiple disks"));
    }
}
