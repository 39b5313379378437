//! `tpl::` script functions: the Go-template field access, comparison and truthiness every
//! preset module needs on every line, done natively. As script functions (each Rhai script call
//! copies its arguments) they took more than half of the preset logic's run; these read the
//! first argument in place and copy only the field they return (figures in
//! `docs/performance.md`, `cargo bench --bench render`).
//!
//! `tpl::get(v, key)` is `v[key]` when `v` is a map holding `key`, else `()` (reading a field of
//! nil gives nil in Go templates); `tpl::spec(res, key)` is `res.spec[key]`, `tpl::id(res)` is
//! `res.metadata.id`, `tpl::items(res)` the array under `items` (else `[]`); `tpl::truthy(v)` is
//! Go's truthiness (false, 0, "", nil and empty lists or maps are false); `tpl::is_nil(v)`;
//! `tpl::eq(a, b)` is Go's `eq`: false when either side is nil or their types differ;
//! `tpl::str(v)` is Sprig's `toString` (`<nil>` for nil, a whole float below 1e6 without its
//! fraction), `tpl::text(v)` what `{{ v }}` prints (`""` for nil, else `tpl::str`), and
//! `tpl::int(v)` Sprig's `int` (nil and text that is not a number give 0, floats truncate).

use std::sync::OnceLock;

use rhai::{
    Array, Dynamic, Engine, EvalAltResult, FuncRegistration, ImmutableString, Module,
    NativeCallContext, Shared,
};

/// `v[key]` when `v` is a map holding `key` (a string), else `()`.
pub fn get(v: &Dynamic, key: &str) -> Dynamic {
    v.as_map_ref()
        .ok()
        .and_then(|m| m.get(key).cloned())
        .unwrap_or(Dynamic::UNIT)
}

/// `v[outer][key]`, `()` when either level is missing.
pub fn get2(v: &Dynamic, outer: &str, key: &str) -> Dynamic {
    let Ok(m) = v.as_map_ref() else {
        return Dynamic::UNIT;
    };
    m.get(outer).map_or(Dynamic::UNIT, |inner| get(inner, key))
}

/// Go template truthiness.
pub fn truthy(v: &Dynamic) -> bool {
    if v.is_unit() {
        return false;
    }
    if let Ok(b) = v.as_bool() {
        return b;
    }
    if let Ok(i) = v.as_int() {
        return i != 0;
    }
    if let Ok(f) = v.as_float() {
        return f != 0.0;
    }
    if v.is_string() {
        return v
            .read_lock::<rhai::ImmutableString>()
            .is_some_and(|s| !s.is_empty());
    }
    if let Ok(a) = v.as_array_ref() {
        return !a.is_empty();
    }
    if let Ok(m) = v.as_map_ref() {
        return !m.is_empty();
    }
    true
}

/// Go template `eq`: false when either side is nil or the types differ, else `a == b` (scalars
/// compared here, anything else by the `==` operator).
pub fn eq(ctx: &NativeCallContext, a: &Dynamic, b: Dynamic) -> Result<bool, Box<EvalAltResult>> {
    if a.is_unit() || b.is_unit() || a.type_name() != b.type_name() {
        return Ok(false);
    }
    if let (Some(x), Some(y)) = (
        a.read_lock::<ImmutableString>(),
        b.read_lock::<ImmutableString>(),
    ) {
        return Ok(*x == *y);
    }
    if let (Ok(x), Ok(y)) = (a.as_int(), b.as_int()) {
        return Ok(x == y);
    }
    if let (Ok(x), Ok(y)) = (a.as_bool(), b.as_bool()) {
        return Ok(x == y);
    }
    ctx.call_native_fn("==", (a.clone(), b))
}

/// Sprig `toString`: nil gives `<nil>`, text stays as it is, a whole float below 1e6 prints
/// without a fraction; anything else as the script's `to_string` prints it.
pub fn go_str(ctx: &NativeCallContext, v: Dynamic) -> Result<Dynamic, Box<EvalAltResult>> {
    if v.is_unit() {
        return Ok("<nil>".into());
    }
    if v.is_string() {
        return Ok(v);
    }
    if let Ok(i) = v.as_int() {
        return Ok(i.to_string().into());
    }
    if let Ok(f) = v.as_float() {
        if f == f.floor() && f.abs() < 1_000_000.0 {
            return Ok((f as i64).to_string().into());
        }
    }
    ctx.call_native_fn::<Dynamic>("to_string", (v,))
}

