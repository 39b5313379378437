//! The Monitor's process table as talosctl draws it: `PID S CPU% MEM% VIRT RES TIME+ THR
//! COMMAND` in bold, busiest first (CPU time since the previous poll), each column as wide as
//! its widest cell up to talosctl's limit, one space apart, the first row highlighted, `...`
//! before the node has sent its processes.

use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};

use super::format;
use super::metrics::Metrics;
use super::render::bold;
use crate::proto::machine::ProcessInfo;

/// Column titles, right-aligned but `S` (centred) and COMMAND (left), and their widest.
const COLUMNS: [(&str, usize); 9] = [
    ("PID", 7),
    ("S", 1),
    ("CPU%", 6),
    ("MEM%", 6),
    ("VIRT", 8),
    ("RES", 8),
    ("TIME+", 10),
    ("THR", 4),
    ("COMMAND", usize::MAX),
];

/// The command line talosctl shows: the executable's full path in place of `argv[0]` when
/// they name the same program, the command name when there is no executable, anything
/// unprintable as a space.
pub fn command(p: &ProcessInfo) -> String {
    let first = |s: &str| s.split_whitespace().next().unwrap_or("").to_string();
    let args = if p.executable.is_empty() {
        p.command.clone()
    } else {
        let arg0 = first(&p.args);
        let exe = first(&p.executable);
        let base = exe.rsplit('/').next().unwrap_or("");
        if !p.args.is_empty() && arg0 == base {
            p.args.replacen(&arg0, &p.executable, 1)
        } else {
            p.args.clone()
        }
    };
    args.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { ' ' })
        .collect()
}

/// The table's rows (without the header), busiest first.
pub fn rows(m: &Metrics) -> Option<Vec<[String; 9]>> {
    let procs = m.processes.as_ref()?;
    let total_mem = m.meminfo.as_ref().map_or(0, |i| i.memtotal * 1024).max(1);
    let mut weighted = m.cpu("total_weighted");
    if weighted == 0.0 {
        weighted = 1.0;
    }
    let diff = |pid: i32| m.proc_diff.as_ref().and_then(|d| d.get(&pid).copied());
    let mut procs: Vec<&ProcessInfo> = procs.iter().collect();
    if m.proc_diff.is_some() {
        procs.sort_by(|a, b| {
            let (a, b) = (diff(a.pid).unwrap_or(0.0), diff(b.pid).unwrap_or(0.0));
            b.partial_cmp(&a).unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    Some(
        procs
            .into_iter()
            .map(|p| {
                let secs = if p.cpu_time > 0.0 {
                    p.cpu_time as u64
                } else {
                    0
                };
                [
                    p.pid.to_string(),
                    p.state.clone(),
                    format!("{:.1}", diff(p.pid).unwrap_or(0.0) / weighted * 100.0),
                    format!("{:.1}", p.resident_memory as f64 / total_mem as f64 * 100.0),
                    format::bytes(p.virtual_memory),
                    format::bytes(p.resident_memory),
                    talm_base::duration::text(Duration::from_secs(secs)),
                    p.threads.to_string(),
                    command(p),
                ]
            })
            .collect(),
    )
}

pub fn render(m: &Metrics, area: Rect, buf: &mut Buffer) {
    if area.width < 2 || area.height == 0 {
        return;
    }
    let area = Rect::new(area.x + 1, area.y, area.width - 1, area.height);
    let rows = rows(m);
    let cells: Vec<[String; 9]> = rows.clone().unwrap_or_else(|| {
        let mut empty: [String; 9] = Default::default();
        empty[0] = "...".into();
        vec![empty]
    });
    let mut widths: Vec<usize> = COLUMNS.iter().map(|(t, _)| t.len()).collect();
    for row in &cells {
        for (i, c) in row.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    for (w, (_, max)) in widths.iter_mut().zip(COLUMNS) {
        *w = (*w).min(max);
    }
    let line = |row: &[String; 9], centre_first: bool| -> String {
        let mut out = String::new();
        for (i, c) in row.iter().enumerate() {
            let w = widths[i];
            let c: String = c.chars().take(w).collect();
            let cell = match i {
                0 if centre_first => format!("{c:^w$}"),
                1 => format!("{c:^w$}"),
                8 => c,
                _ => format!("{c:>w$}"),
            };
            if i > 0 {
                out.push(' ');
            }
            out.push_str(&cell);
        }
        out
    };
    let titles: [String; 9] = COLUMNS.map(|(t, _)| t.to_string());
    let width = usize::from(area.width);
    buf.set_stringn(area.x, area.y, line(&titles, false), width, bold());
    for (i, row) in cells.iter().enumerate() {
        let y = area.y + 1 + i as u16;
        if y >= area.bottom() {
            break;
        }
        buf.set_stringn(area.x, y, line(row, rows.is_none()), width, Style::new());
        if i == 0 && rows.is_some() {
            let r = Rect::new(area.x, y, area.width, 1);
            buf.set_style(r, Style::new().add_modifier(Modifier::REVERSED));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, exe: &str, args: &str, command_name: &str) -> ProcessInfo {
        ProcessInfo {
            pid,
            executable: exe.into(),
            args: args.into(),
            command: command_name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn command_lines_as_talosctl_writes_them() {
        assert_eq!(
            command(&p(1, "/sbin/init", "init --flag", "init")),
            "/sbin/init --flag"
        );
        assert_eq!(command(&p(2, "", "", "kthreadd")), "kthreadd");
        assert_eq!(
            command(&p(3, "/usr/bin/containerd", "other\tx", "c")),
            "other x"
        );
    }
}
