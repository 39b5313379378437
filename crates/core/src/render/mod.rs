//! Rendering: node facts and their lookup, and the Tera environment that turns a project's
//! templates plus values and facts into Talos config patches.

pub mod cache;
pub mod context;
pub mod current;
pub mod discovered;
pub mod dynamic;
pub mod engine;
pub mod gate;
pub mod kept;
pub mod once;
pub mod pipeline;
pub mod prepared;
pub mod seal;
pub mod verify;
pub mod watch;

use std::cell::RefCell;
use std::thread::LocalKey;

/// Runs `f` with `value` in this thread's `slot` (the node being rendered, the running script's
/// kept results), restoring what the slot held before however `f` ends.
pub(crate) fn scoped<T: 'static, R>(
    slot: &'static LocalKey<RefCell<Option<T>>>,
    value: T,
    f: impl FnOnce() -> R,
) -> R {
    struct Restore<T: 'static>(&'static LocalKey<RefCell<Option<T>>>, Option<T>);
    impl<T: 'static> Drop for Restore<T> {
        fn drop(&mut self) {
            let previous = self.1.take();
            self.0.with(|c| *c.borrow_mut() = previous);
        }
    }
    let previous = slot.with(|c| c.borrow_mut().replace(value));
    let _restore = Restore(slot, previous);
    f()
}
