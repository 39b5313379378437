//! Drawing the dashboard: a pure function from the state to a ratatui buffer. The top line is
//! talosctl's header (`┐ <hostname> Talos (<version>): uptime ..., PROCS n, CPU x%, RAM y%`,
//! its spinner turning with the ticks), then the screen's body, then talosctl's footer
//! (`[node-a | node-b] --- [Summary] --- [F2: Monitor] --- [F3: Resources]` on a rule) with
//! the selected node and screen in red.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::format::{self, NOT_AVAILABLE};
use super::model::{NodeView, Screen, State};
use super::panels;

/// A whole frame of `width` × `height` cells.
pub fn frame(state: &State, width: u16, height: u16) -> Buffer {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    render(state, area, &mut buf);
    buf
}

/// Draws `state` into `area` of `buf`.
pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let row = |y: u16| Rect::new(area.x, y, area.width, 1);
    header(state, row(area.y), buf);
    if area.height < 2 {
        return;
    }
    footer(state, row(area.bottom() - 1), buf);
    let body = Rect::new(area.x, area.y + 1, area.width, area.height - 2);
    match (state.screen, state.node()) {
        (_, None) => {}
        (Screen::Summary, Some(node)) => super::summary::render(node, body, buf),
        (Screen::Monitor, Some(node)) => super::monitor::render(node, body, buf),
        (Screen::Resources, Some(_)) => super::explorer_view::render(&state.explorer, body, buf),
    }
}

pub(super) fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

fn or_na(v: Option<String>) -> String {
    v.unwrap_or_else(|| NOT_AVAILABLE.to_string())
}

/// talosctl's spinner, a quarter turn a tick.
const SPINNER: [&str; 4] = ["┐", "┘", "└", "┌"];

/// The header's fields as talosctl fills them: hostname, OS name and version from the
/// node's HostnameStatus and Version resources, the rest from the polled stats.
pub fn header_text(node: &NodeView, now: u64) -> (String, String) {
    let r = &node.resources;
    let hostname = panels::hostname(r).unwrap_or_else(|| NOT_AVAILABLE.into());
    let field = |k: &str| {
        r.version
            .as_ref()
            .and_then(|v| v.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let name = field("name")
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "Talos".into());
    let rest = format!(
        " {name} ({}): uptime {}, {}, {} RAM, PROCS {}, CPU {}, RAM {}",
        or_na(field("version")),
        or_na(node.boot_time.map(|b| format::uptime(now, b))),
        or_na(node.cpus.as_ref().map(format::cpus)),
        or_na(node.memory.map(|m| format::ibytes(m.total_kib << 10))),
        or_na(node.procs.map(|p| p.to_string())),
        or_na(node.cpu_share().map(format::percent)),
        or_na(node.memory_usage().map(format::percent)),
    );
    (hostname, rest)
}

fn header(state: &State, area: Rect, buf: &mut Buffer) {
    let Some(n) = state.node() else { return };
    let (hostname, rest) = header_text(n, state.now);
    let line = Line::from(vec![
        Span::styled(
            SPINNER[state.ticks % SPINNER.len()],
            Style::new().fg(Color::Green),
        ),
        Span::raw(" "),
        Span::styled(hostname, bold().fg(Color::Yellow)),
        Span::raw(rest),
    ]);
    buf.set_line(area.x, area.y, &line, area.width);
}

/// A rule across `area`'s first row, with ` label ` in yellow from the third cell when given
/// (talosctl's horizontal line).
pub(super) fn rule(label: Option<&str>, area: Rect, buf: &mut Buffer) {
    let line = "─".repeat(usize::from(area.width));
    buf.set_string(area.x, area.y, line, Style::new());
    if let Some(l) = label {
        let text = format!(" {l} ");
        buf.set_stringn(
            area.x + 2,
            area.y,
            text,
            usize::from(area.width.saturating_sub(2)),
            Style::new().fg(Color::Yellow),
        );
    }
}

fn footer(state: &State, area: Rect, buf: &mut Buffer) {
    rule(None, area, buf);
    let red = Style::new().fg(Color::Red);
    let mut spans = vec![Span::raw("[")];
    for (i, n) in state.nodes.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(" | "));
        }
        let style = if i == state.selected {
            red
        } else {
            Style::new()
        };
        spans.push(Span::styled(n.name.clone(), style));
    }
    spans.push(Span::raw("] --- "));
    for (i, s) in Screen::ALL.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(" --- "));
        }
        if *s == state.screen {
            spans.extend([Span::raw("["), Span::styled(s.title(), red), Span::raw("]")]);
        } else {
            spans.push(Span::raw(format!("[{}: {}]", s.key(), s.title())));
        }
    }
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
}

