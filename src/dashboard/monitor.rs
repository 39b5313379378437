//! The Monitor screen as talosctl lays it out: seven rows of CPU and MEM gauges and the CPU,
//! LOAD, PROCS and MEMORY figures (widths 1:2:1:1:2), then the CPU USER/SYSTEM, MEM USED and
//! LOAD AVG graphs (a third of what is left), then NET and DISK sparklines beside the process
//! table (widths 1:3).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Sparkline, Widget};

use super::format;
use super::metrics::Metrics;
use super::model::NodeView;
use super::proctable;
use super::render::{bold, wrap};
use super::summary::columns;

/// Rows of the figures on top.
const TOP_ROWS: u16 = 7;

pub fn render(node: &NodeView, area: Rect, buf: &mut Buffer) {
    let m = &node.metrics;
    let top_h = TOP_ROWS.min(area.height);
    let mut x = area.x;
    let cols = columns(area.width, &[1, 2, 1, 1, 2]);
    let texts = [
        None,
        Some(cpu_text(m)),
        Some(load_text(m)),
        Some(procs_text(m)),
        Some(memory_text(m)),
    ];
    for (w, text) in cols.into_iter().zip(texts) {
        let r = Rect::new(x, area.y, w, top_h);
        match text {
            None => gauges(m, node.polled, r, buf),
            Some(lines) if node.polled => figures(&lines, r, buf),
            Some(_) => figures(&["...".to_string()], r, buf),
        }
        x += w;
    }
    let rest_h = area.height - top_h;
    if rest_h == 0 {
        return;
    }
    let graphs_h = rest_h / 3;
    let mut x = area.x;
    let y = area.y + top_h;
    let s = &m.series;
    let graphs: [(&str, Vec<&[f64]>); 3] = [
        ("CPU USER/SYSTEM", vec![&s.user, &s.system]),
        ("MEM USED", vec![&s.mem]),
        ("LOAD AVG 60sec", vec![&s.loadavg]),
    ];
    for ((title, series), w) in graphs.into_iter().zip(columns(area.width, &[1, 1, 1])) {
        graph(title, &series, Rect::new(x, y, w, graphs_h), buf);
        x += w;
    }
    let bottom = Rect::new(area.x, y + graphs_h, area.width, rest_h - graphs_h);
    let widths = columns(bottom.width, &[1, 3]);
    let half = bottom.height / 2;
    let net = Rect::new(bottom.x, bottom.y, widths[0], half);
    let disk = Rect::new(bottom.x, bottom.y + half, widths[0], bottom.height - half);
    sparklines("NET", [("RX", &s.net_rx), ("TX", &s.net_tx)], net, buf);
    sparklines(
        "DISK",
        [("READ", &s.disk_read), ("WRITE", &s.disk_write)],
        disk,
        buf,
    );
    let table = Rect::new(bottom.x + widths[0], bottom.y, widths[1], bottom.height);
    proctable::render(m, table, buf);
}

fn pct(v: f64) -> String {
    format!("{:5.1}%", v * 100.0)
}

fn cpu_text(m: &Metrics) -> Vec<String> {
    let (ctx, suffix) = format::si(m.ctx_switches());
    vec![
        "CPU".into(),
        format!(
            "User   {}  Nice   {}",
            pct(m.cpu("user")),
            pct(m.cpu("nice"))
        ),
        format!(
            "System {}  IRQ    {}",
            pct(m.cpu("system")),
            pct(m.cpu("irq"))
        ),
        format!(
            "Idle   {}  Iowait {}",
            pct(m.cpu("idle")),
            pct(m.cpu("iowait"))
        ),
        format!("Steal  {}  CtxSw  {ctx:5.1}{suffix}", pct(m.cpu("steal"))),
    ]
}

fn load_text(m: &Metrics) -> Vec<String> {
    let l = m.load.unwrap_or_default();
    vec![
        "LOAD".into(),
        format!("1 min  {:6.2}", l[0]),
        format!("5 min  {:6.2}", l[1]),
        format!("15 min {:6.2}", l[2]),
    ]
}

