//! What the dashboard shows and how it changes: one view per node built up from the samples the
//! pollers send, the log lines of the chosen service, the selected node and screen, and what
//! each key command does to them. No I/O here: the terminal loop feeds updates and commands in.

use super::input::Command;

/// The screens, in footer order (`F1`, `F2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Summary,
    Logs,
}

impl Screen {
    pub const ALL: [Screen; 2] = [Screen::Summary, Screen::Logs];

    pub fn title(self) -> &'static str {
        match self {
            Screen::Summary => "Summary",
            Screen::Logs => "Logs",
        }
    }

    /// The function key that shows it.
    pub fn key(self) -> &'static str {
        match self {
            Screen::Summary => "F1",
            Screen::Logs => "F2",
        }
    }
}

/// A service's health as `talosctl service` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Unknown,
    Ok,
    Fail,
}

impl Health {
    pub fn text(self) -> &'static str {
        match self {
            Health::Unknown => "?",
            Health::Ok => "OK",
            Health::Fail => "Fail",
        }
    }
}

/// One row of the service list.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    pub id: String,
    pub state: String,
    pub health: Health,
    /// The last health message, else the last event's message.
    pub message: String,
}

/// Cumulative CPU seconds of all CPUs, as talosctl splits them: idle (with iowait) and busy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuTimes {
    pub busy: f64,
    pub idle: f64,
}

/// The machine's CPUs: how many and the first one's clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cpus {
    pub count: usize,
    pub mhz: f64,
}

/// Memory in KiB: the total and what is in use (total less free, cached and buffers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Memory {
    pub total_kib: u64,
    pub used_kib: u64,
}

/// What one poll of a node brought; `None` where that call failed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub hostname: Option<String>,
    pub version: Option<String>,
    /// Unix seconds.
    pub boot_time: Option<u64>,
    pub cpu: Option<CpuTimes>,
    pub cpus: Option<Cpus>,
    pub memory: Option<Memory>,
    pub load: Option<[f64; 3]>,
    pub services: Option<Vec<Service>>,
    /// Set when the node answered none of the calls.
    pub error: Option<String>,
}

/// Everything known about one node: the newest value of each field, kept when a later poll
/// fails, and the CPU usage between the last two polls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeView {
    /// The node as the user named it (footer label).
    pub name: String,
    pub hostname: Option<String>,
    pub version: Option<String>,
    pub boot_time: Option<u64>,
    pub cpus: Option<Cpus>,
    pub memory: Option<Memory>,
    pub load: Option<[f64; 3]>,
    pub services: Vec<Service>,
    /// Busy share of all CPUs since the previous poll (0..=1).
    pub cpu_usage: Option<f64>,
    last_cpu: Option<CpuTimes>,
    /// Why the last poll got nothing.
    pub error: Option<String>,
    /// Whether any poll has come back yet.
    pub polled: bool,
}

impl NodeView {
    pub fn new(name: impl Into<String>) -> NodeView {
        NodeView {
            name: name.into(),
            ..NodeView::default()
        }
    }

    /// Folds a poll in. Text from the node is made printable on the way.
    pub fn apply(&mut self, mut s: Sample) {
        let clean = |t: &mut Option<String>| {
            if let Some(v) = t {
                *v = printable(v);
            }
        };
        clean(&mut s.hostname);
        clean(&mut s.version);
        clean(&mut s.error);
        for svc in s.services.iter_mut().flatten() {
            for field in [&mut svc.id, &mut svc.state, &mut svc.message] {
                *field = printable(field);
            }
        }
        self.polled = true;
        self.error = s.error;
        if let Some(cpu) = s.cpu {
            if let Some(prev) = self.last_cpu {
                let (busy, idle) = (cpu.busy - prev.busy, cpu.idle - prev.idle);
                if busy >= 0.0 && idle >= 0.0 && busy + idle > 0.0 {
                    self.cpu_usage = Some(busy / (busy + idle));
                } else {
                    // Counters went back: the node rebooted. Start over from this sample.
                    self.cpu_usage = None;
                }
            }
            self.last_cpu = Some(cpu);
        }
        macro_rules! keep {
            ($($f:ident),*) => { $(if s.$f.is_some() { self.$f = s.$f; })* };
        }
        keep!(hostname, version, boot_time, cpus, memory, load);
        if let Some(services) = s.services {
            self.services = services;
        }
    }

