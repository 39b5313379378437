//! Render data as Rhai values and back, converted directly: node facts (for `lookup`, and
//! whole from `n.discover()` into `render::template` and `config::declared`), the arguments of
//! the preset logic (`ARGS`) and the `node` map it returns. Through Rhai's serde bridge these
//! conversions took a tenth of a patch render (`cargo bench --bench render`), and a fleet's
//! facts crossing twice per command 0.6 ms a node. What the direct path does not take as it is
//! (YAML tags, keys that are not text, integers past `i64`, values Rhai keeps shared or custom)
//! goes through the bridge still, so both read every value alike.

use anyhow::Result;
use rhai::{Array, Dynamic, Map};
use serde_json::Value as Json;
use serde_yaml_ng::Value as Yaml;

use talm_wire::facts::{Facts, Found};

/// A YAML value as a Rhai value.
pub fn from_yaml(v: &Yaml) -> Result<Dynamic> {
    match direct_yaml(v) {
        Some(d) => Ok(d),
        None => Ok(rhai::serde::to_dynamic(v)?),
    }
}

fn direct_yaml(v: &Yaml) -> Option<Dynamic> {
    Some(match v {
        Yaml::Null => Dynamic::UNIT,
        Yaml::Bool(b) => (*b).into(),
        Yaml::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None if n.is_f64() => n.as_f64()?.into(),
            None => return None,
        },
        Yaml::String(s) => s.as_str().into(),
        Yaml::Sequence(items) => items
            .iter()
            .map(direct_yaml)
            .collect::<Option<Array>>()?
            .into(),
        Yaml::Mapping(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(k.as_str()?.into(), direct_yaml(v)?);
            }
            out.into()
        }
        Yaml::Tagged(_) => return None,
    })
}

/// A JSON value as a Rhai value.
pub fn from_json(v: &Json) -> Result<Dynamic> {
    match direct_json(v) {
        Some(d) => Ok(d),
        None => Ok(rhai::serde::to_dynamic(v)?),
    }
}

fn direct_json(v: &Json) -> Option<Dynamic> {
    Some(match v {
        Json::Null => Dynamic::UNIT,
        Json::Bool(b) => (*b).into(),
        Json::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None if n.is_f64() => n.as_f64()?.into(),
            None => return None,
        },
        Json::String(s) => s.as_str().into(),
        Json::Array(items) => items
            .iter()
            .map(direct_json)
            .collect::<Option<Array>>()?
            .into(),
        Json::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(k.as_str().into(), direct_json(v)?);
            }
            out.into()
        }
    })
}

/// A Rhai value as JSON.
pub fn to_json(v: &Dynamic) -> Result<Json> {
    to_tree(v)
}

/// A Rhai value as YAML.
pub fn to_yaml(v: &Dynamic) -> Result<Yaml> {
    to_tree(v)
}

/// A Rhai value as Tera reads it: as [`to_json`] and then into Tera, in one step (a JSON
/// number ≥ 0 reaches Tera as unsigned, NaN and infinities as none, as through JSON).
pub fn to_tera(v: &Dynamic) -> Result<tera::Value> {
    match direct_to(v) {
        Some(t) => Ok(t),
        None => Ok(tera::Value::from_serializable(&to_json(v)?)),
    }
}

/// A Rhai value as a tree: directly, else through the bridge.
fn to_tree<T: Tree + serde::de::DeserializeOwned>(v: &Dynamic) -> Result<T> {
    match direct_to(v) {
        Some(t) => Ok(t),
        None => Ok(rhai::serde::from_dynamic(v)?),
    }
}

/// A tree of data a Rhai value converts into directly: JSON or YAML.
trait Tree: Sized {
    fn null() -> Self;
    fn boolean(b: bool) -> Self;
    fn int(i: i64) -> Self;
    fn float(f: f64) -> Self;
    fn text(s: String) -> Self;
    fn list(items: Vec<Self>) -> Self;
    fn map(entries: Vec<(String, Self)>) -> Self;
}

impl Tree for Json {
    fn null() -> Json {
        Json::Null
    }
    fn boolean(b: bool) -> Json {
        b.into()
    }
    fn int(i: i64) -> Json {
        i.into()
    }
    fn float(f: f64) -> Json {
        serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number)
    }
    fn text(s: String) -> Json {
        s.into()
    }
    fn list(items: Vec<Json>) -> Json {
        Json::Array(items)
    }
    fn map(entries: Vec<(String, Json)>) -> Json {
        Json::Object(entries.into_iter().collect())
    }
}

impl Tree for tera::Value {
    fn null() -> tera::Value {
        tera::Value::none()
    }
    fn boolean(b: bool) -> tera::Value {
        b.into()
    }
    fn int(i: i64) -> tera::Value {
        match u64::try_from(i) {
            Ok(u) => u.into(),
            Err(_) => i.into(),
        }
    }
    fn float(f: f64) -> tera::Value {
        if f.is_finite() {
            f.into()
        } else {
            tera::Value::none()
        }
    }
    fn text(s: String) -> tera::Value {
        s.into()
    }
    fn list(items: Vec<tera::Value>) -> tera::Value {
        items.into()
    }
    fn map(entries: Vec<(String, tera::Value)>) -> tera::Value {
        entries
            .into_iter()
            .map(|(k, v)| (tera::value::Key::from(k), v))
            .collect::<tera::Map>()
            .into()
    }
}