fn procs_text(m: &Metrics) -> Vec<String> {
    let (created, suffix) = format::si(m.procs_created());
    let s = m.stat.clone().unwrap_or_default();
    vec![
        "PROCS".into(),
        format!("Created {created:5.1}{suffix}"),
        format!("Running {:5}", s.process_running),
        format!("Blocked {:5}", s.process_blocked),
    ]
}

fn memory_text(m: &Metrics) -> Vec<String> {
    let i = m.meminfo.unwrap_or_default();
    let b = |kib: u64| format::bytes(kib << 10);
    let used = i
        .memtotal
        .saturating_sub(i.memfree)
        .saturating_sub(i.cached)
        .saturating_sub(i.buffers);
    vec![
        "MEMORY".into(),
        format!("Total  {:>8}  Buffers {:>8}", b(i.memtotal), b(i.buffers)),
        format!("Used   {:>8}  Cache   {:>8}", b(used), b(i.cached)),
        format!(
            "Free   {:>8}  Avail   {:>8}",
            b(i.memfree),
            b(i.memavailable)
        ),
        format!(
            "Shared {:>8}  Swapped {:>8}",
            b(i.shmem),
            b(i.swaptotal.saturating_sub(i.swapfree))
        ),
    ]
}

/// A figure block: one row down and one column in, the title bold, wrapped to the width.
fn figures(lines: &[String], area: Rect, buf: &mut Buffer) {
    if area.height < 2 || area.width < 2 {
        return;
    }
    let width = usize::from(area.width - 1);
    let mut y = area.y + 1;
    for (i, l) in lines.iter().enumerate() {
        for row in wrap(l, width) {
            if y >= area.bottom() {
                return;
            }
            let style = if i == 0 { bold() } else { Style::new() };
            buf.set_string(area.x + 1, y, row, style);
            y += 1;
        }
    }
}

/// The CPU and MEM gauges: a bar in the contrast colour with the percentage in its middle.
fn gauges(m: &Metrics, polled: bool, area: Rect, buf: &mut Buffer) {
    if area.height < 4 || area.width < 3 {
        return;
    }
    let inner = Rect::new(area.x + 1, area.y + 1, area.width - 2, area.height - 3);
    let per = inner.height / 2;
    let values = if polled {
        [m.cpu("usage"), m.mem_usage()]
    } else {
        [0.0, 0.0]
    };
    for (i, (label, share)) in ["CPU", "MEM"].into_iter().zip(values).enumerate() {
        let y = inner.y + per * i as u16;
        buf.set_string(inner.x, y, label, bold());
        if per < 2 {
            continue;
        }
        let value = (share * 100.0).round().clamp(0.0, 100.0) as u16;
        let w = inner.width;
        let filled = (u32::from(w) * u32::from(value) / 100) as u16;
        let bar = Rect::new(inner.x, y + 1, filled, per - 1);
        buf.set_style(bar, Style::new().bg(Color::Blue));
        let text = format!("{value}%");
        let tx = inner.x + w.saturating_sub(3) / 2;
        buf.set_stringn(
            tx,
            y + 1 + (per - 1) / 2,
            text,
            usize::from(w),
            Style::new(),
        );
    }
}

/// A plot under its centred bold title, red then green lines in braille dots.
fn graph(title: &str, series: &[&[f64]], area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    let len = title.chars().count() as u16;
    let tx = area.x + area.width.saturating_sub(len) / 2;
    buf.set_stringn(tx, area.y, title, usize::from(area.width), bold());
    if area.height < 2 {
        return;
    }
    let plot = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
    let points: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            let skip = s.len().saturating_sub(usize::from(plot.width) * 2);
            s[skip..]
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64, *v))
                .collect()
        })
        .collect();
    let max_y = points
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let max_x = points.iter().map(Vec::len).max().unwrap_or(1).max(2) as f64 - 1.0;
    let colours = [Color::Red, Color::Green];
    let sets: Vec<Dataset> = points
        .iter()
        .zip(colours)
        .map(|(p, c)| {
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(c))
                .data(p)
        })
        .collect();
    Chart::new(sets)
        .x_axis(Axis::default().bounds([0.0, max_x]))
        .y_axis(Axis::default().bounds([0.0, max_y]))
        .render(plot, buf);
}