    /// Used share of memory (0..=1).
    pub fn memory_usage(&self) -> Option<f64> {
        self.memory
            .filter(|m| m.total_kib > 0)
            .map(|m| m.used_kib as f64 / m.total_kib as f64)
    }
}

/// The log pane: which node and service, and the tail the node sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogView {
    pub node: usize,
    pub service: String,
    pub lines: Vec<String>,
    pub error: Option<String>,
    /// Whether the node has answered for this node and service yet.
    pub loaded: bool,
    /// Lines scrolled up from the newest (0 = following the end).
    pub scroll: usize,
}

/// A message from the pollers.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    Sample {
        node: usize,
        sample: Sample,
    },
    Logs {
        node: usize,
        service: String,
        result: Result<Vec<String>, String>,
    },
}

/// What the loop does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// The screen or node changed: repaint the whole terminal.
    Repaint,
    Quit,
}

/// The dashboard's whole state; `render` draws exactly this.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    pub nodes: Vec<NodeView>,
    pub selected: usize,
    pub screen: Screen,
    /// Index of the highlighted service on the summary screen.
    pub cursor: usize,
    pub logs: LogView,
    /// Unix seconds the frame is drawn at (uptime).
    pub now: u64,
}

/// The service whose logs show before one is chosen.
const DEFAULT_SERVICE: &str = "machined";

impl State {
    pub fn new(names: impl IntoIterator<Item = String>) -> State {
        State {
            nodes: names.into_iter().map(NodeView::new).collect(),
            selected: 0,
            screen: Screen::Summary,
            cursor: 0,
            logs: LogView {
                service: DEFAULT_SERVICE.into(),
                ..LogView::default()
            },
            now: 0,
        }
    }

    pub fn node(&self) -> Option<&NodeView> {
        self.nodes.get(self.selected)
    }

    /// The node and service whose logs the pollers should fetch, while the logs screen shows.
    pub fn logs_target(&self) -> Option<(usize, String)> {
        (self.screen == Screen::Logs).then(|| (self.selected, self.logs.service.clone()))
    }

