//! What the dashboard shows and how it changes: one view per node built up from the samples the
//! pollers send (stats, services, processes, the resources of the Summary's panels) and the
//! node's kernel log, the resource explorer's lists, the selected node and screen, and what
//! each key command does to them. No I/O here: the terminal loop feeds updates and commands
//! in, and carries the explorer's requests out.

use super::explorer::{Explorer, Fetch, Level, Row, TypeRow};
use super::input::Command;
use super::metrics::Metrics;
use super::panels::Resources;
use crate::proto::machine;

/// The screens, in footer order (`F1`-`F3`), as talosctl's dashboard names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Summary,
    Monitor,
    Resources,
}

impl Screen {
    pub const ALL: [Screen; 3] = [Screen::Summary, Screen::Monitor, Screen::Resources];

    pub fn title(self) -> &'static str {
        match self {
            Screen::Summary => "Summary",
            Screen::Monitor => "Monitor",
            Screen::Resources => "Resources",
        }
    }

    /// The function key that shows it.
    pub fn key(self) -> &'static str {
        match self {
            Screen::Summary => "F1",
            Screen::Monitor => "F2",
            Screen::Resources => "F3",
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
    /// How many processes run (the header's `PROCS`).
    pub procs: Option<usize>,
    /// The resources the Summary's panels and the header read.
    pub resources: Option<Resources>,
    /// What the Monitor screen reads, as the node sent it.
    pub stat: Option<machine::SystemStat>,
    pub meminfo: Option<machine::MemInfo>,
    pub processes: Option<Vec<machine::ProcessInfo>>,
    pub net: Option<machine::NetworkDeviceStats>,
    pub disk: Option<machine::DiskStats>,
    /// Set when the node answered none of the calls.
    pub error: Option<String>,
}

/// A node's kernel log as the Summary's log pane shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelLog {
    pub lines: Vec<String>,
    pub error: Option<String>,
    /// Whether the node has answered yet.
    pub loaded: bool,
    /// Lines scrolled up from the newest (0 = following the end).
    pub scroll: usize,
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
    pub procs: Option<usize>,
    pub resources: Resources,
    pub metrics: Metrics,
    /// Busy share of all CPUs since the previous poll (0..=1).
    pub cpu_usage: Option<f64>,
    last_cpu: Option<CpuTimes>,
    /// Why the last poll got nothing.
    pub error: Option<String>,
    /// Whether any poll has come back yet.
    pub polled: bool,
    pub kernel: KernelLog,
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
        self.metrics.apply(
            s.stat.take(),
            s.meminfo.take(),
            s.load,
            s.processes.take(),
            s.cpus.map(|c| c.count),
        );
        self.metrics.apply_io(s.net.take(), s.disk.take());
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
        keep!(hostname, version, boot_time, cpus, memory, load, procs);
        if let Some(services) = s.services {
            self.services = services;
        }
        if let Some(r) = s.resources {
            self.resources = r;
        }
    }

    /// Busy share of the CPUs for the header: as talosctl, 0 after the first poll with stats
    /// (nothing to compare with yet), `None` before.
    pub fn cpu_share(&self) -> Option<f64> {
        self.cpu_usage.or(self.last_cpu.map(|_| 0.0))
    }

    /// Used share of memory (0..=1).
    pub fn memory_usage(&self) -> Option<f64> {
        self.memory
            .filter(|m| m.total_kib > 0)
            .map(|m| m.used_kib as f64 / m.total_kib as f64)
    }

    /// The kubelet service's health, when the node lists it and has checked it.
    pub fn kubelet_healthy(&self) -> Option<bool> {
        self.services
            .iter()
            .find(|s| s.id == "kubelet")
            .map(|s| s.health == Health::Ok)
    }
}

/// A message from the pollers.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    Sample {
        node: usize,
        sample: Box<Sample>,
    },
    /// A node's kernel log (all of it), or why it could not be read.
    Kernel {
        node: usize,
        result: Result<Vec<String>, String>,
    },
    /// A node's resource types for the explorer, or why they could not be read.
    Types {
        node: usize,
        result: Result<Vec<TypeRow>, String>,
    },
    /// The resources of type `ty` on a node.
    Resources {
        node: usize,
        ty: String,
        result: Result<Vec<Row>, String>,
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
    /// Unix seconds the frame is drawn at (uptime).
    pub now: u64,
    /// Ticks of the header's spinner (talosctl turns it twice a second).
    pub ticks: usize,
    /// The Resources screen.
    pub explorer: Explorer,
}

