//! `talosctl cgroups` on our side: the cgroup v2 tree read from the tar.gz a node's Copy of
//! `/sys/fs/cgroup` gives, cgroup values as Talos parses them (`max`, unset, fixed-point
//! fractions), names resolved from the CRI (pods, containers) and processes, and the seven
//! built-in presets rendered cell by cell as talosctl's templates print them.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use anyhow::{anyhow, Result};

/// The presets, in talosctl's order.
pub const PRESETS: [&str; 7] = ["cpu", "cpuset", "io", "memory", "process", "psi", "swap"];

/// A cgroup value: a number with `frac` decimal places, `max`, or unset (file or key absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Value {
    val: i64,
    frac: u32,
    max: bool,
    set: bool,
}

impl Value {
    /// Talos's `ParseValue`; text that is not a value reads as unset.
    pub fn parse(s: &str) -> Value {
        if s == "max" {
            return Value {
                max: true,
                set: true,
                ..Default::default()
            };
        }
        let (digits, frac) = match s.split_once('.') {
            Some((l, r)) => (format!("{l}{r}"), r.len() as u32),
            None => (s.to_string(), 0),
        };
        match digits.parse::<i64>() {
            Ok(val) => Value {
                val,
                frac,
                max: false,
                set: true,
            },
            Err(_) => Value::default(),
        }
    }

    /// `unset`, `max`, or the number with its fraction.
    pub fn text(&self) -> String {
        if !self.set {
            return "unset".into();
        }
        if self.max {
            return "max".into();
        }
        let mut s = self.val.to_string();
        if self.frac == 0 {
            return s;
        }
        let f = self.frac as usize;
        if s.len() < f + 1 {
            s = format!("{}{s}", "0".repeat(f + 1 - s.len()));
        }
        format!("{}.{}", &s[..s.len() - f], &s[s.len() - f..])
    }

    pub fn ibytes(&self) -> String {
        if !self.set || self.max || self.frac > 0 {
            return self.text();
        }
        talm_base::humanize::ibytes(self.val.max(0) as u64)
    }

    /// `self / other` in percent with two decimals.
    pub fn divide_by(&self, other: &Value) -> Value {
        match () {
            _ if !self.set || !other.set => Value::default(),
            _ if other.max && !self.max => Value {
                frac: 2,
                set: true,
                ..Default::default()
            },
            _ if self.max && other.max => Value {
                val: 10_000,
                frac: 2,
                set: true,
                max: false,
            },
            _ if other.val == 0 || self.max => Value {
                max: true,
                set: true,
                ..Default::default()
            },
            _ => Value {
                val: (self.val as f64 / other.val as f64 * 100.0 * 100.0).round() as i64,
                frac: 2,
                set: true,
                max: false,
            },
        }
    }

    pub fn usec_to_duration(&self) -> String {
        if !self.set || self.max {
            return self.text();
        }
        let nanos = self.val.max(0) as u64 * 1000;
        talm_base::duration::text(std::time::Duration::from_nanos(nanos))
    }
}

/// One cgroup: its interface files and child cgroups by name.
#[derive(Clone, Debug, Default)]
pub struct Cgroup {
    pub children: BTreeMap<String, Cgroup>,
    files: HashMap<String, String>,
    /// Process names of `cgroup.procs`, resolved.
    pub procs: Vec<String>,
}

impl Cgroup {
    fn file(&self, name: &str) -> &str {
        self.files.get(name).map_or("", String::as_str)
    }

    /// A single-value file (first line).
    pub fn single(&self, name: &str) -> Value {
        self.file(name)
            .lines()
            .next()
            .map_or(Value::default(), Value::parse)
    }

    /// Newline-separated values.
    pub fn lines(&self, name: &str) -> Vec<String> {
        self.file(name).lines().map(str::to_string).collect()
    }

    /// Space-separated values on the first line.
    pub fn spaced(&self, name: &str) -> Vec<Value> {
        self.file(name)
            .lines()
            .next()
            .map(|l| l.split_whitespace().map(Value::parse).collect())
            .unwrap_or_default()
    }