impl Tree for Yaml {
    fn null() -> Yaml {
        Yaml::Null
    }
    fn boolean(b: bool) -> Yaml {
        Yaml::Bool(b)
    }
    fn int(i: i64) -> Yaml {
        Yaml::Number(i.into())
    }
    fn float(f: f64) -> Yaml {
        Yaml::Number(f.into())
    }
    fn text(s: String) -> Yaml {
        Yaml::String(s)
    }
    fn list(items: Vec<Yaml>) -> Yaml {
        Yaml::Sequence(items)
    }
    fn map(entries: Vec<(String, Yaml)>) -> Yaml {
        Yaml::Mapping(
            entries
                .into_iter()
                .map(|(k, v)| (Yaml::String(k), v))
                .collect(),
        )
    }
}

/// `v` as a tree, or `None` when it is not plain data (shared, custom): the bridge's then.
fn direct_to<T: Tree>(v: &Dynamic) -> Option<T> {
    if v.is_shared() {
        return None;
    }
    if v.is_unit() {
        return Some(T::null());
    }
    if let Ok(b) = v.as_bool() {
        return Some(T::boolean(b));
    }
    if let Ok(i) = v.as_int() {
        return Some(T::int(i));
    }
    if let Ok(f) = v.as_float() {
        return Some(T::float(f));
    }
    if let Ok(c) = v.as_char() {
        return Some(T::text(c.to_string()));
    }
    if let Some(s) = v.read_lock::<rhai::ImmutableString>() {
        return Some(T::text(s.to_string()));
    }
    if let Ok(items) = v.as_array_ref() {
        return items
            .iter()
            .map(direct_to)
            .collect::<Option<Vec<T>>>()
            .map(T::list);
    }
    if let Ok(m) = v.as_map_ref() {
        return m
            .iter()
            .map(|(k, v)| Some((k.to_string(), direct_to(v)?)))
            .collect::<Option<Vec<(String, T)>>>()
            .map(T::map);
    }
    None
}

/// A node's facts as the map scripts see (`n.discover()`), as Rhai's serde bridge writes them.
pub fn from_facts(f: &Facts) -> Result<Dynamic> {
    let mut m = Map::new();
    if !f.node.is_empty() {
        m.insert("node".into(), f.node.as_str().into());
    }
    if let Some(v) = &f.version {
        m.insert("version".into(), from_yaml(v)?);
    }
    let mut resources = Map::new();
    for (kind, items) in &f.resources {
        let items = items.iter().map(from_yaml).collect::<Result<Array>>()?;
        resources.insert(kind.as_str().into(), items.into());
    }
    m.insert("resources".into(), resources.into());
    Ok(m.into())
}

/// Facts from the map a script passes (`facts: n.discover()`), read as Rhai's serde bridge
/// reads them (which reads, and names the fault of, a map of another shape).
pub fn to_facts(v: &Dynamic) -> Result<Facts> {
    match direct_to_facts(v) {
        Some(f) => Ok(f),
        None => Ok(rhai::serde::from_dynamic(v)?),
    }
}

fn direct_to_facts(v: &Dynamic) -> Option<Facts> {
    if v.is_shared() {
        return None;
    }
    let m = v.as_map_ref().ok()?;
    let mut f = Facts::empty();
    for (k, v) in m.iter() {
        match k.as_str() {
            "node" => f.node = v.read_lock::<rhai::ImmutableString>()?.to_string(),
            "version" if v.is_unit() => f.version = None,
            "version" => f.version = Some(direct_to::<Yaml>(v)?),
            "resources" => {
                if v.is_shared() {
                    return None;
                }
                for (kind, items) in v.as_map_ref().ok()?.iter() {
                    if items.is_shared() {
                        return None;
                    }
                    let items = items
                        .as_array_ref()
                        .ok()?
                        .iter()
                        .map(direct_to::<Yaml>)
                        .collect::<Option<Vec<Yaml>>>()?;
                    f.resources.insert(kind.to_string(), items);
                }
            }
            _ => {}
        }
    }
    Some(f)
}