/// What `{{ v }}` prints: "" for nil, else [`go_str`].
pub fn go_text(ctx: &NativeCallContext, v: Dynamic) -> Result<Dynamic, Box<EvalAltResult>> {
    if v.is_unit() {
        return Ok("".into());
    }
    go_str(ctx, v)
}

/// Sprig `int`: nil, lists, maps and text that is not a whole number give 0, floats
/// truncate (as the script's `to_int`), booleans give 1 or 0.
pub fn go_int(ctx: &NativeCallContext, v: Dynamic) -> Result<rhai::INT, Box<EvalAltResult>> {
    if let Ok(i) = v.as_int() {
        return Ok(i);
    }
    if let Ok(b) = v.as_bool() {
        return Ok(rhai::INT::from(b));
    }
    if v.as_float().is_ok() {
        return ctx.call_native_fn("to_int", (v,));
    }
    match v.read_lock::<ImmutableString>() {
        Some(s) => Ok(s.trim().parse::<rhai::INT>().unwrap_or(0)),
        None => Ok(0),
    }
}

fn module() -> Shared<Module> {
    /// Listed in [`talm_base::caches::KEPT`].
    static MODULE: OnceLock<Shared<Module>> = OnceLock::new();
    MODULE
        .get_or_init(|| {
            let mut m = Module::new();
            FuncRegistration::new("get")
                .with_comments(["/// `v[key]` when v is a map holding key, else () (Go's nil)."])
                .set_into_module(&mut m, |v: &mut Dynamic, key: &str| get(v, key));
            FuncRegistration::new("spec")
                .with_comments(["/// `res.spec[key]`, () when either level is missing."])
                .set_into_module(&mut m, |res: &mut Dynamic, key: &str| {
                    get2(res, "spec", key)
                });
            FuncRegistration::new("id")
                .with_comments(["/// `res.metadata.id`, () when missing."])
                .set_into_module(&mut m, |res: &mut Dynamic| get2(res, "metadata", "id"));
            FuncRegistration::new("items")
                .with_comments(["/// The array under `items` of a list lookup, else []."])
                .set_into_module(&mut m, |res: &mut Dynamic| {
                    let list = get(res, "items");
                    if list.is_array() {
                        list
                    } else {
                        Dynamic::from_array(Array::new())
                    }
                });
            FuncRegistration::new("truthy")
                .with_comments([
                    "/// Go truthiness: false, 0, 0.0, \"\", (), [] and #{} are false.",
                ])
                .set_into_module(&mut m, |v: &mut Dynamic| truthy(v));
            FuncRegistration::new("eq")
                .with_comments([
                    "/// Go's `eq`: false when either side is () or the types differ, else a == b.",
                ])
                .set_into_module(
                    &mut m,
                    |ctx: NativeCallContext, a: &mut Dynamic, b: Dynamic| eq(&ctx, a, b),
                );
            FuncRegistration::new("str")
                .with_comments(["/// Sprig's toString: <nil> for (), whole floats below 1e6 without a fraction."])
                .set_into_module(&mut m, |ctx: NativeCallContext, v: Dynamic| go_str(&ctx, v));
            FuncRegistration::new("text")
                .with_comments(["/// What `{{ v }}` prints: \"\" for (), else tpl::str(v)."])
                .set_into_module(&mut m, |ctx: NativeCallContext, v: Dynamic| go_text(&ctx, v));
            FuncRegistration::new("int")
                .with_comments(["/// Sprig's int: 0 for (), lists, maps and text that is no whole number; floats truncate."])
                .set_into_module(&mut m, |ctx: NativeCallContext, v: Dynamic| go_int(&ctx, v));
            FuncRegistration::new("is_nil")
                .with_comments(["/// Whether v is () (Go's nil)."])
                .set_into_module(&mut m, |v: &mut Dynamic| v.is_unit());
            m.build_index();
            Shared::new(m)
        })
        .clone()
}