    /// `key value` lines.
    pub fn flat(&self, name: &str, key: &str) -> Value {
        self.file(name)
            .lines()
            .find_map(|l| {
                l.split_once(' ')
                    .filter(|(k, _)| *k == key)
                    .map(|(_, v)| Value::parse(v))
            })
            .unwrap_or_default()
    }

    /// `key sub=value ...` lines, sorted by key.
    pub fn nested(&self, name: &str) -> BTreeMap<String, BTreeMap<String, Value>> {
        let mut out = BTreeMap::new();
        for l in self.file(name).lines() {
            let Some((key, rest)) = l.split_once(' ') else {
                continue;
            };
            let m: BTreeMap<String, Value> = rest
                .split_whitespace()
                .filter_map(|p| {
                    p.split_once('=')
                        .map(|(k, v)| (k.to_string(), Value::parse(v)))
                })
                .collect();
            out.insert(key.to_string(), m);
        }
        out
    }

    fn nested_value(&self, name: &str, key: &str, sub: &str) -> Value {
        self.nested(name)
            .get(key)
            .and_then(|m| m.get(sub))
            .copied()
            .unwrap_or_default()
    }

    /// The raw first line.
    pub fn raw(&self, name: &str) -> String {
        self.file(name).lines().next().unwrap_or("").to_string()
    }
}

/// The tree of a tar.gz of `/sys/fs/cgroup`.
pub fn tree(r: impl Read) -> Result<Cgroup> {
    let mut root = Cgroup::default();
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(r));
    for entry in ar.entries()? {
        let mut entry = entry?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let (dir, file) = name.rsplit_once('/').unwrap_or(("", name.as_str()));
        let mut node = &mut root;
        for part in dir.split('/').filter(|p| !p.is_empty() && *p != ".") {
            node = node.children.entry(part.to_string()).or_default();
        }
        let mut text = String::new();
        entry
            .read_to_string(&mut text)
            .map_err(|e| anyhow!("failed to parse {name:?}: {e}"))?;
        node.files.insert(file.to_string(), text);
    }
    Ok(root)
}

/// Renames children by `names` (pod cgroups `pod<uid>` → `ns/pod`, container IDs → names),
/// resolves process IDs by `procs` and device numbers in `io.stat` by `devices`.
pub fn resolve(
    node: &mut Cgroup,
    names: &HashMap<String, String>,
    procs: &HashMap<String, String>,
    devices: &HashMap<String, String>,
) {
    node.procs = node
        .lines("cgroup.procs")
        .into_iter()
        .map(|p| procs.get(&p).cloned().unwrap_or(p))
        .collect();
    if let Some(io) = node.files.get_mut("io.stat") {
        *io = io
            .lines()
            .map(|l| match l.split_once(' ') {
                Some((dev, rest)) => {
                    format!("{} {rest}\n", devices.get(dev).map_or(dev, String::as_str))
                }
                None => format!("{l}\n"),
            })
            .collect();
    }
    let old = std::mem::take(&mut node.children);
    for (name, mut child) in old {
        resolve(&mut child, names, procs, devices);
        node.children
            .insert(names.get(&name).cloned().unwrap_or(name), child);
    }
}

fn pad(width: usize, s: &str) -> String {
    format!("{s:>width$}")
}

/// Go's `%Ns` of a slice: each element padded, `[a b]`.
fn slice(width: usize, items: &[Value]) -> String {
    let parts: Vec<String> = items.iter().map(|v| pad(width, &v.text())).collect();
    format!("[{}]", parts.join(" "))
}

/// The column names of a preset.
pub fn columns(preset: &str) -> Option<Vec<&'static str>> {
    Some(match preset {
        "cpu" => vec![
            "CpuWeight",
            "CpuNice",
            "CpuMax",
            "CpuUser",
            "User/%",
            "CpuSystem",
            "System/%",
            "Throttled",
        ],
        "cpuset" => vec!["CpuSet", "CpuSet(Eff)", "Mems", "Mems(Eff)"],
        "io" => vec![
            "Bytes Read/Written",
            "ios Read/Write",
            "PressAvg10",
            "PressAvg60",
            "PressTotal",
        ],
        "memory" => vec![
            "MemCurrent",
            "MemPeak",
            "MemLow",
            "Peak/Low",
            "MemHigh",
            "MemMin",
            "Current/Min",
            "MemMax",
        ],
        "process" => vec![
            "PidsCurrent",
            "PidsPeak",
            "PidsMax",
            "Procs",
            "Threads",
            "Processes",
        ],
        "psi" => vec![
            "MemCurrent",
            "MemPsiSome10",
            "MemPsi10",
            "CpuPsi10",
            "IoPsi10",
        ],
        "swap" => vec![
            "SwapCurrent",
            "SwapPeak",
            "SwapHigh",
            "SwapMax",
            "ZswapCurrent",
            "ZswapMax",
            "ZswapWriteback",
        ],
        _ => return None,
    })
}

