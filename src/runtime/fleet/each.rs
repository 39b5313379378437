//! `talos::each(ARGS, |n| ...)`: a command's fan-out over the nodes its flags name, as
//! talosctl's multiplexing: the closure runs on each node in turn, its results are collected,
//! and the nodes that failed are reported by the command's policy (warn and go on when some
//! answered, fail when none did; fail on any; or hand the failures back). `talos::targets_of`
//! resolves the same nodes for the commands that look at them before fanning out.

use anyhow::Result;
use rhai::{Array, Dynamic, EvalAltResult, FnPtr, FuncRegistration, Map, NativeCallContext};

use crate::error::Hinted;
use crate::runtime::native;
use crate::runtime::node::opts::TargetsOpts;
use crate::runtime::node::{targets, Node};
use crate::runtime::opts::{get, options, FromOpt};
use crate::runtime::session::Session;
use crate::sandbox::{NodeFailure, ScriptError};
use talm_base::error::node::{Go, Kind};

/// What the fan-out does when nodes fail.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnError {
    /// Fail when no node answered; otherwise `WARNING: <errors>` on stderr and go on with the
    /// nodes that answered (talosctl's default for multiplexed calls).
    #[default]
    Warn,
    /// Fail when any node failed, after every node was asked.
    Fail,
    /// Fail when no node answered; otherwise return `#{items, errors}`: the command reports the
    /// failures itself (talosctl's streaming commands list them after the output).
    Keep,
}

/// How the failures read in the error (and in `errors` with `keep`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Listing {
    /// One error as it is, several as go-multierror's list; trailing blank lines dropped.
    #[default]
    Short,
    /// As `Short`, but go-multierror's text whole, its trailing blank lines kept (talosctl
    /// wrapping the list with `%w`).
    Whole,
    /// Always go-multierror's list, even of one error; trailing blank lines dropped (talosctl's
    /// etcd commands).
    Multierror,
    /// One error a line, `error from node N: ` before those that do not name their node
    /// (talosctl's image commands, which ask one node at a time).
    Lines,
    /// talosctl's stream errors: `N errors occurred:` then each on a line after one space.
    Stream,
}

/// An enum option read from its name: the names and the values, in order.
trait Named: Sized + Copy + Default + 'static {
    const NAMES: &'static [(&'static str, Self)];
}

impl Named for OnError {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("warn", OnError::Warn),
        ("fail", OnError::Fail),
        ("keep", OnError::Keep),
    ];
}

impl Named for Listing {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("short", Listing::Short),
        ("whole", Listing::Whole),
        ("multierror", Listing::Multierror),
        ("lines", Listing::Lines),
        ("stream", Listing::Stream),
    ];
}

fn named<T: Named>(v: &Dynamic) -> Option<T> {
    let text = v.clone().into_string().ok()?;
    T::NAMES
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, value)| *value)
}

impl FromOpt for OnError {
    const EXPECTED: &'static str = "warn, fail or keep";
    fn absent() -> Self {
        Self::default()
    }
    fn read(v: &Dynamic) -> Option<Self> {
        named(v)
    }
}

impl FromOpt for Listing {
    const EXPECTED: &'static str = "short, whole, multierror, lines or stream";
    fn absent() -> Self {
        Self::default()
    }
    fn read(v: &Dynamic) -> Option<Self> {
        named(v)
    }
}

options! {
    /// `talos::each(ARGS, #{...}, f)`.
    pub struct EachOpts for "talos::each" {
        /// warn (default), fail or keep.
        on_error: OnError,
        /// Put before the failure text: `PREFIX: <errors>`.
        prefix: String,
        /// How the failures read: short (default), whole, multierror, lines or stream.
        errors: Listing,
        /// A closure's list results are joined into one list (`items += ...`).
        flat: bool,
        /// For talosctl's streaming commands: a node whose call failed outright (the endpoint
        /// refused it, or the connection failed) fails the command as `DIRECT_PREFIX: <error>`,
        /// and under keep the nodes' own refusals never fail it (the command lists them).
        direct_prefix: String,
    }
}

