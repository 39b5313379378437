//! Progress of work done for several nodes at once (the items of one `parallel()` call, and the
//! fleet commands built on it): which node an item works for, its stage, and where its lines go.
//!
//! The pool ([`Group`]) makes each item the *current item* of the thread working on it, for as
//! long as the item runs. Natives report what they do with [`stage`] (`n.discover()` →
//! [`Stage::Discover`], `render::template` → [`Stage::Render`], `n.apply()` → [`Stage::Apply`],
//! …) and name the node they dial with [`dialled`]; scripts never call these themselves.
//! `crate::output` asks [`current`] where a line goes:
//! - on a terminal (stderr is a tty) the group draws one line per item with its stage and a
//!   total bar above them (indicatif `MultiProgress`); lines logged meanwhile are printed above
//!   the bars, never through them;
//! - when a call runs two or more items, each line an item prints carries its name, talosctl's
//!   multi-node style: `NODE: line`; one item alone (and everything outside `parallel`) prints
//!   as it always did.
//!
//! An item's name: a node handle → its name; a string → itself (an address or host name), or,
//! when it names a node file, the nodes of its modeline (`10.0.0.1` or `10.0.0.1,10.0.0.2`); a
//! map → the name of its `node` key. Any other item (a number, a map without `node`, a list, a
//! text with spaces, a `.yaml` file without a modeline or not found from the working folder)
//! goes by itself (numbers, file paths) or by `#N`, its position, until its work first dials a
//! node (`node()`, `talos::targets`), whose name it then takes for good.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Up to this many items, every item keeps a line (queued, working, how it ended); past it
/// only the items being worked on have one, so the board fits a terminal.
const SHOW_ALL: usize = 20;

/// What an item is doing: reported by the natives, shown on its progress line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Not started yet.
    Queued,
    /// Started; no native has said more yet.
    Working,
    /// Reading the node's facts (`n.discover()`).
    Discover,
    /// Rendering its config (`render::template`, `render::full`, `render()`).
    Render,
    /// Sending its config (`n.apply()`).
    Apply,
    /// Rebooting, or waiting for a reboot (`n.reboot()`, `n.wait_reboot()`).
    Reboot,
    /// Upgrading (`n.upgrade()`).
    Upgrade,
    /// Waiting for the cluster's health check.
    Health,
    /// Waiting until the node answers again (`n.wait_ready()`).
    Ready,
    /// Finished.
    Done,
    /// Finished with an error.
    Failed,
    /// Never started: the call stopped first (after a failure, Ctrl-C).
    NotStarted,
}

impl Stage {
    /// The word on the progress line.
    pub fn word(self) -> &'static str {
        match self {
            Stage::Queued => "queued",
            Stage::Working => "working",
            Stage::Discover => "discover",
            Stage::Render => "render",
            Stage::Apply => "apply",
            Stage::Reboot => "reboot",
            Stage::Upgrade => "upgrade",
            Stage::Health => "health",
            Stage::Ready => "ready",
            Stage::Done => "done",
            Stage::Failed => "failed",
            Stage::NotStarted => "not started",
        }
    }
}

/// How an item is named on its lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Label {
    /// The node the item names (a node handle, an address, a node file's modeline).
    Node(String),
    /// The item does not name a node: shown as this until its work dials one.
    Pending(String),
}

impl Label {
    pub fn text(&self) -> &str {
        match self {
            Label::Node(s) | Label::Pending(s) => s,
        }
    }
}

/// One item being worked on.
pub struct Item {
    label: Mutex<Label>,
    /// Whether its lines carry its name (its call runs two or more items).
    prefixed: bool,
    bar: Option<ProgressBar>,
    board: Option<MultiProgress>,
    parent: Option<Arc<Item>>,
    /// Text it wrote to stdout after its last line end.
    partial: Mutex<Vec<u8>>,
    /// Whether its work was started.
    started: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Item {
    fn chain(self: &Arc<Item>) -> impl Iterator<Item = &Arc<Item>> {
        std::iter::successors(Some(self), |i| i.parent.as_ref())
    }

    /// The name its lines carry: its own when its call runs several items, else that of the
    /// nearest enclosing item that does; none outside such calls.
    pub fn prefix(self: &Arc<Item>) -> Option<String> {
        self.chain()
            .find(|i| i.prefixed)
            .map(|i| lock(&i.label).text().to_string())
    }

    /// The progress lines its lines must be printed above, when there are any.
    pub fn board(&self) -> Option<&MultiProgress> {
        self.board.as_ref()
    }

    /// Its stdout text since the last line end (the rest stays for the next write).
    pub fn partial(&self) -> MutexGuard<'_, Vec<u8>> {
        lock(&self.partial)
    }