/// A cgroup's cells for `preset`, as talosctl's preset templates print them.
pub fn cells(preset: &str, n: &Cgroup, parent: Option<&Cgroup>) -> Vec<String> {
    let pct = |v: Value| parent.map_or("-".to_string(), |_| format!("{}%", pad(6, &v.text())));
    match preset {
        "cpu" => {
            let user = n.flat("cpu.stat", "user_usec");
            let sys = n.flat("cpu.stat", "system_usec");
            let p = |k: &str| parent.map(|p| p.flat("cpu.stat", k)).unwrap_or_default();
            vec![
                pad(6, &n.single("cpu.weight").text()),
                pad(6, &n.single("cpu.weight.nice").text()),
                slice(6, &n.spaced("cpu.max")),
                pad(12, &user.usec_to_duration()),
                pct(user.divide_by(&p("user_usec"))),
                pad(12, &sys.usec_to_duration()),
                pct(sys.divide_by(&p("system_usec"))),
                pad(12, &n.flat("cpu.stat", "throttled_usec").usec_to_duration()),
            ]
        }
        "cpuset" => [
            "cpuset.cpus",
            "cpuset.cpus.effective",
            "cpuset.mems",
            "cpuset.mems.effective",
        ]
        .iter()
        .map(|f| pad(12, &n.raw(f)))
        .collect(),
        "io" => {
            let io = n.nested("io.stat");
            let bytes: String = io
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(d, v)| {
                    format!(
                        "{d}: {}/{} ",
                        v.get("rbytes").copied().unwrap_or_default().ibytes(),
                        v.get("wbytes").copied().unwrap_or_default().ibytes()
                    )
                })
                .collect();
            let ios: String = if parent.is_some() {
                io.iter()
                    .map(|(d, v)| {
                        format!(
                            "{d}: {}/{} ",
                            v.get("rios").copied().unwrap_or_default().text(),
                            v.get("wios").copied().unwrap_or_default().text()
                        )
                    })
                    .collect()
            } else {
                String::new()
            };
            vec![
                bytes,
                ios,
                pad(6, &n.nested_value("io.pressure", "some", "avg10").text()),
                pad(6, &n.nested_value("io.pressure", "some", "avg60").text()),
                pad(
                    12,
                    &n.nested_value("io.pressure", "some", "total")
                        .usec_to_duration(),
                ),
            ]
        }
        "memory" => {
            let (cur, peak, low, min) = (
                n.single("memory.current"),
                n.single("memory.peak"),
                n.single("memory.low"),
                n.single("memory.min"),
            );
            vec![
                pad(8, &cur.ibytes()),
                pad(8, &peak.ibytes()),
                pad(8, &low.ibytes()),
                format!("{}%", pad(6, &peak.divide_by(&low).text())),
                pad(8, &n.single("memory.high").ibytes()),
                pad(8, &min.ibytes()),
                format!("{}%", pad(6, &cur.divide_by(&min).text())),
                pad(8, &n.single("memory.max").ibytes()),
            ]
        }
        "process" => {
            let procs = format!("[{}]", n.procs.join(" "));
            vec![
                pad(8, &n.single("pids.current").text()),
                pad(8, &n.single("pids.peak").text()),
                pad(8, &n.single("pids.max").text()),
                format!("{:>7}", n.lines("cgroup.procs").len()),
                format!("{:>7}", n.lines("cgroup.threads").len()),
                if parent.is_some() {
                    procs.chars().take(50).collect()
                } else {
                    String::new()
                },
            ]
        }
        "psi" => vec![
            pad(8, &n.single("memory.current").ibytes()),
            pad(
                6,
                &n.nested_value("memory.pressure", "some", "avg10").text(),
            ),
            pad(
                6,
                &n.nested_value("memory.pressure", "full", "avg10").text(),
            ),
            pad(6, &n.nested_value("cpu.pressure", "full", "avg10").text()),
            pad(6, &n.nested_value("io.pressure", "full", "avg10").text()),
        ],
        "swap" => {
            let mut v: Vec<String> = [
                "memory.swap.current",
                "memory.swap.peak",
                "memory.swap.high",
                "memory.swap.max",
                "memory.zswap.current",
                "memory.zswap.max",
            ]
            .iter()
            .map(|f| pad(8, &n.single(f).ibytes()))
            .collect();
            v.push(n.single("memory.zswap.writeback").text());
            v
        }
        _ => vec![],
    }
}