/// The target flags of a command's `ARGS` (its other keys are the command's own).
fn target_flags(args: &Map) -> Result<TargetsOpts> {
    const F: &str = "talos::each";
    Ok(TargetsOpts {
        nodes: get(F, args, "nodes")?,
        endpoints: get(F, args, "endpoints")?,
        files: get(F, args, "files")?,
        insecure: get(F, args, "insecure")?,
        ..TargetsOpts::default()
    })
}

/// One node's failure: its text as a script's `${e}` reads it, the node it names, and what the
/// error carried besides (its hints, its kind), so the fan-out's error keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub node: String,
    pub text: String,
    pub names_node: bool,
    pub hints: Vec<String>,
    pub kind: Option<Kind>,
    /// How talosctl's Go client words it, when known.
    pub go: Option<Go>,
}

impl Failure {
    /// Its text in a `listing`: talosctl's words where the listing copies talosctl's and they
    /// are known.
    fn said(&self, listing: Listing) -> String {
        match (listing, &self.go) {
            (Listing::Whole | Listing::Multierror, Some(go)) => go.unary(),
            (Listing::Stream, Some(go)) => go.stream().to_string(),
            _ => self.text.clone(),
        }
    }

    /// Whether talosctl would list it among the nodes' errors of a unary reply (a failure
    /// of the node itself, which apid hands back inside the reply).
    fn in_reply(&self) -> bool {
        matches!(self.go, Some(Go::Node { .. }))
    }
}

/// The failures as `listing` reads them, `prefix` first.
pub fn failure_text(failures: &[Failure], listing: Listing, prefix: &str) -> String {
    use crate::runtime::node::inspect::text::{multierror, stream_errors};
    let texts = || failures.iter().map(|f| f.said(listing)).collect::<Vec<_>>();
    let body = match listing {
        Listing::Short if failures.len() == 1 => failures[0].text.clone(),
        // talosctl lists the node errors of a reply; a failed call is its error alone.
        Listing::Whole if failures.len() == 1 && !failures[0].in_reply() => {
            failures[0].said(listing)
        }
        Listing::Multierror
            if failures.len() == 1 && failures[0].go.as_ref().is_some_and(Go::is_direct) =>
        {
            failures[0].said(listing)
        }
        Listing::Short | Listing::Whole | Listing::Multierror => multierror(&texts()),
        Listing::Lines => lines(failures).join("\n"),
        // talm's own words for a failure (not a stream's error) are said alone.
        Listing::Stream if failures.len() == 1 && failures[0].go.is_none() => {
            failures[0].text.clone()
        }
        Listing::Stream => stream_errors(&texts()),
    };
    let text = if prefix.is_empty() {
        body
    } else {
        format!("{prefix}: {body}")
    };
    match listing {
        Listing::Short | Listing::Multierror => text.trim().to_string(),
        Listing::Whole | Listing::Lines | Listing::Stream => text,
    }
}

/// Each failure on its own, as `Lines` names them.
fn lines(failures: &[Failure]) -> Vec<String> {
    failures
        .iter()
        .map(|f| {
            if let Some(go) = &f.go {
                // talosctl's image commands ask each node one-to-one: the status alone.
                format!("error from node {}: {}", f.node, go.stream())
            } else if f.names_node {
                f.text.clone()
            } else {
                format!("error from node {}: {}", f.node, f.text)
            }
        })
        .collect()
}