/// What `lookup` answers for what was found: the resource, `#{apiVersion: "v1", kind: "List",
/// items}` for a list, `#{}` for nothing.
pub fn from_found(found: Found<'_>) -> Result<Dynamic> {
    match found {
        Found::One(r) => from_yaml(r),
        Found::List(items) => {
            let items = items
                .into_iter()
                .map(from_yaml)
                .collect::<Result<Array>>()?;
            let mut list = Map::new();
            list.insert("apiVersion".into(), "v1".into());
            list.insert("kind".into(), "List".into());
            list.insert("items".into(), items.into());
            Ok(list.into())
        }
        Found::Nothing => Ok(Map::new().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct path and Rhai's serde bridge give the same values, both ways.
    #[test]
    fn direct_conversions_read_as_the_serde_bridge() {
        let text = "a: 1\nb: -2.5\nc: [x, true, ~, 3.0]\nd: {e: {f: \"g\"}}\nh: 9223372036854775807\ni: ''\nj: 1e300\n";
        let yaml: Yaml = serde_yaml_ng::from_str(text).unwrap();
        let direct = from_yaml(&yaml).unwrap();
        let bridge = rhai::serde::to_dynamic(&yaml).unwrap();
        assert_eq!(format!("{direct:?}"), format!("{bridge:?}"));
        let json: Json = serde_json::to_value(&yaml).unwrap();
        assert_eq!(
            format!("{:?}", from_json(&json).unwrap()),
            format!("{bridge:?}")
        );
        let back: Json = rhai::serde::from_dynamic(&bridge).unwrap();
        assert_eq!(to_json(&direct).unwrap(), back);
        // Not taken directly, the bridge reads them: a tag, a key that is not text, a big
        // integer, a char, a NaN.
        for odd in ["!t x", "{1: a}", "18446744073709551615"] {
            let v: Yaml = serde_yaml_ng::from_str(odd).unwrap();
            assert!(direct_yaml(&v).is_none(), "{odd}");
            assert_eq!(
                format!("{:?}", from_yaml(&v).ok()),
                format!("{:?}", rhai::serde::to_dynamic(&v).ok()),
                "{odd}"
            );
        }
        for d in [
            Dynamic::from('c'),
            Dynamic::from(f64::NAN),
            Dynamic::from(2.0_f64),
        ] {
            let bridge: Json = rhai::serde::from_dynamic(&d).unwrap();
            assert_eq!(to_json(&d).unwrap(), bridge, "{d:?}");
        }
        let shared = Dynamic::from(Map::new()).into_shared();
        assert!(direct_to::<Json>(&shared).is_none());
        assert_eq!(
            to_json(&shared).ok(),
            rhai::serde::from_dynamic::<Json>(&shared).ok()
        );
    }

    /// A value reaches Tera directly as it did through JSON: kinds of numbers (≥ 0 unsigned),
    /// NaN and infinities as none, key order.
    #[test]
    fn tera_reads_a_value_as_through_json() {
        let text = "a: 1\nb: -2\nc: [x, true, ~, 3.5, 0]\nd: {z: {f: \"g\"}, e: []}\nh: 9223372036854775807\n";
        let yaml: Yaml = serde_yaml_ng::from_str(text).unwrap();
        let mut values = vec![from_yaml(&yaml).unwrap()];
        values.extend([
            Dynamic::from(f64::NAN),
            Dynamic::from(f64::INFINITY),
            Dynamic::from(-0.5_f64),
            Dynamic::from('c'),
        ]);
        for d in values {
            let through = tera::Value::from_serializable(&to_json(&d).unwrap());
            let direct = to_tera(&d).unwrap();
            // Debug shows the number kinds (U64 against I64) and the order of maps.
            assert_eq!(format!("{direct:?}"), format!("{through:?}"), "{d:?}");
        }
        // What JSON cannot take, Tera cannot either.
        let shared = Dynamic::from(Map::new()).into_shared();
        assert_eq!(to_tera(&shared).is_err(), to_json(&shared).is_err());
    }

    /// Facts cross into Rhai and back as through the serde bridge.
    #[test]
    fn facts_convert_as_the_serde_bridge() {
        let golden = include_str!("../../../../tests/fixtures/talm-golden/facts.yaml");
        let mut facts = Facts::parse(golden, "facts.yaml").unwrap();
        facts.node = "10.0.0.1".into();
        facts.version = Some(serde_yaml_ng::from_str("{tag: v1.12.1, arch: amd64}").unwrap());
        let direct = from_facts(&facts).unwrap();
        let bridge = rhai::serde::to_dynamic(&facts).unwrap();
        assert_eq!(to_json(&direct).unwrap(), to_json(&bridge).unwrap());
        assert!(direct_to_facts(&bridge).unwrap() == facts);
        assert!(to_facts(&direct).unwrap() == facts);
        // No node, no version, a field scripts added: read alike.
        let bare = rhai::serde::to_dynamic(Facts::empty()).unwrap();
        let mut m = bare.clone().cast::<Map>();
        m.insert("extra".into(), 1_i64.into());
        m.insert("version".into(), Dynamic::UNIT);
        let bridged: Facts = rhai::serde::from_dynamic(&m.clone().into()).unwrap();
        assert!(direct_to_facts(&m.into()).unwrap() == bridged);
        // A map of another shape is the bridge's to refuse.
        let mut bad = Map::new();
        bad.insert("resources".into(), "links".into());
        assert!(direct_to_facts(&bad.clone().into()).is_none());
        assert!(to_facts(&bad.into()).is_err());
    }
}