/// One printed row: the tree-drawn name, the cgroup path, and the preset's cells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub path: String,
    pub cells: Vec<String>,
}

/// The rows of the tree under `root` for `preset`, drawn as talosctl draws them.
pub fn rows(preset: &str, root: &Cgroup) -> Vec<Row> {
    let mut out = Vec::new();
    walk(
        preset,
        ".",
        "",
        root,
        None,
        0,
        &mut Vec::new(),
        false,
        true,
        &mut out,
    );
    out
}

#[allow(clippy::too_many_arguments)]
fn walk(
    preset: &str,
    name: &str,
    path: &str,
    node: &Cgroup,
    parent: Option<&Cgroup>,
    level: usize,
    ended: &mut Vec<usize>,
    last: bool,
    root: bool,
    out: &mut Vec<Row>,
) {
    let mut prefix = String::new();
    for i in 0..level {
        prefix.push_str(if ended.contains(&i) { "    " } else { "│   " });
    }
    let edge = if root {
        ""
    } else if last {
        "└──"
    } else {
        "├──"
    };
    out.push(Row {
        name: format!("{prefix}{edge}{name}"),
        path: if root { "/".into() } else { path.to_string() },
        cells: cells(preset, node, parent),
    });
    let before = ended.len();
    if last {
        ended.push(level);
    }
    let level = if root { level } else { level + 1 };
    let count = node.children.len();
    for (i, (child, c)) in node.children.iter().enumerate() {
        walk(
            preset,
            child,
            &format!("{path}/{child}"),
            c,
            Some(node),
            level,
            ended,
            i + 1 == count,
            false,
            out,
        );
    }
    ended.truncate(before);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_talos() {
        assert_eq!(Value::parse("max").text(), "max");
        assert_eq!(Value::parse("").text(), "unset");
        assert_eq!(Value::parse("0.25").text(), "0.25");
        assert_eq!(
            Value::parse("5").divide_by(&Value::parse("20")).text(),
            "25.00"
        );
        assert_eq!(
            Value::parse("5").divide_by(&Value::parse("max")).text(),
            "0.00"
        );
        assert_eq!(
            Value::parse("5").divide_by(&Value::parse("0")).text(),
            "max"
        );
        assert_eq!(Value::parse("1500000").usec_to_duration(), "1.5s");
        assert_eq!(Value::parse("134217728").ibytes(), "128 MiB");
        assert_eq!(
            slice(6, &[Value::parse("max"), Value::parse("100000")]),
            "[   max 100000]"
        );
    }

    #[test]
    fn tree_rows_are_drawn_like_talosctl() {
        let mut root = Cgroup::default();
        let mut a = Cgroup::default();
        a.files.insert("memory.current".into(), "1048576\n".into());
        a.children.insert("x".into(), Cgroup::default());
        root.children.insert("a".into(), a);
        root.children.insert("b".into(), Cgroup::default());
        let names: Vec<String> = rows("memory", &root).into_iter().map(|r| r.name).collect();
        assert_eq!(names, [".", "├──a", "│   └──x", "└──b"]);
        let r = rows("memory", &root);
        assert_eq!(r[1].cells[0], " 1.0 MiB");
        assert_eq!(r[1].path, "/a");
        assert_eq!(r[0].cells[0], "   unset");
        assert_eq!(rows("cpu", &root)[0].cells[4], "-");
    }
}