    pub fn apply(&mut self, u: Update) {
        match u {
            Update::Sample { node, sample } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.apply(sample);
                }
                self.clamp_cursor();
            }
            Update::Logs {
                node,
                service,
                result,
            } => {
                if node != self.logs.node || service != self.logs.service {
                    return; // an answer for a pane no longer shown
                }
                self.logs.loaded = true;
                match result {
                    Ok(lines) => {
                        self.logs.lines = lines.iter().map(|l| printable(l)).collect();
                        self.logs.error = None;
                    }
                    Err(e) => self.logs.error = Some(printable(&e)),
                }
                self.logs.scroll = self.logs.scroll.min(self.max_scroll(0));
            }
        }
    }

    fn clamp_cursor(&mut self) {
        let n = self.node().map_or(0, |n| n.services.len());
        self.cursor = self.cursor.min(n.saturating_sub(1));
    }

    /// The furthest the log pane can scroll up when `rows` lines show.
    fn max_scroll(&self, rows: usize) -> usize {
        self.logs.lines.len().saturating_sub(rows.max(1))
    }

    /// Points the log pane at the selected node and `service`, dropping what it showed.
    fn show_logs(&mut self, service: String) {
        if self.logs.node != self.selected || self.logs.service != service {
            self.logs = LogView {
                node: self.selected,
                service,
                ..LogView::default()
            };
        }
        self.screen = Screen::Logs;
    }

    /// The service under the cursor, if the node listed any.
    fn cursor_service(&self) -> Option<String> {
        self.node()
            .and_then(|n| n.services.get(self.cursor))
            .map(|s| s.id.clone())
    }

    fn select_node(&mut self, index: usize) -> Flow {
        if index == self.selected || index >= self.nodes.len() {
            return Flow::Continue;
        }
        self.selected = index;
        self.clamp_cursor();
        if self.screen == Screen::Logs {
            let service = self.logs.service.clone();
            self.show_logs(service);
        }
        Flow::Repaint
    }

    /// Applies a key command; `rows` is the terminal height (page sizes).
    pub fn handle(&mut self, cmd: Command, rows: u16) -> Flow {
        // Rows of the log pane: the terminal less header, footer and the pane's borders.
        let page = usize::from(rows).saturating_sub(4).max(1);
        match cmd {
            Command::Quit => Flow::Quit,
            Command::PrevNode => self.select_node(self.selected.saturating_sub(1)),
            Command::NextNode => self.select_node(self.selected + 1),
            Command::Show(Screen::Summary) | Command::Back => {
                if self.screen == Screen::Summary {
                    return Flow::Continue;
                }
                self.screen = Screen::Summary;
                Flow::Repaint
            }
            Command::Show(Screen::Logs) | Command::Open => {
                if self.screen == Screen::Logs {
                    return Flow::Continue;
                }
                let service = self
                    .cursor_service()
                    .unwrap_or_else(|| self.logs.service.clone());
                self.show_logs(service);
                Flow::Repaint
            }
            Command::Up(n) => self.move_by(-(n.lines(page) as isize), page),
            Command::Down(n) => self.move_by(n.lines(page) as isize, page),
            Command::Top => self.move_by(isize::MIN / 2, page),
            Command::Bottom => self.move_by(isize::MAX / 2, page),
        }
    }

    /// Moves the service cursor (summary) or scrolls the log pane (logs) by `delta` lines
    /// (positive = down / towards the newest).
    fn move_by(&mut self, delta: isize, page: usize) -> Flow {
        match self.screen {
            Screen::Summary => {
                let n = self.node().map_or(0, |n| n.services.len());
                let at = (self.cursor as isize).saturating_add(delta);
                self.cursor = at.clamp(0, n.saturating_sub(1) as isize) as usize;
            }
            Screen::Logs => {
                let max = self.max_scroll(page) as isize;
                let at = (self.logs.scroll as isize).saturating_sub(delta);
                self.logs.scroll = at.clamp(0, max) as usize;
            }
        }
        Flow::Continue
    }
}