/// A titled pair of sparklines, each the newest points that fit its width, scaled to the
/// highest of them (talosctl's NET and DISK groups).
fn sparklines(title: &str, lines: [(&str, &[f64]); 2], area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    buf.set_stringn(
        area.x + 1,
        area.y,
        title,
        usize::from(area.width.saturating_sub(1)),
        bold(),
    );
    let rest = area.height - 1;
    let half = rest / 2;
    for (i, (label, series)) in lines.into_iter().enumerate() {
        let y = area.y + 1 + half * i as u16;
        let h = if i == 0 { half } else { rest - half };
        if h == 0 {
            continue;
        }
        buf.set_stringn(area.x, y, label, usize::from(area.width), Style::new());
        let colour = [Color::Red, Color::Green][i];
        let skip = series.len().saturating_sub(usize::from(area.width));
        let data: Vec<u64> = series[skip..].iter().map(|v| *v as u64).collect();
        let data = if data.is_empty() { vec![0] } else { data };
        Sparkline::default()
            .data(&data)
            .style(Style::new().fg(colour))
            .render(Rect::new(area.x, y + 1, area.width, h - 1), buf);
    }
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Modifier};

    use super::super::model::{Sample, Screen, State, Update};
    use super::super::render::frame;
    use crate::proto::machine;

    fn sample(user: f64, idle: f64, ctx: u64, created: u64, cpu_times: [f64; 3]) -> Sample {
        let proc = |pid: i32, state: &str, cpu: f64, rss: u64, exe: &str, args: &str| {
            machine::ProcessInfo {
                pid,
                state: state.into(),
                threads: 1,
                cpu_time: cpu,
                virtual_memory: rss * 4,
                resident_memory: rss,
                command: exe.rsplit('/').next().unwrap().into(),
                executable: exe.into(),
                args: args.into(),
                ..Default::default()
            }
        };
        Sample {
            stat: Some(machine::SystemStat {
                cpu_total: Some(machine::CpuStat {
                    user,
                    system: 10.0,
                    idle,
                    ..Default::default()
                }),
                context_switches: ctx,
                process_created: created,
                process_running: 2,
                process_blocked: 0,
                ..Default::default()
            }),
            meminfo: Some(machine::MemInfo {
                memtotal: 4_000_000,
                memfree: 2_000_000,
                cached: 500_000,
                buffers: 100_000,
                memavailable: 2_600_000,
                shmem: 1_000,
                ..Default::default()
            }),
            load: Some([0.5, 0.25, 0.125]),
            processes: Some(vec![
                proc(1, "S", cpu_times[0], 20_000_000, "/sbin/init", "/sbin/init"),
                proc(
                    812,
                    "R",
                    cpu_times[1],
                    150_000_000,
                    "/usr/local/bin/etcd",
                    "etcd --name cp-1",
                ),
                proc(2, "S", cpu_times[2], 0, "", ""),
            ]),
            ..Sample::default()
        }
    }

    /// The Monitor's text, row by row, without trailing spaces.
    fn text(s: &State, w: u16, h: u16) -> Vec<String> {
        let buf = frame(s, w, h);
        (0..h)
            .map(|y| {
                let row: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
                row.trim_end().to_string()
            })
            .collect()
    }

    #[test]
    fn monitor_screen() {
        let mut s = State::new(["10.5.0.2".to_string()]);
        s.screen = Screen::Monitor;
        let cpus = Sample {
            cpus: Some(super::super::model::Cpus {
                count: 2,
                mhz: 2000.0,
            }),
            ..Sample::default()
        };
        for sample in [
            cpus,
            sample(40.0, 100.0, 10_000, 500, [5.0, 100.0, 0.0]),
            sample(70.0, 160.0, 22_500, 503, [5.5, 112.0, 0.0]),
        ] {
            s.apply(Update::Sample {
                node: 0,
                sample: Box::new(sample),
            });
        }
        let t = text(&s, 140, 24);
        let top = [
            "┐ n/a Talos (n/a): uptime n/a, 2x2GHz, n/a RAM, PROCS n/a, CPU n/a, RAM n/a",
            "",
            " CPU                 CPU                                     LOAD                PROCS               MEMORY",
            "        33%          User    33.3%  Nice     0.0%            1 min    0.50       Created   3.0       Total    4.1 GB  Buffers   102 MB",
            " MEM                 System   0.0%  IRQ      0.0%            5 min    0.25       Running     2       Used     1.4 GB  Cache     512 MB",
            "        35%          Idle    66.7%  Iowait   0.0%            15 min   0.12       Blocked     0       Free     2.0 GB  Avail     2.7 GB",
            "                     Steal    0.0%  CtxSw   12.5k                                                    Shared   1.0 MB  Swapped      0 B",
            "",
            "               CPU USER/SYSTEM                                   MEM USED                                    LOAD AVG 60sec",
        ];
        assert_eq!(t[..9], top);
        // The graphs plot their series in braille dots.
        for row in &t[9..13] {
            assert!(
                row.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)),
                "{row}"
            );
        }
        let bottom = [
            " NET                                PID S CPU% MEM%   VIRT    RES TIME+ THR COMMAND",
            "RX                                  812 R 26.7  3.7 600 MB 150 MB 1m52s   1 /usr/local/bin/etcd --name cp-1",
            "                                      1 S  1.1  0.5  80 MB  20 MB    5s   1 /sbin/init",
            "TX                                    2 S  0.0  0.0    0 B    0 B    0s   1",
            "",
            " DISK",
            "READ",
            "",
            "WRITE",
            "",
            "[10.5.0.2] --- [F1: Summary] --- [Monitor] --- [F3: Resources]──────────────────────────────────────────────────────────────────────────────",
        ];
        assert_eq!(t[13..], bottom);
        // The busiest process is highlighted, the table's titles bold, the gauges' bars shaded.
        let buf = frame(&s, 140, 24);
        assert!(buf[(37, 14)].modifier.contains(Modifier::REVERSED));
        assert!(!buf[(37, 15)].modifier.contains(Modifier::REVERSED));
        assert!(buf[(37, 13)].modifier.contains(Modifier::BOLD));
        assert_eq!(
            (buf[(1, 3)].bg, buf[(7, 3)].bg),
            (Color::Blue, Color::Reset)
        );
    }

    /// NET and DISK draw what the counters grew by: after three polls, bars in the sparklines'
    /// rows, the highest at the top of its row for the biggest growth.
    #[test]
    fn sparklines_plot_the_growth_of_the_counters() {
        let mut s = State::new(["10.5.0.2".to_string()]);
        s.screen = Screen::Monitor;
        for (rx, write) in [(1_000u64, 100u64), (3_000, 140), (4_000, 240)] {
            let sample = Sample {
                net: Some(machine::NetworkDeviceStats {
                    total: Some(machine::NetDev {
                        rx_bytes: rx,
                        tx_bytes: 0,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                disk: Some(machine::DiskStats {
                    total: Some(machine::DiskStat {
                        write_sectors: write,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Sample::default()
            };
            s.apply(Update::Sample {
                node: 0,
                sample: Box::new(sample),
            });
        }
        let series = &s.nodes[0].metrics.series;
        assert_eq!(series.net_rx, [0.0, 2_000.0, 1_000.0]);
        assert_eq!(series.disk_write, [0.0, 40.0, 100.0]);
        // 140 × 24: NET's RX plot is row 15, TX's row 17, DISK's WRITE row 22; a column a poll.
        let t = text(&s, 140, 24);
        let cols = |row: &str| format!("{:<3}", row.chars().take(3).collect::<String>());
        assert!(t[14].starts_with("RX ") && t[16].starts_with("TX"), "{t:?}");
        assert_eq!(cols(&t[15]), " █▄");
        assert_eq!(cols(&t[17]), "   ");
        assert_eq!(cols(&t[22]), " ▃█");
    }

    #[test]
    fn before_the_first_poll_the_figures_wait() {
        let mut s = State::new(["10.5.0.2".to_string()]);
        s.screen = Screen::Monitor;
        let t = text(&s, 140, 16);
        assert_eq!(
            t[2],
            " CPU                 ...                                     ...                 ...                 ..."
        );
        assert_eq!(t[3], "        0%");
        assert_eq!(
            t[10],
            " NET                                PID S CPU% MEM% VIRT RES TIME+ THR COMMAND"
        );
        assert_eq!(t[11], "TX                                  ...");
    }
}
