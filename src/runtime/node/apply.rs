//! `n.apply(config, opts)`: sends a machine config to a node. A patch (what `render()` returns)
//! is first made whole from the project's secrets, as `talm apply` does with a node file
//! without templates; a whole config goes as it is.

use std::time::Duration;

use anyhow::Result;
use rhai::{Array, Dynamic, Engine, FuncRegistration, Map};

use crate::proto::machine;
use crate::runtime::native;
use crate::runtime::node::opts::ApplyOpts;
use crate::runtime::node::Node;
use crate::runtime::session::Session;
use crate::talos::block_on;

/// The mode a node reports it applied a config in, by its CLI name.
fn mode_name(m: i32) -> String {
    use machine::apply_configuration_request::Mode;
    let mode = Mode::try_from(m).unwrap_or(Mode::Auto);
    crate::runtime::choices::name(&crate::cli::values::ApplyMode::from(mode))
}

/// `n.apply(config, #{mode, dry_run, timeout})`: sends a machine config.
pub(in crate::runtime) fn apply(n: &Node, config: &str, o: &ApplyOpts) -> Result<Map> {
    let try_timeout = o.timeout.unwrap_or(Duration::from_secs(60));
    let req = machine::ApplyConfigurationRequest {
        data: config.as_bytes().to_vec(),
        mode: machine::apply_configuration_request::Mode::from(o.mode) as i32,
        dry_run: o.dry_run,
        try_mode_timeout: Some(prost_types::Duration {
            seconds: try_timeout.as_secs() as i64,
            nanos: try_timeout.subsec_nanos() as i32,
        }),
    };
    let r = n.with(|c| block_on(c.apply(req)))?;
    let mut m = Map::new();
    m.insert("mode".into(), mode_name(r.mode).into());
    m.insert("mode_details".into(), r.mode_details.into());
    m.insert(
        "warnings".into(),
        r.warnings
            .into_iter()
            .map(Dynamic::from)
            .collect::<Array>()
            .into(),
    );
    Ok(m)
}

/// `n.apply(config, opts)`: the config made whole from the project when it is a patch, sent.
fn apply_config(session: &Session, n: &Node, config: &str, o: &ApplyOpts) -> Result<Map> {
    crate::progress::stage(crate::progress::Stage::Apply);
    if o.as_is {
        return apply(n, config, o);
    }
    let root = session.settings().root;
    let whole = crate::runtime::local::render::whole_config(root.as_deref(), config)?;
    apply(n, &whole, o)
}

pub fn register(engine: &mut Engine, session: &Session) {
    FuncRegistration::new("apply")
        .with_comments(["/// Sends a machine config (YAML text or a map): a patch (what `render()` returns) is first merged into the config generated from the project's secrets, as `talm apply` does; a whole config goes as it is. `opts` has `mode` (auto, no-reboot, reboot, staged, try), `dry_run`, `timeout` (try-mode rollback, default 1m), `as_is` (send the text unchanged even when it looks like a patch). Returns #{mode, mode_details, warnings}."])
        .register_into_engine(engine, {
            let session = session.clone();
            move |n: &mut Node, config: &str, opts: Map| native(|| apply_config(&session, n, config, &ApplyOpts::read(&opts)?))
        });
    FuncRegistration::new("apply")
        .with_comments(["/// `n.apply(config, #{})`: mode auto."])
        .register_into_engine(engine, {
            let session = session.clone();
            move |n: &mut Node, config: &str| {
                native(|| apply_config(&session, n, config, &ApplyOpts::default()))
            }
        });
    FuncRegistration::new("apply")
        .with_comments([
            "/// `n.apply(config, opts)` with the config as a map (written out as YAML).",
        ])
        .register_into_engine(engine, {
            let session = session.clone();
            move |n: &mut Node, config: Map, opts: Map| {
                native(|| {
                    let v: serde_yaml_ng::Value = rhai::serde::from_dynamic(&config.into())?;
                    let text = crate::yaml::to_string(&v);
                    apply_config(&session, n, &text, &ApplyOpts::read(&opts)?)
                })
            }
        });
}