/// A line as it may be put on a terminal: control characters (escape sequences from a node's
/// log) become `�`, tabs become spaces.
pub fn printable(line: &str) -> String {
    line.trim_end_matches('\r')
        .chars()
        .map(|c| match c {
            '\t' => ' ',
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::input::Step;
    use super::*;

    fn svc(id: &str) -> Service {
        Service {
            id: id.into(),
            state: "Running".into(),
            health: Health::Ok,
            message: String::new(),
        }
    }

    fn two_nodes() -> State {
        let mut s = State::new(["a".to_string(), "b".to_string()]);
        for node in 0..2 {
            s.apply(Update::Sample {
                node,
                sample: Sample {
                    services: Some(vec![svc("apid"), svc("etcd"), svc("kubelet")]),
                    ..Sample::default()
                },
            });
        }
        s
    }

    #[test]
    fn cpu_usage_comes_from_the_last_two_polls() {
        let mut n = NodeView::new("a");
        let cpu = |busy, idle| Sample {
            cpu: Some(CpuTimes { busy, idle }),
            ..Sample::default()
        };
        n.apply(cpu(10.0, 90.0));
        assert_eq!(n.cpu_usage, None);
        n.apply(cpu(13.0, 99.0));
        assert_eq!(n.cpu_usage, Some(0.25));
        // A reboot resets the counters: no usage until two samples of the new boot.
        n.apply(cpu(1.0, 2.0));
        assert_eq!(n.cpu_usage, None);
    }

    #[test]
    fn a_failed_poll_keeps_what_was_known() {
        let mut n = NodeView::new("a");
        n.apply(Sample {
            hostname: Some("cp-1".into()),
            services: Some(vec![svc("apid")]),
            ..Sample::default()
        });
        n.apply(Sample {
            error: Some("node a: connection refused".into()),
            ..Sample::default()
        });
        assert_eq!(n.hostname.as_deref(), Some("cp-1"));
        assert_eq!(n.services.len(), 1);
        assert_eq!(n.error.as_deref(), Some("node a: connection refused"));
    }

    #[test]
    fn text_from_a_node_cannot_drive_the_terminal() {
        let mut n = NodeView::new("a");
        let mut bad = svc("x\u{1b}]0;owned\u{7}");
        bad.message = "\u{1b}[31mred".into();
        n.apply(Sample {
            hostname: Some("h\u{1b}[2J".into()),
            services: Some(vec![bad]),
            ..Sample::default()
        });
        assert_eq!(n.hostname.as_deref(), Some("h\u{fffd}[2J"));
        assert_eq!(n.services[0].id, "x\u{fffd}]0;owned\u{fffd}");
        assert_eq!(n.services[0].message, "\u{fffd}[31mred");
    }

    #[test]
    fn keys_move_between_nodes_and_screens() {
        let mut s = two_nodes();
        assert_eq!(s.handle(Command::PrevNode, 30), Flow::Continue);
        assert_eq!(s.handle(Command::NextNode, 30), Flow::Repaint);
        assert_eq!(s.selected, 1);
        assert_eq!(s.handle(Command::NextNode, 30), Flow::Continue);
        s.handle(Command::Down(Step::Line), 30);
        assert_eq!(s.handle(Command::Open, 30), Flow::Repaint);
        assert_eq!(s.logs_target(), Some((1, "etcd".to_string())));
        // Another node keeps the service.
        s.handle(Command::PrevNode, 30);
        assert_eq!(s.logs_target(), Some((0, "etcd".to_string())));
        assert_eq!(s.handle(Command::Show(Screen::Summary), 30), Flow::Repaint);
        assert_eq!(s.logs_target(), None);
        assert_eq!(s.handle(Command::Quit, 30), Flow::Quit);
    }

    #[test]
    fn stale_log_answers_are_dropped_and_lines_made_printable() {
        let mut s = two_nodes();
        s.handle(Command::Show(Screen::Logs), 30);
        assert_eq!(s.logs.service, "apid");
        s.apply(Update::Logs {
            node: 1,
            service: "apid".into(),
            result: Ok(vec!["other node".into()]),
        });
        assert!(!s.logs.loaded);
        s.apply(Update::Logs {
            node: 0,
            service: "apid".into(),
            result: Ok(vec!["\u{1b}[2Jhi\tthere\r".into()]),
        });
        assert_eq!(s.logs.lines, ["\u{fffd}[2Jhi there"]);
    }

    #[test]
    fn log_scrolling_stays_within_the_lines() {
        let mut s = two_nodes();
        s.handle(Command::Show(Screen::Logs), 14); // a pane of 10 rows
        s.apply(Update::Logs {
            node: 0,
            service: "apid".into(),
            result: Ok((1..=25).map(|i| format!("line {i}")).collect()),
        });
        s.handle(Command::Up(Step::Line), 14);
        assert_eq!(s.logs.scroll, 1);
        s.handle(Command::Up(Step::Page), 14);
        assert_eq!(s.logs.scroll, 11);
        s.handle(Command::Top, 14);
        assert_eq!(s.logs.scroll, 15);
        s.handle(Command::Down(Step::HalfPage), 14);
        assert_eq!(s.logs.scroll, 10);
        s.handle(Command::Bottom, 14);
        assert_eq!(s.logs.scroll, 0);
    }

    #[test]
    fn the_cursor_stays_on_the_list() {
        let mut s = two_nodes();
        s.handle(Command::Bottom, 30);
        assert_eq!(s.cursor, 2);
        s.apply(Update::Sample {
            node: 0,
            sample: Sample {
                services: Some(vec![svc("apid")]),
                ..Sample::default()
            },
        });
        assert_eq!(s.cursor, 0);
    }
}