/// The fan-out's error: `message` with every hint the failures carried (each once, in order)
/// and their kind when they share one, so the hints a lone node's error had are still said.
fn fail(message: String, failures: &[Failure]) -> Box<EvalAltResult> {
    let mut hints: Vec<String> = Vec::new();
    for h in failures.iter().flat_map(|f| &f.hints) {
        if !hints.contains(h) {
            hints.push(h.clone());
        }
    }
    let kind = failures
        .first()
        .and_then(|f| f.kind)
        .filter(|k| failures.iter().all(|f| f.kind == Some(*k)));
    let failure = kind.map(|kind| NodeFailure {
        kind,
        go: None,
        node: match failures {
            [one] if one.names_node => one.node.clone(),
            _ => String::new(),
        },
    });
    Box::new(EvalAltResult::ErrorRuntime(
        Dynamic::from(ScriptError(Hinted { message, hints }, failure)),
        rhai::Position::NONE,
    ))
}

/// A node's error as a script's `catch (e)` would hold it; None for what a catch would not
/// turn into a node's failure (limits, Ctrl-C, a fault in the script itself).
fn caught(node: &str, err: &EvalAltResult) -> Option<Failure> {
    if err.is_pseudo_error() || !err.is_catchable() {
        return None;
    }
    let EvalAltResult::ErrorRuntime(value, _) = err.unwrap_inner() else {
        return None;
    };
    Some(match value.clone().try_cast::<ScriptError>() {
        Some(ScriptError(h, failure)) => Failure {
            node: node.to_string(),
            names_node: failure.as_ref().is_some_and(|f| f.node == node),
            text: h.message,
            hints: h.hints,
            go: failure.as_ref().and_then(|f| f.go.clone()),
            kind: failure.map(|f| f.kind),
        },
        None => Failure {
            node: node.to_string(),
            text: value.to_string(),
            names_node: false,
            hints: Vec::new(),
            kind: None,
            go: None,
        },
    })
}

/// What the fan-out hands back after the policy ran: the results, or the error to raise.
pub fn settle(
    items: Array,
    failures: Vec<Failure>,
    asked: usize,
    o: &EachOpts,
) -> Result<Dynamic, Box<EvalAltResult>> {
    if !o.direct_prefix.is_empty() {
        let direct = failures.iter().find_map(|f| match &f.go {
            Some(Go::Direct(text)) => Some((f, text)),
            _ => None,
        });
        if let Some((f, text)) = direct {
            let message = format!("{}: {text}", o.direct_prefix);
            return Err(fail(message, std::slice::from_ref(f)));
        }
    }
    let listed = o.on_error == OnError::Keep
        && !o.direct_prefix.is_empty()
        && failures.iter().all(Failure::in_reply);
    let none_answered = !failures.is_empty() && failures.len() == asked && !listed;
    if none_answered || (o.on_error == OnError::Fail && !failures.is_empty()) {
        return Err(fail(
            failure_text(&failures, o.errors, &o.prefix),
            &failures,
        ));
    }
    match o.on_error {
        OnError::Keep => {
            let errors: Array = match o.errors {
                Listing::Lines => lines(&failures),
                listing => failures.iter().map(|f| f.said(listing)).collect(),
            }
            .into_iter()
            .map(Dynamic::from)
            .collect();
            let mut m = Map::new();
            m.insert("items".into(), items.into());
            m.insert("errors".into(), errors.into());
            Ok(m.into())
        }
        OnError::Warn | OnError::Fail => {
            if !failures.is_empty() {
                let texts: Vec<String> = failures.iter().map(|f| f.said(o.errors)).collect();
                // As talosctl's cli.Warning: a message that ends its own line gets no second
                // line break.
                let text = crate::runtime::node::inspect::text::multierror(&texts);
                crate::runtime::log::line(&format!(
                    "WARNING: {}",
                    text.strip_suffix('\n').unwrap_or(&text)
                ));
            }
            Ok(items.into())
        }
    }
}

