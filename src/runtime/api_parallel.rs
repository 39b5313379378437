//! `parallel(items, fn, limit)`: runs a script closure over items on several threads at once
//! (node operations overlap their network waits), keeping results in input order. An item's
//! error becomes its result (`is_error(r)`, `r.message`) unless `fail_fast` is asked for.
//! On a terminal each item gets a progress line on stderr.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rhai::{
    Array, Dynamic, Engine, EvalAltResult, FnPtr, FuncRegistration, Map, NativeCallContext,
};

use crate::talos::duration::{self, Zero};

fn error_value(item: &Dynamic, message: String) -> Dynamic {
    let mut m = Map::new();
    m.insert("is_error".into(), true.into());
    m.insert("message".into(), message.into());
    m.insert("item".into(), item.clone());
    m.into()
}

fn label(item: &Dynamic) -> String {
    if let Some(n) = item.clone().try_cast::<super::api_talos::Node>() {
        return n.name;
    }
    item.to_string()
}

fn bars(count: usize) -> Option<MultiProgress> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() || count == 0 {
        return None;
    }
    Some(MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

fn run(
    ctx: &NativeCallContext,
    items: Array,
    f: &FnPtr,
    limit: usize,
    fail_fast: bool,
) -> Result<Array, Box<EvalAltResult>> {
    let n = items.len();
    let limit = limit.clamp(1, n.max(1));
    let results: Vec<Mutex<Option<Dynamic>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let first_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let multi = bars(n);
    let style = ProgressStyle::with_template("{spinner} {prefix}: {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let lines: Vec<Option<ProgressBar>> = items
        .iter()
        .map(|it| {
            multi.as_ref().map(|m| {
                let b = m.add(ProgressBar::new_spinner());
                b.set_style(style.clone());
                b.set_prefix(label(it));
                b.set_message("waiting");
                b
            })
        })
        .collect();
    std::thread::scope(|s| {
        for _ in 0..limit {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n || stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(b) = &lines[i] {
                    b.set_message("running");
                    b.enable_steady_tick(std::time::Duration::from_millis(120));
                }
                let r = f.call_within_context::<Dynamic>(ctx, (items[i].clone(),));
                let value = match r {
                    Ok(v) => {
                        if let Some(b) = &lines[i] {
                            b.finish_with_message("done");
                        }
                        v
                    }
                    Err(e) => {
                        let err = crate::sandbox::from_rhai(*e, "parallel");
                        let msg = crate::error::render(&err);
                        let msg = msg.trim_start_matches("Error: ").trim_end().to_string();
                        if let Some(b) = &lines[i] {
                            b.finish_with_message(format!(
                                "failed: {}",
                                msg.lines().next().unwrap_or("")
                            ));
                        }
                        if fail_fast {
                            stop.store(true, Ordering::SeqCst);
                            first_error
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .get_or_insert(err);
                        }
                        error_value(&items[i], msg)
                    }
                };
                *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
            });
        }
    });
    if let Some(e) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(crate::sandbox::to_rhai(e));
    }
    Ok(results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or(Dynamic::UNIT)
        })
        .collect())
}

pub fn register(engine: &mut Engine) {
    FuncRegistration::new("parallel")
        .with_comments(["/// Calls `f(item)` for every item, `limit` at a time, and returns the results in input order; a failing item's result is an error value (`is_error(r)`, `r.message`)."])
        .register_into_engine(engine, |ctx: NativeCallContext, items: Array, f: FnPtr, limit: i64| {
            run(&ctx, items, &f, limit.max(1) as usize, false)
        });
    FuncRegistration::new("parallel")
        .with_comments(["/// `parallel(items, f)` with no limit: every item at once."])
        .register_into_engine(engine, |ctx: NativeCallContext, items: Array, f: FnPtr| {
            let n = items.len().max(1);
            run(&ctx, items, &f, n, false)
        });
    FuncRegistration::new("parallel")
        .with_comments(["/// `parallel(items, f, #{limit, fail_fast})`: with `fail_fast` the first error stops the rest and is raised."])
        .register_into_engine(engine, |ctx: NativeCallContext, items: Array, f: FnPtr, opts: Map| {
            let limit = opts.get("limit").and_then(|v| v.as_int().ok()).unwrap_or(items.len().max(1) as i64);
            let fail_fast = opts.get("fail_fast").and_then(|v| v.as_bool().ok()).unwrap_or(false);
            run(&ctx, items, &f, limit.max(1) as usize, fail_fast)
        });
    FuncRegistration::new("is_error")
        .with_comments(["/// Whether a `parallel` result is an item's error."])
        .register_into_engine(engine, |v: Dynamic| {
            v.read_lock::<Map>()
                .and_then(|m| m.get("is_error").and_then(|x| x.as_bool().ok()))
                .unwrap_or(false)
        });
    FuncRegistration::new("parse_duration_seconds")
        .with_comments([
            "/// Seconds in Go duration text (`90s`, `5m`, `1h30m`); an error when it is not one.",
        ])
        .register_into_engine(engine, |text: &str| {
            crate::sandbox::native(|| {
                let d = duration::flag("parse_duration_seconds", text, Zero::Allowed)?;
                // Within Go's range: at most 9223372036 seconds.
                Ok(d.as_secs() as i64)
            })
        });
    FuncRegistration::new("sleep")
        .with_comments(["/// Pauses the script for `seconds` (fractions allowed)."])
        .register_into_engine(engine, |seconds: f64| {
            crate::sandbox::native(|| sleep(seconds.to_string(), duration::from_seconds(seconds)))
        });
    FuncRegistration::new("sleep")
        .with_comments(["/// Pauses the script for whole `seconds`."])
        .register_into_engine(engine, |seconds: i64| {
            crate::sandbox::native(|| {
                sleep(seconds.to_string(), duration::from_seconds(seconds as f64))
            })
        });
}

/// `sleep(seconds)`: a negative, NaN or too long pause is an error, not a panic.
fn sleep(
    given: String,
    d: Result<std::time::Duration, duration::DurationError>,
) -> anyhow::Result<()> {
    std::thread::sleep(duration::checked("sleep", &given, d, Zero::Allowed)?);
    Ok(())
}