    fn show(&self, stage: Stage, detail: &str) {
        if let Some(b) = &self.bar {
            if detail.is_empty() {
                b.set_message(stage.word());
            } else {
                b.set_message(format!("{}: {detail}", stage.word()));
            }
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Item>>> = const { RefCell::new(None) };
}

/// The item this thread works on, if any.
pub fn current() -> Option<Arc<Item>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Reports what the current item is doing now (nothing outside `parallel`): the nearest item
/// that has a progress line shows it.
pub fn stage(s: Stage) {
    if let Some(item) = current() {
        if let Some(i) = item.chain().find(|i| i.bar.is_some()) {
            i.show(s, "");
        }
    }
}

/// The current item's work dials `node`: an item that does not name a node takes its name.
pub fn dialled(node: &str) {
    let Some(item) = current() else { return };
    let mut label = lock(&item.label);
    if let Label::Pending(_) = *label {
        *label = Label::Node(node.to_string());
        if let Some(b) = &item.bar {
            b.set_prefix(node.to_string());
        }
    }
}

/// The current item of this thread while it lives; the one before it afterwards. Its stdout
/// text without a line end is written out, as a line, when it ends.
pub struct Working {
    item: Arc<Item>,
    before: Option<Arc<Item>>,
}

impl Drop for Working {
    fn drop(&mut self) {
        let rest = std::mem::take(&mut *self.item.partial());
        if !rest.is_empty() {
            let _ = crate::output::write_lines(&self.item, &rest, true);
        }
        let before = self.before.take();
        CURRENT.with(|c| *c.borrow_mut() = before);
    }
}

/// The items of one `parallel` call and, on a terminal, their progress lines: each item's
/// last line says how it ended (`done`, `failed: ...`, `not started`), and the total bar
/// counts the items done, with the failed and not started ones named after it.
pub struct Group {
    items: Vec<Arc<Item>>,
    total: Option<ProgressBar>,
    board: Option<MultiProgress>,
    show_all: bool,
    failed: AtomicUsize,
}

/// What the total bar says after its count of items done: `, 2 failed, 1 not started`.
fn tally(failed: usize, not_started: usize) -> String {
    let mut s = String::new();
    if failed > 0 {
        s.push_str(&format!(", {failed} failed"));
    }
    if not_started > 0 {
        s.push_str(&format!(", {not_started} not started"));
    }
    s
}

impl Group {
    /// A group of items named `labels`, working inside the current item (if any). With `bars`
    /// and stderr on a terminal it draws progress lines (on the enclosing call's board when
    /// there is one).
    pub fn new(labels: Vec<Label>, bars: bool) -> Group {
        let parent = current();
        let n = labels.len();
        let inherited = parent.as_ref().and_then(|p| p.board.clone());
        let draw = bars && n > 0 && std::io::stderr().is_terminal();
        let board = match (&inherited, draw) {
            (Some(b), _) => Some(b.clone()),
            (None, true) => Some(MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
            (None, false) => None,
        };
        let show_all = n <= SHOW_ALL;
        let total = match (&board, draw) {
            (Some(b), true) => {
                let t = b.add(ProgressBar::new(n as u64));
                t.set_style(
                    ProgressStyle::with_template("[{bar:30}] {pos}/{len} done{msg} ({elapsed})")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                t.enable_steady_tick(Duration::from_millis(200));
                Some(t)
            }
            _ => None,
        };
        let width = labels
            .iter()
            .map(|l| l.text().chars().count())
            .max()
            .unwrap_or(0);
        // Cut to the terminal's width: a line that wrapped would be drawn over the wrong rows
        // (the whole text is in what the command reports).
        let style = ProgressStyle::with_template(&format!("  {{prefix:{width}}}  {{wide_msg}}"))
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let items = labels
            .into_iter()
            .map(|label| {
                let bar = total.as_ref().map(|_| {
                    let b = ProgressBar::hidden();
                    b.set_style(style.clone());
                    b.set_prefix(label.text().to_string());
                    b.set_message(Stage::Queued.word());
                    match &board {
                        Some(m) if show_all => m.add(b),
                        _ => b,
                    }
                });
                Arc::new(Item {
                    label: Mutex::new(label),
                    prefixed: n > 1,
                    bar,
                    board: board.clone(),
                    parent: parent.clone(),
                    partial: Mutex::new(Vec::new()),
                    started: AtomicBool::new(false),
                })
            })
            .collect();
        Group {
            items,
            total,
            board,
            show_all,
            failed: AtomicUsize::new(0),
        }
    }

    /// Makes item `i` this thread's current item for as long as the result lives.
    pub fn start(&self, i: usize) -> Working {
        let item = self.items[i].clone();
        item.started.store(true, Ordering::SeqCst);
        if let (Some(b), Some(m)) = (&item.bar, &self.board) {
            if !self.show_all {
                m.add(b.clone());
            }
        }
        item.show(Stage::Working, "");
        let before = CURRENT.with(|c| c.borrow_mut().replace(item.clone()));
        Working { item, before }
    }

    /// Item `i` ended: done, or failed with `error` (its first line is shown).
    pub fn finish(&self, i: usize, error: Option<&str>) {
        let item = &self.items[i];
        if let Some(b) = &item.bar {
            match error {
                None => b.finish_with_message(Stage::Done.word()),
                Some(e) => {
                    let first = e.lines().next().unwrap_or("");
                    b.finish_with_message(format!("{}: {first}", Stage::Failed.word()));
                }
            }
            if let (false, Some(m)) = (self.show_all, &self.board) {
                if let Some(e) = error {
                    let first = e.lines().next().unwrap_or("");
                    let _ = m.println(format!("{}: failed: {first}", self.label(i)));
                }
                m.remove(b);
            }
        }
        if let Some(t) = &self.total {
            match error {
                None => t.inc(1),
                Some(_) => {
                    let failed = self.failed.fetch_add(1, Ordering::SeqCst) + 1;
                    t.set_message(tally(failed, 0));
                }
            }
        }
    }

    /// The name item `i` goes by now.
    pub fn label(&self, i: usize) -> String {
        lock(&self.items[i].label).text().to_string()
    }
}

impl Drop for Group {
    /// The items never started say so, and the total bar stays at the count of items done.
    fn drop(&mut self) {
        let Some(t) = &self.total else { return };
        let mut not_started = 0;
        for item in &self.items {
            if item.started.load(Ordering::SeqCst) {
                continue;
            }
            not_started += 1;
            if let (true, Some(b)) = (self.show_all, &item.bar) {
                b.finish_with_message(Stage::NotStarted.word());
            }
        }
        t.abandon_with_message(tally(self.failed.load(Ordering::SeqCst), not_started));
    }
}

/// `text` as lines, each carrying `prefix` (`NODE: line`; an empty line is `NODE:`); the
/// last line ends with a line end too.
pub fn prefixed(prefix: &str, text: &str) -> String {
    let mut out = String::with_capacity(text.len() + prefix.len() + 3);
    for line in text.split('\n') {
        out.push_str(prefix);
        out.push(':');
        if !line.is_empty() {
            out.push(' ');
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(g: &Group) -> Vec<String> {
        (0..g.items.len()).map(|i| g.label(i)).collect()
    }

    #[test]
    fn lines_carry_their_prefix_whole() {
        assert_eq!(prefixed("10.0.0.1", "Updated."), "10.0.0.1: Updated.\n");
        assert_eq!(prefixed("n", "a\n\nb"), "n: a\nn:\nn: b\n");
    }

    #[test]
    fn only_items_of_a_call_with_several_are_prefixed() {
        assert!(current().is_none());
        let one = Group::new(vec![Label::Node("a".into())], false);
        {
            let _w = one.start(0);
            assert_eq!(current().unwrap().prefix(), None);
        }
        let two = Group::new(
            vec![Label::Node("a".into()), Label::Node("b".into())],
            false,
        );
        {
            let _w = two.start(1);
            assert_eq!(current().unwrap().prefix().as_deref(), Some("b"));
            // A call inside an item: one item keeps the enclosing name, several their own.
            let inner = Group::new(vec![Label::Pending("1".into())], false);
            {
                let _x = inner.start(0);
                assert_eq!(current().unwrap().prefix().as_deref(), Some("b"));
            }
            let inner = Group::new(
                vec![Label::Node("c".into()), Label::Node("d".into())],
                false,
            );
            {
                let _x = inner.start(0);
                assert_eq!(current().unwrap().prefix().as_deref(), Some("c"));
            }
            assert_eq!(current().unwrap().prefix().as_deref(), Some("b"));
        }
        assert!(current().is_none(), "the thread has no item after it");
    }

    #[test]
    fn an_item_that_names_no_node_takes_the_first_it_dials() {
        dialled("outside"); // no item: nothing happens
        let g = Group::new(
            vec![Label::Pending("#1".into()), Label::Node("b".into())],
            false,
        );
        {
            let _w = g.start(0);
            assert_eq!(current().unwrap().prefix().as_deref(), Some("#1"));
            dialled("10.0.0.1");
            dialled("10.0.0.2");
            stage(Stage::Apply); // no progress lines off a terminal: nothing to show
        }
        {
            let _w = g.start(1);
            dialled("10.0.0.3");
        }
        assert_eq!(names(&g), ["10.0.0.1", "b"]);
        g.finish(0, None);
        g.finish(1, Some("boom\nmore"));
    }

    #[test]
    fn the_total_names_what_did_not_end_done() {
        assert_eq!(tally(0, 0), "");
        assert_eq!(tally(3, 0), ", 3 failed");
        assert_eq!(tally(1, 2), ", 1 failed, 2 not started");
        assert_eq!(tally(0, 2), ", 2 not started");
    }

    #[test]
    fn stages_have_their_words() {
        let all = [
            (Stage::Queued, "queued"),
            (Stage::Working, "working"),
            (Stage::Discover, "discover"),
            (Stage::Render, "render"),
            (Stage::Apply, "apply"),
            (Stage::Reboot, "reboot"),
            (Stage::Upgrade, "upgrade"),
            (Stage::Health, "health"),
            (Stage::Ready, "ready"),
            (Stage::Done, "done"),
            (Stage::Failed, "failed"),
            (Stage::NotStarted, "not started"),
        ];
        for (s, w) in all {
            assert_eq!(s.word(), w);
        }
    }
}