/// Runs `f` on each node in order and settles the failures by `o`.
fn each(
    ctx: &NativeCallContext,
    nodes: Array,
    o: &EachOpts,
    f: &FnPtr,
) -> Result<Dynamic, Box<EvalAltResult>> {
    let asked = nodes.len();
    let mut items = Array::new();
    let mut failures = Vec::new();
    for n in nodes {
        let name = n
            .clone()
            .try_cast::<Node>()
            .map(|n| n.name)
            .unwrap_or_default();
        match f.call_within_context::<Dynamic>(ctx, (n,)) {
            Ok(v) if o.flat && v.is_array() => items.extend(v.cast::<Array>()),
            Ok(v) => items.push(v),
            Err(e) => match caught(&name, &e) {
                Some(failure) => failures.push(failure),
                None => return Err(e),
            },
        }
    }
    settle(items, failures, asked, o)
}

pub fn add_to_talos(m: &mut rhai::Module, session: &Session) {
    FuncRegistration::new("targets_of")
        .with_comments(["/// The nodes a command's flags name: `args` is its ARGS, whose nodes, endpoints, files and insecure are read as `talos::targets` reads them (its other keys are ignored)."])
        .set_into_module(m, {
            let session = session.clone();
            move |args: Map| native(|| targets(&session, &target_flags(&args)?))
        });
    FuncRegistration::new("each")
        .with_comments(["/// Runs `f(n)` on each node the command's flags name (`args` is its ARGS; or a list of nodes), one after the other, and returns the results in node order. Failed nodes: `WARNING: <errors>` on stderr and the others' results, or the error when no node answered (`talos::each(args, #{...}, f)` for other policies)."])
        .set_into_module(m, {
            let session = session.clone();
            move |ctx: NativeCallContext, args: Dynamic, f: FnPtr| {
                let nodes = nodes_of(&session, args)?;
                each(&ctx, nodes, &EachOpts::default(), &f)
            }
        });
    FuncRegistration::new("each")
        .with_comments(["/// `talos::each(args, f)` with options: `on_error` warn (default), fail (fail when any node failed, after all were asked) or keep (fail when none answered, else return #{items, errors}); `prefix` (`PREFIX: <errors>`); `errors`, how the failures read: short (default: one as is, several as go-multierror), whole (the same with go-multierror's trailing blank lines), multierror (always the list), lines (one a line, `error from node N: ` unless it names its node), stream (talosctl's stream errors); `flat` (list results joined into one list)."])
        .set_into_module(m, {
            let session = session.clone();
            move |ctx: NativeCallContext, args: Dynamic, opts: Map, f: FnPtr| {
                let o = native(|| EachOpts::read(&opts))?;
                let nodes = nodes_of(&session, args)?;
                each(&ctx, nodes, &o, &f)
            }
        });
}