/// `text` cut into rows of `width` characters, as a wrapping text view shows it.
pub(super) fn wrap(text: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() || width == 0 {
        return vec![String::new()];
    }
    chars.chunks(width).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::super::model::{CpuTimes, Cpus, Health, Memory, Sample, Service, Update};
    use super::super::panels::Resources;
    use super::*;

    /// The text a `width` × `height` terminal shows for `state`.
    pub fn screen(state: &State, width: u16, height: u16) -> Vec<String> {
        let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
        t.draw(|f| render(state, f.area(), f.buffer_mut())).unwrap();
        let buf = t.backend().buffer();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect()
    }

    fn yaml(s: &str) -> serde_yaml_ng::Value {
        serde_yaml_ng::from_str(s).unwrap()
    }

    /// A control plane polled twice, with its resources and kernel log.
    pub fn state() -> State {
        let mut s = State::new(["10.5.0.2".to_string(), "10.5.0.3".to_string()]);
        s.now = 1_000_000;
        let resources = Resources {
            system_information: Some(yaml("uuid: 4c4c4544-0042-3010-8052-b4c04f4e3232")),
            cluster_info: Some(yaml("clusterName: demo")),
            members: Some(vec!["cp-1".into(), "w-1".into()]),
            machine_status: Some(yaml("stage: running\nstatus:\n  ready: true")),
            machine_type: Some(yaml("controlplane")),
            kubelet_spec: Some(yaml("image: ghcr.io/siderolabs/kubelet:v1.35.0")),
            hostname: Some(yaml("hostname: cp-1")),
            version: Some(yaml("version: v1.13.7\nname: Talos")),
            addresses: vec![("routed".into(), yaml("addresses: [10.5.0.2/24]"))],
            routes: vec![yaml("dst: \"\"\ngateway: 10.5.0.1")],
            resolvers: Some(yaml("dnsServers: [1.1.1.1]")),
            time_servers: Some(yaml("timeServers: [time.cloudflare.com]")),
            ..Resources::default()
        };
        let base = Sample {
            boot_time: Some(1_000_000 - 3_725),
            cpu: Some(CpuTimes {
                busy: 100.0,
                idle: 900.0,
            }),
            cpus: Some(Cpus {
                count: 4,
                mhz: 2445.406,
            }),
            memory: Some(Memory {
                total_kib: 8 << 20,
                used_kib: 2 << 20,
            }),
            load: Some([0.42, 0.37, 0.3]),
            services: Some(vec![Service {
                id: "kubelet".into(),
                state: "Running".into(),
                health: Health::Ok,
                message: String::new(),
            }]),
            procs: Some(37),
            resources: Some(resources),
            ..Sample::default()
        };
        let mut next = base.clone();
        next.cpu = Some(CpuTimes {
            busy: 125.0,
            idle: 975.0,
        });
        for sample in [base, next] {
            s.apply(Update::Sample {
                node: 0,
                sample: Box::new(sample),
            });
        }
        s.apply(Update::Kernel {
            node: 0,
            result: Ok((1..=6)
                .map(|i| format!("[    {i}.000000] kernel line {i}"))
                .collect()),
        });
        s
    }

    #[test]
    fn summary_screen() {
        let s = state();
        let want = [
            "┐ cp-1 Talos (v1.13.7): uptime 1h2m5s, 4x2.44GHz, 8.0 GiB RAM, PROCS 37, CPU 25.0%, RAM 25.0%",
            "",
            " UUID       4c4c4544-0042-3010-8052-b4c04f4e3232     TYPE               controlplane    HOST         cp-1",
            " CLUSTER    demo (2 machines)                        KUBERNETES         v1.35.0         IP           10.5.0.2/24",
            " SIDEROLINK n/a                                      KUBELET            √ Healthy       GW           10.5.0.1",
            " STAGE      √ Running                                APISERVER          n/a             CONNECTIVITY n/a",
            " READY      √ True                                   CONTROLLER-MANAGER n/a             DNS          1.1.1.1",
            " SECUREBOOT n/a                                      SCHEDULER          n/a             NTP          time.cloudflare.com",
            &format!("── Logs {}", "─".repeat(132)),
            " [    3.000000] kernel line 3",
            " [    4.000000] kernel line 4",
            " [    5.000000] kernel line 5",
            " [    6.000000] kernel line 6",
            &format!(
                "[10.5.0.2 | 10.5.0.3] --- [Summary] --- [F2: Monitor] --- [F3: Resources]{}",
                "─".repeat(67)
            ),
        ];
        let want: Vec<String> = want.iter().map(|l| format!("{l:<140}")).collect();
        assert_eq!(screen(&s, 140, 14), want);
        // A narrower terminal wraps a panel's long values, as talosctl's text views do.
        let narrow = screen(&s, 100, 14);
        assert_eq!(&narrow[2][..38], " UUID       4c4c4544-0042-3010-8052-b ");
        assert_eq!(&narrow[3][..38], " 4c04f4e3232                          ");
    }

    #[test]
    fn the_header_spins_and_colours_are_styles() {
        let mut s = state();
        let buf = frame(&s, 140, 14);
        // The spinner is green, the hostname yellow and bold, the selected node and screen red.
        assert_eq!(buf[(0, 0)].fg, Color::Green);
        assert_eq!(buf[(2, 0)].fg, Color::Yellow);
        assert!(buf[(2, 0)].modifier.contains(Modifier::BOLD));
        assert_eq!(buf[(1, 13)].fg, Color::Red);
        assert_eq!(buf[(12, 13)].fg, Color::Reset);
        assert_eq!(buf[(28, 13)].fg, Color::Red);
        // Field names bold, statuses in colour, the log rule's label yellow.
        assert!(buf[(1, 2)].modifier.contains(Modifier::BOLD));
        assert!(!buf[(12, 2)].modifier.contains(Modifier::BOLD));
        assert_eq!(buf[(12, 5)].fg, Color::Green);
        assert_eq!(buf[(3, 8)].fg, Color::Yellow);
        s.ticks = 1;
        assert_eq!(frame(&s, 100, 14)[(0, 0)].symbol(), "┘");
        s.ticks = 6;
        assert_eq!(frame(&s, 100, 14)[(0, 0)].symbol(), "└");
    }

    #[test]
    fn an_unreached_node_shows_what_is_missing() {
        let mut s = State::new(["10.5.0.9".to_string()]);
        s.apply(Update::Sample {
            node: 0,
            sample: Box::new(Sample {
                error: Some("node 10.5.0.9: connection refused".into()),
                ..Sample::default()
            }),
        });
        let want = [
            "┐ n/a Talos (n/a): uptime n/a, n/a, n/a RAM, PROCS n/a, CPU n/a, RAM n/a",
            "",
            " UUID       n/a             TYPE       n/a    HOST         n/a",
            " CLUSTER    n/a n/a         KUBERNETES n/a    IP           n/a",
            " SIDEROLINK n/a             KUBELET    n/a    GW           n/a",
            " STAGE      n/a                               CONNECTIVITY n/a",
            " READY      n/a                               DNS          n/a",
            " SECUREBOOT n/a                               NTP          n/a",
            "── Logs ──────────────────────────────────────────────────────────────────",
            " ...",
            "[10.5.0.9] --- [Summary] --- [F2: Monitor] --- [F3: Resources]────────────",
        ];
        let want: Vec<String> = want.iter().map(|l| format!("{l:<74}")).collect();
        assert_eq!(screen(&s, 74, 11), want);
        // A log that cannot be read says why, in red.
        s.apply(Update::Kernel {
            node: 0,
            result: Err("node 10.5.0.9: Dmesg: connection refused".into()),
        });
        let lines = screen(&s, 74, 11);
        assert_eq!(
            lines[9],
            format!("{:<74}", " node 10.5.0.9: Dmesg: connection refused")
        );
        assert_eq!(frame(&s, 74, 11)[(1, 9)].fg, Color::Red);
    }

    #[test]
    fn the_log_pane_scrolls_and_wraps() {
        use super::super::input::{Command, Step};
        let mut s = state();
        s.handle(Command::Up(Step::Line), 14);
        let lines = screen(&s, 100, 14);
        assert_eq!(lines[9].trim_end(), " [    2.000000] kernel line 2");
        assert_eq!(lines[12].trim_end(), " [    5.000000] kernel line 5");
        s.handle(Command::Bottom, 14);
        s.apply(Update::Kernel {
            node: 0,
            result: Ok(vec!["x".repeat(120)]),
        });
        let lines = screen(&s, 100, 14);
        assert_eq!(lines[9], format!(" {} ", "x".repeat(98)));
        assert_eq!(lines[10].trim_end(), format!(" {}", "x".repeat(22)));
    }
}
