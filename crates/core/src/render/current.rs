//! The node a render is for: [`with_current`] names it for this thread; the project's compiled
//! templates read that node's facts through [`lookup_current`] and its preset logic through
//! [`find_current`] (references, converted straight into Rhai values), so one compiled engine
//! serves every node.

use std::cell::RefCell;
use std::sync::Arc;

use serde_yaml_ng::{Mapping, Value};

use talm_wire::facts::{Facts, Found};

thread_local! {
    /// The facts of the node this thread is rendering for.
    static CURRENT: RefCell<Option<Arc<Facts>>> = const { RefCell::new(None) };
}

/// Runs `f` with `facts` as this thread's current node (restoring the previous one after).
pub fn with_current<R>(facts: &Arc<Facts>, f: impl FnOnce() -> R) -> R {
    super::scoped(&CURRENT, facts.clone(), f)
}

/// `lookup` over the current node's facts (`{}` for everything outside a render).
pub fn lookup_current(kind: &str, namespace: &str, id: &str) -> Value {
    let facts = CURRENT.with(|c| c.borrow().clone());
    match facts {
        Some(f) => f.lookup(kind, namespace, id),
        None => Value::Mapping(Mapping::new()),
    }
}

/// `f` over what a lookup finds in the current node's facts (nothing outside a render).
pub fn find_current<R>(kind: &str, namespace: &str, id: &str, f: impl FnOnce(Found<'_>) -> R) -> R {
    let facts = CURRENT.with(|c| c.borrow().clone());
    match facts {
        Some(facts) => f(facts.find(kind, namespace, id)),
        None => f(Found::Nothing),
    }
}