/// The nodes of `args`: a command's ARGS, or nodes already resolved.
fn nodes_of(session: &Session, args: Dynamic) -> Result<Array, Box<EvalAltResult>> {
    if args.is_array() {
        return Ok(args.cast::<Array>());
    }
    native(|| match args.try_cast::<Map>() {
        Some(m) => targets(session, &target_flags(&m)?),
        None => Err(crate::error::hinted(
            "talos::each takes the command's ARGS or a list of nodes",
            "talos::each(ARGS, |n| n.version())",
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(node: &str, text: &str, names_node: bool) -> Failure {
        Failure {
            node: node.into(),
            text: text.into(),
            names_node,
            hints: Vec::new(),
            kind: None,
            go: None,
        }
    }

    fn message(err: Result<Dynamic, Box<EvalAltResult>>) -> String {
        match *err.unwrap_err() {
            EvalAltResult::ErrorRuntime(v, _) => v.cast::<ScriptError>().0.message,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn failures_read_as_talosctl_lists_them() {
        let one = [failure("a", "node a: down", true)];
        let two = [failure("a", "x", false), failure("b", "node b: y", true)];
        assert_eq!(failure_text(&one, Listing::Short, ""), "node a: down");
        assert_eq!(
            failure_text(&two, Listing::Short, ""),
            "2 errors occurred:\n\t* x\n\t* node b: y"
        );
        assert_eq!(
            failure_text(&two, Listing::Whole, "error restarting process"),
            "error restarting process: 2 errors occurred:\n\t* x\n\t* node b: y\n\n"
        );
        assert_eq!(
            failure_text(&one, Listing::Multierror, "error getting members"),
            "error getting members: 1 error occurred:\n\t* node a: down"
        );
        assert_eq!(
            failure_text(&two, Listing::Lines, ""),
            "error from node a: x\nnode b: y"
        );
        assert_eq!(
            failure_text(&two, Listing::Stream, ""),
            "2 errors occurred:\n x\n node b: y"
        );
    }

    #[test]
    fn talosctls_words_list_a_nodes_refusal_and_say_a_failed_call_alone() {
        let worded = |go: Go| Failure {
            go: Some(go),
            ..failure("a", "node a: Call: x", true)
        };
        let refused = [worded(Go::Node {
            node: "a".into(),
            status: "rpc error: code = Unknown desc = x".into(),
        })];
        let down = [worded(Go::Direct(
            "rpc error: code = Unavailable desc = y".into(),
        ))];
        assert_eq!(
            failure_text(&refused, Listing::Whole, "error restarting process"),
            "error restarting process: 1 error occurred:\n\t* a: rpc error: code = Unknown desc = x\n\n"
        );
        assert_eq!(
            failure_text(&down, Listing::Multierror, "error getting members"),
            "error getting members: rpc error: code = Unavailable desc = y"
        );
        assert_eq!(
            failure_text(&refused, Listing::Stream, ""),
            "1 error occurred:\n rpc error: code = Unknown desc = x"
        );
        let list = EachOpts {
            on_error: OnError::Keep,
            errors: Listing::Stream,
            direct_prefix: "error fetching logs".into(),
            ..EachOpts::default()
        };
        let kept = settle(Array::new(), refused.to_vec(), 1, &list).unwrap();
        assert_eq!(
            kept.cast::<Map>()["errors"].clone().cast::<Array>()[0].to_string(),
            "rpc error: code = Unknown desc = x"
        );
        assert_eq!(
            message(settle(Array::new(), down.to_vec(), 1, &list)),
            "error fetching logs: rpc error: code = Unavailable desc = y"
        );
    }

    #[test]
    fn the_policy_decides_between_failing_warning_and_keeping() {
        let items = || vec![Dynamic::from(1_i64)];
        let some = || vec![failure("b", "down", false)];
        let warn = EachOpts::default();
        let got = settle(items(), some(), 2, &warn).unwrap();
        assert_eq!(got.cast::<Array>().len(), 1);
        assert_eq!(message(settle(Array::new(), some(), 1, &warn)), "down");
        let fail = EachOpts {
            on_error: OnError::Fail,
            ..EachOpts::default()
        };
        assert_eq!(message(settle(items(), some(), 2, &fail)), "down");
        assert!(settle(items(), Vec::new(), 2, &fail).is_ok());
        let keep = EachOpts {
            on_error: OnError::Keep,
            errors: Listing::Lines,
            ..EachOpts::default()
        };
        let kept = settle(items(), some(), 2, &keep).unwrap().cast::<Map>();
        assert_eq!(
            kept["errors"].clone().cast::<Array>()[0].to_string(),
            "error from node b: down"
        );
        assert!(settle(Array::new(), some(), 1, &keep).is_err());
    }

    #[test]
    fn options_are_typed() {
        let mut m = Map::new();
        m.insert("on_error".into(), "fail".into());
        m.insert("errors".into(), "lines".into());
        let o = EachOpts::read(&m).unwrap();
        assert_eq!((o.on_error, o.errors), (OnError::Fail, Listing::Lines));
        m.insert("on_error".into(), "ignore".into());
        let err = EachOpts::read(&m).unwrap_err().to_string();
        assert!(err.contains("must be warn, fail or keep"), "{err}");
    }
}
