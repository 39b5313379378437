//! `talm repl`: an interactive Rhai session over the talm API.

use anyhow::Result;

pub fn run(_args: rhai::Map) -> Result<i32> {
    Err(crate::error::plain("talm repl is not built yet"))
}