/// Registers `tpl::` on `engine`.
pub fn register(engine: &mut Engine) {
    engine.register_static_module("tpl", module());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(script: &str) -> Dynamic {
        let mut engine = Engine::new();
        register(&mut engine);
        engine.eval::<Dynamic>(script).unwrap()
    }

    #[test]
    fn get_reads_maps_only() {
        assert_eq!(eval(r#"tpl::get(#{a: 1}, "a")"#).as_int(), Ok(1));
        assert!(eval(r#"tpl::get(#{a: 1}, "b")"#).is_unit());
        assert!(eval(r#"tpl::get((), "a")"#).is_unit());
        assert!(eval(r#"tpl::get([1], "a")"#).is_unit());
        assert!(eval(r#"tpl::get("a", "a")"#).is_unit());
        let v = r#"let r = #{spec: #{kind: "vlan"}, metadata: #{id: "eth0"}};"#;
        assert_eq!(
            eval(&format!(r#"{v} tpl::spec(r, "kind")"#)).to_string(),
            "vlan"
        );
        assert!(eval(&format!(r#"{v} tpl::spec(r, "mtu")"#)).is_unit());
        assert!(eval(r#"tpl::spec(#{spec: 1}, "mtu")"#).is_unit());
        assert_eq!(eval(&format!("{v} tpl::id(r)")).to_string(), "eth0");
        assert!(eval("tpl::id(#{})").is_unit());
    }

    #[test]
    fn items_of_a_list_lookup() {
        assert_eq!(eval("tpl::items(#{items: [1, 2]}).len()").as_int(), Ok(2));
        assert_eq!(eval("tpl::items(#{items: 3}).len()").as_int(), Ok(0));
        assert_eq!(eval("tpl::items(#{}).len()").as_int(), Ok(0));
        assert_eq!(eval("tpl::items(()).len()").as_int(), Ok(0));
    }

    /// The natives agree with the script functions the stdlib used before them.
    #[test]
    fn printing_and_int_as_sprig() {
        let defs = r#"
            fn go_str(v) {
                switch type_of(v) {
                    "()" => "<nil>",
                    "string" => v,
                    "f64" => if v == v.floor() && v.abs() < 1000000.0 { v.to_int().to_string() } else { v.to_string() },
                    _ => v.to_string()
                }
            }
            fn text(v) { if tpl::is_nil(v) { "" } else { go_str(v) } }
            fn go_int(v) {
                switch type_of(v) {
                    "i64" => v,
                    "f64" => v.to_int(),
                    "bool" => if v { 1 } else { 0 },
                    "string" => { let t = v; t.trim(); let n = 0; try { n = parse_int(t); } catch { n = 0; } n },
                    _ => 0
                }
            }
        "#;
        for v in [
            "()",
            "\"x\"",
            "\"\"",
            "3",
            "-7",
            "2.0",
            "-2.0",
            "2.5",
            "999999.0",
            "1000000.0",
            "1e20",
            "true",
            "false",
            "'c'",
            "[1, \"a\"]",
            "#{a: 1}",
            "\" 42 \"",
            "\"+5\"",
            "\"4.5\"",
            "\"x1\"",
            "\"\"",
        ] {
            for (old, new) in [
                ("go_str", "tpl::str"),
                ("text", "tpl::text"),
                ("go_int", "tpl::int"),
            ] {
                let run = |f: &str| {
                    let mut engine = Engine::new();
                    register(&mut engine);
                    engine
                        .eval::<Dynamic>(&format!("{defs} {f}({v})"))
                        .map(|d| (d.type_name(), d.to_string()))
                        .map_err(|e| e.to_string().contains("Integer overflow"))
                };
                // Out of range for an integer, both fail.
                assert_eq!(run(new), run(old), "{new}({v})");
            }
        }
    }

    #[test]
    fn truthiness_as_go_templates() {
        for (src, want) in [
            ("()", false),
            ("false", false),
            ("true", true),
            ("0", false),
            ("2", true),
            ("0.0", false),
            ("0.5", true),
            (r#""""#, false),
            (r#""x""#, true),
            ("[]", false),
            ("[0]", true),
            ("#{}", false),
            ("#{a: ()}", true),
            ("'c'", true),
        ] {
            assert_eq!(
                eval(&format!("tpl::truthy({src})")).as_bool(),
                Ok(want),
                "{src}"
            );
        }
        assert_eq!(eval("tpl::is_nil(())").as_bool(), Ok(true));
        assert_eq!(eval("tpl::is_nil(0)").as_bool(), Ok(false));
        for (src, want) in [
            (r#""a", "a""#, true),
            (r#""a", "b""#, false),
            (r#""1", 1"#, false),
            ("1, 1", true),
            ("1, 1.0", false),
            ("1.5, 1.5", true),
            ("true, true", true),
            ("(), ()", false),
            (r#"(), """#, false),
            ("[1, 2], [1, 2]", true),
            ("#{a: 1}, #{a: 2}", false),
        ] {
            assert_eq!(
                eval(&format!("tpl::eq({src})")).as_bool(),
                Ok(want),
                "{src}"
            );
        }
        // A variable is read in place and left as it was.
        assert_eq!(
            eval(r#"let m = #{a: #{b: 1}}; let x = tpl::get(m, "a"); x.b = 2; m.a.b"#).as_int(),
            Ok(1)
        );
    }
}