/// The Summary's rows above the log pane (talosctl's `summaryTopFixedRows`).
pub const SUMMARY_TOP_ROWS: u16 = 7;

/// The most kernel log lines a pane keeps (talosctl's `maxLogLines`).
pub const MAX_LOG_LINES: usize = 1000;

impl State {
    pub fn new(names: impl IntoIterator<Item = String>) -> State {
        State {
            nodes: names.into_iter().map(NodeView::new).collect(),
            selected: 0,
            screen: Screen::Summary,
            now: 0,
            ticks: 0,
            explorer: Explorer::default(),
        }
    }

    /// Whether a text line has the keys (the explorer's filter).
    pub fn typing(&self) -> bool {
        self.screen == Screen::Resources
            && self.explorer.level == Level::Types
            && self.explorer.filtering
    }

    /// What the explorer asked the nodes for since the last call.
    pub fn take_requests(&mut self) -> Vec<Fetch> {
        self.explorer.take_requests()
    }

    pub fn node(&self) -> Option<&NodeView> {
        self.nodes.get(self.selected)
    }

    pub fn apply(&mut self, u: Update) {
        match u {
            Update::Sample { node, sample } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.apply(*sample);
                }
                // talosctl watches the listed type; a poll of the node lists it again.
                let listing =
                    self.screen == Screen::Resources && self.explorer.level == Level::List;
                if node == self.selected && listing {
                    self.explorer.refresh(node);
                }
            }
            Update::Types { node, result } => {
                let waiting = self.explorer.level == Level::Types
                    && self.explorer.types == Some(super::explorer::Loaded::Loading);
                if node == self.selected && waiting {
                    self.explorer.types_loaded(result);
                }
            }
            Update::Resources { node, ty, result } => {
                if node == self.selected {
                    self.explorer.rows_loaded(&ty, result);
                }
            }
            Update::Kernel { node, result } => {
                let Some(n) = self.nodes.get_mut(node) else {
                    return;
                };
                let log = &mut n.kernel;
                log.loaded = true;
                match result {
                    Ok(lines) => {
                        let skip = lines.len().saturating_sub(MAX_LOG_LINES);
                        log.lines = lines[skip..].iter().map(|l| printable(l)).collect();
                        log.error = None;
                    }
                    Err(e) => log.error = Some(printable(&e)),
                }
                log.scroll = log.scroll.min(log.lines.len());
            }
        }
    }

    fn select_node(&mut self, index: usize) -> Flow {
        if index == self.selected || index >= self.nodes.len() {
            return Flow::Continue;
        }
        self.selected = index;
        self.explorer
            .node_changed(index, self.screen == Screen::Resources);
        Flow::Repaint
    }

    /// Rows of the Summary's log pane in a terminal of `rows`: less header, footer, the
    /// panels and the pane's title line.
    pub fn log_rows(rows: u16) -> usize {
        usize::from(rows.saturating_sub(2 + SUMMARY_TOP_ROWS + 1)).max(1)
    }

    /// Applies a key command; `rows` is the terminal height (page sizes).
    pub fn handle(&mut self, cmd: Command, rows: u16) -> Flow {
        let page = State::log_rows(rows);
        match cmd {
            Command::Quit => Flow::Quit,
            Command::PrevNode => self.select_node(self.selected.saturating_sub(1)),
            Command::NextNode => self.select_node(self.selected + 1),
            Command::Show(screen) => {
                if self.screen == screen {
                    return Flow::Continue;
                }
                if self.screen == Screen::Resources {
                    self.explorer.hidden();
                }
                self.screen = screen;
                if screen == Screen::Resources {
                    self.explorer.shown(self.selected);
                }
                Flow::Repaint
            }
            cmd if self.screen == Screen::Resources => {
                self.explorer
                    .handle(cmd, rows.saturating_sub(2), self.selected);
                Flow::Continue
            }
            Command::Select
            | Command::Back
            | Command::Filter
            | Command::Type(_)
            | Command::Erase => Flow::Continue,
            Command::Up(n) => self.scroll_by(-(n.lines(page) as isize), page),
            Command::Down(n) => self.scroll_by(n.lines(page) as isize, page),
            Command::Top => self.scroll_by(isize::MIN / 2, page),
            Command::Bottom => self.scroll_by(isize::MAX / 2, page),
        }
    }

    /// Scrolls the Summary's log pane by `delta` lines (positive = towards the newest).
    fn scroll_by(&mut self, delta: isize, page: usize) -> Flow {
        if self.screen != Screen::Summary {
            return Flow::Continue;
        }
        let Some(n) = self.nodes.get_mut(self.selected) else {
            return Flow::Continue;
        };
        let max = n.kernel.lines.len().saturating_sub(page) as isize;
        let at = (n.kernel.scroll as isize).saturating_sub(delta);
        n.kernel.scroll = at.clamp(0, max) as usize;
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

    fn svc(id: &str, health: Health) -> Service {
        Service {
            id: id.into(),
            state: "Running".into(),
            health,
            message: String::new(),
        }
    }

    #[test]
    fn cpu_usage_comes_from_the_last_two_polls() {
        let mut n = NodeView::new("a");
        let cpu = |busy, idle| Sample {
            cpu: Some(CpuTimes { busy, idle }),
            ..Sample::default()
        };
        assert_eq!(n.cpu_share(), None);
        n.apply(cpu(10.0, 90.0));
        assert_eq!(n.cpu_usage, None);
        assert_eq!(n.cpu_share(), Some(0.0));
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
            services: Some(vec![svc("kubelet", Health::Fail)]),
            procs: Some(12),
            ..Sample::default()
        });
        n.apply(Sample {
            error: Some("node a: connection refused".into()),
            ..Sample::default()
        });
        assert_eq!(n.hostname.as_deref(), Some("cp-1"));
        assert_eq!(n.procs, Some(12));
        assert_eq!(n.kubelet_healthy(), Some(false));
        assert_eq!(n.error.as_deref(), Some("node a: connection refused"));
    }

    #[test]
    fn text_from_a_node_cannot_drive_the_terminal() {
        let mut n = NodeView::new("a");
        n.apply(Sample {
            hostname: Some("h\u{1b}[2J".into()),
            ..Sample::default()
        });
        assert_eq!(n.hostname.as_deref(), Some("h\u{fffd}[2J"));
        let mut s = State::new(["a".to_string()]);
        s.apply(Update::Kernel {
            node: 0,
            result: Ok(vec!["\u{1b}[2Jhi\tthere\r".into()]),
        });
        assert_eq!(s.nodes[0].kernel.lines, ["\u{fffd}[2Jhi there"]);
    }

    #[test]
    fn keys_move_between_nodes_and_screens() {
        let mut s = State::new(["a".to_string(), "b".to_string()]);
        assert_eq!(s.handle(Command::PrevNode, 30), Flow::Continue);
        assert_eq!(s.handle(Command::NextNode, 30), Flow::Repaint);
        assert_eq!(s.selected, 1);
        assert_eq!(s.handle(Command::NextNode, 30), Flow::Continue);
        assert_eq!(s.handle(Command::Show(Screen::Monitor), 30), Flow::Repaint);
        assert_eq!(s.screen, Screen::Monitor);
        assert_eq!(s.handle(Command::Show(Screen::Monitor), 30), Flow::Continue);
        assert_eq!(s.handle(Command::Show(Screen::Summary), 30), Flow::Repaint);
        assert_eq!(s.handle(Command::Quit, 30), Flow::Quit);
    }

    #[test]
    fn log_scrolling_stays_within_the_lines() {
        let mut s = State::new(["a".to_string()]);
        let rows = 20; // a pane of 10 rows
        assert_eq!(State::log_rows(rows), 10);
        s.apply(Update::Kernel {
            node: 0,
            result: Ok((1..=25).map(|i| format!("line {i}")).collect()),
        });
        let scroll = |s: &State| s.nodes[0].kernel.scroll;
        s.handle(Command::Up(Step::Line), rows);
        assert_eq!(scroll(&s), 1);
        s.handle(Command::Up(Step::Page), rows);
        assert_eq!(scroll(&s), 11);
        s.handle(Command::Top, rows);
        assert_eq!(scroll(&s), 15);
        s.handle(Command::Down(Step::HalfPage), rows);
        assert_eq!(scroll(&s), 10);
        s.handle(Command::Bottom, rows);
        assert_eq!(scroll(&s), 0);
    }

    #[test]
    fn the_log_keeps_the_newest_thousand_lines() {
        let mut s = State::new(["a".to_string()]);
        s.apply(Update::Kernel {
            node: 0,
            result: Ok((1..=1005).map(|i| i.to_string()).collect()),
        });
        let k = &s.nodes[0].kernel;
        assert_eq!((k.lines.len(), k.lines[0].as_str()), (1000, "6"));
        s.apply(Update::Kernel {
            node: 0,
            result: Err("node a: Dmesg: refused".into()),
        });
        assert_eq!(s.nodes[0].kernel.lines.len(), 1000);
        assert_eq!(
            s.nodes[0].kernel.error.as_deref(),
            Some("node a: Dmesg: refused")
        );
    }
}
