//! Helm's `--set` path syntax: `a.b[0].c=x,d={1,2}` into a values tree, with Helm's typing
//! (`true`/`false`/`null`/integers without leading zeros) or all strings, and `\` escapes;
//! and the warning for a `--set` value that typing would not keep as written.

use anyhow::{bail, Result};
use serde_yaml_ng::{Mapping, Value};

/// How values are typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typing {
    /// `--set`: booleans, null and integers are recognised.
    Typed,
    /// `--set-string`: every value is a string.
    Strings,
}

/// Helm's value typing.
pub fn typed(val: &str) -> Value {
    if val.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if val.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if val.eq_ignore_ascii_case("null") {
        return Value::Null;
    }
    if val == "0" {
        return Value::from(0);
    }
    if !val.is_empty() && !val.starts_with('0') {
        if let Ok(i) = val.parse::<i64>() {
            return Value::from(i);
        }
    }
    Value::String(val.to_string())
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    typing: Typing,
    source: &'a str,
}

/// Parses one `--set` argument into `into`.
pub fn parse_into(arg: &str, typing: Typing, into: &mut Mapping) -> Result<()> {
    let mut p = Parser {
        chars: arg.chars().collect(),
        pos: 0,
        typing,
        source: arg,
    };
    while p.pos < p.chars.len() {
        p.key_into_map(into)?;
    }
    Ok(())
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    /// Reads up to (not including) the first unescaped char in `stops`; returns the text and
    /// the stop char (None at the end).
    fn read_until(&mut self, stops: &[char]) -> (String, Option<char>) {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == '\\' {
                if let Some(n) = self.peek() {
                    out.push(n);
                    self.pos += 1;
                    continue;
                }
                out.push(c);
                continue;
            }
            if stops.contains(&c) {
                return (out, Some(c));
            }
            out.push(c);
        }
        (out, None)
    }

    fn value(&self, text: &str) -> Value {
        match self.typing {
            Typing::Typed => typed(text),
            Typing::Strings => Value::String(text.to_string()),
        }
    }

    /// A value after `=`: a `{a,b}` list or a scalar up to the next comma.
    fn read_value(&mut self) -> Result<Value> {
        if self.peek() == Some('{') {
            self.pos += 1;
            let mut items = Vec::new();
            loop {
                let (item, stop) = self.read_until(&[',', '}']);
                match stop {
                    Some(',') => items.push(self.value(&item)),
                    Some('}') => {
                        if !(item.is_empty() && items.is_empty()) {
                            items.push(self.value(&item));
                        }
                        break;
                    }
                    _ => bail!("{}: list must terminate with '}}'", self.source),
                }
            }
            if let Some(c) = self.peek() {
                if c != ',' {
                    bail!("{}: unexpected {c:?} after a list", self.source);
                }
                self.pos += 1;
            }
            return Ok(Value::Sequence(items));
        }
        let (text, _) = self.read_until(&[',']);
        Ok(self.value(&text))
    }

    fn key_into_map(&mut self, map: &mut Mapping) -> Result<()> {
        let (key, stop) = self.read_until(&['=', '.', '[', ',']);
        if key.is_empty() && stop.is_some() {
            let at = stop.map(|c| format!(" before {c:?}")).unwrap_or_default();
            bail!(
                "{}: empty key{at}: every segment of a path needs a name (e.g. a.b=1)",
                self.source
            );
        }
        match stop {
            None => bail!("key {key:?} has no value"),
            Some(',') => bail!("key {key:?} has no value (cannot end with ,)"),
            Some('=') => {
                let v = self.read_value()?;
                map.insert(Value::String(key), v);
                Ok(())
            }
            Some('.') => {
                let k = Value::String(key.clone());
                let mut inner = match map.remove(&k) {
                    Some(Value::Mapping(m)) => m,
                    _ => Mapping::new(),
                };
                self.key_into_map(&mut inner)?;
                map.insert(k, Value::Mapping(inner));
                Ok(())
            }
            Some('[') => {
                let k = Value::String(key.clone());
                let mut list = match map.remove(&k) {
                    Some(Value::Sequence(s)) => s,
                    _ => Vec::new(),
                };
                self.index_into_list(&mut list, &key)?;
                map.insert(k, Value::Sequence(list));
                Ok(())
            }
            Some(_) => unreachable!("read_until stops only at the given chars"),
        }
    }

    fn index_into_list(&mut self, list: &mut Vec<Value>, key: &str) -> Result<()> {
        let (idx, stop) = self.read_until(&[']']);
        if stop != Some(']') {
            bail!("{}: unterminated index in {key:?}", self.source);
        }
        let i: usize = idx
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("{}: invalid index {idx:?} in {key:?}", self.source))?;
        if i > 65536 {
            bail!("{}: index {i} is too large", self.source);
        }
        while list.len() <= i {
            list.push(Value::Null);
        }
        match self.peek() {
            Some('=') => {
                self.pos += 1;
                list[i] = self.read_value()?;
                Ok(())
            }
            Some('.') => {
                self.pos += 1;
                let mut inner = match std::mem::take(&mut list[i]) {
                    Value::Mapping(m) => m,
                    _ => Mapping::new(),
                };
                self.key_into_map(&mut inner)?;
                list[i] = Value::Mapping(inner);
                Ok(())
            }
            Some('[') => {
                self.pos += 1;
                let mut inner = match std::mem::take(&mut list[i]) {
                    Value::Sequence(s) => s,
                    _ => Vec::new(),
                };
                self.index_into_list(&mut inner, key)?;
                list[i] = Value::Sequence(inner);
                Ok(())
            }
            _ => bail!("key {key:?}[{i}] has no value"),
        }
    }
}

/// Whether a `--set` value looks like an IPv4 address or CIDR, or a version.
pub fn looks_like_literal(v: &str) -> bool {
    let (ip, prefix) = match v.split_once('/') {
        Some((ip, p)) => (ip, Some(p)),
        None => (v, None),
    };
    let octets: Vec<&str> = ip.split('.').collect();
    let is_ipv4 = octets.len() == 4
        && octets
            .iter()
            .all(|o| !o.is_empty() && o.len() <= 3 && o.parse::<u16>().is_ok_and(|n| n <= 255));
    if is_ipv4 {
        return prefix.is_none_or(|p| p.parse::<u8>().is_ok_and(|n| n <= 32));
    }
    if prefix.is_some() {
        return false;
    }
    let (body, had_v) = match v.strip_prefix('v') {
        Some(b) => (b, true),
        None => (v, false),
    };
    let parts: Vec<&str> = body.split('.').collect();
    let numeric = parts
        .iter()
        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    numeric && ((had_v && (parts.len() == 2 || parts.len() == 3)) || (!had_v && parts.len() == 3))
}

/// The warnings for `--set` pairs whose value looks like an IP, CIDR or version.
pub fn literal_warnings(arg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pair = String::new();
    let mut escaped = false;
    let mut pairs = Vec::new();
    for c in arg.chars() {
        if escaped {
            pair.push(c);
            escaped = false;
        } else if c == '\\' {
            pair.push(c);
            escaped = true;
        } else if c == ',' {
            pairs.push(std::mem::take(&mut pair));
        } else {
            pair.push(c);
        }
    }
    pairs.push(pair);
    for p in pairs {
        if let Some((_, v)) = p.split_once('=') {
            if looks_like_literal(v) {
                out.push(format!(
                    "talm: --set {p} looks like an IP / CIDR / version literal; --set guesses value types, so pass --set-string {p} to keep the literal verbatim."
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(arg: &str, typing: Typing) -> Value {
        let mut m = Mapping::new();
        parse_into(arg, typing, &mut m).unwrap();
        Value::Mapping(m)
    }

    fn yaml(s: &str) -> Value {
        serde_yaml_ng::from_str(s).unwrap()
    }

    #[test]
    fn helm_paths() {
        assert_eq!(
            set("a.b[0].c=x,d=e", Typing::Typed),
            yaml("{a: {b: [{c: x}]}, d: e}")
        );
        assert_eq!(
            set("l={1,two,true}", Typing::Typed),
            yaml("{l: [1, two, true]}")
        );
        assert_eq!(set("n[1]=5", Typing::Typed), yaml("{n: [null, 5]}"));
        assert_eq!(set("m[0][1]=x", Typing::Typed), yaml("{m: [[null, x]]}"));
        assert_eq!(
            set(r"a=one\,two,b=x\.y", Typing::Typed),
            yaml("{a: 'one,two', b: x.y}")
        );
        assert_eq!(set(r"a\.b=c", Typing::Typed), yaml("{'a.b': c}"));
        assert_eq!(set("e=", Typing::Typed), yaml("{e: ''}"));
    }

    #[test]
    fn helm_typing() {
        assert_eq!(
            set("a=42,b=true,c=null,d=007,e=0,f=1.5,g=FALSE", Typing::Typed),
            yaml("{a: 42, b: true, c: null, d: '007', e: 0, f: '1.5', g: false}")
        );
        assert_eq!(
            set("a=42,b=true", Typing::Strings),
            yaml("{a: '42', b: 'true'}")
        );
        assert_eq!(
            set("endpoint=10.0.0.1", Typing::Typed),
            yaml("{endpoint: 10.0.0.1}")
        );
    }

    #[test]
    fn later_sets_merge_into_earlier_ones() {
        let mut m = Mapping::new();
        parse_into("a.b=1", Typing::Typed, &mut m).unwrap();
        parse_into("a.c=2", Typing::Typed, &mut m).unwrap();
        assert_eq!(Value::Mapping(m), yaml("{a: {b: 1, c: 2}}"));
    }

    #[test]
    fn bad_syntax() {
        let mut m = Mapping::new();
        assert!(parse_into("a", Typing::Typed, &mut m)
            .unwrap_err()
            .to_string()
            .contains("key \"a\" has no value"));
        assert!(parse_into("a,b=1", Typing::Typed, &mut m)
            .unwrap_err()
            .to_string()
            .contains("cannot end with ,"));
        assert!(parse_into("a[x]=1", Typing::Typed, &mut m)
            .unwrap_err()
            .to_string()
            .contains("invalid index"));
        assert!(parse_into("a[0", Typing::Typed, &mut m)
            .unwrap_err()
            .to_string()
            .contains("unterminated index"));
        assert!(parse_into("a={1,2", Typing::Typed, &mut m)
            .unwrap_err()
            .to_string()
            .contains("list must terminate"));
    }

    #[test]
    fn literal_shapes() {
        for v in ["10.0.0.1", "10.0.0.0/8", "v1.12", "v1.12.3", "1.2.3"] {
            assert!(looks_like_literal(v), "{v}");
        }
        for v in [
            "1.5",
            "42",
            "10.0.0.256",
            "10.0.0.1/33",
            "fd00::1",
            "abc",
            "v1",
        ] {
            assert!(!looks_like_literal(v), "{v}");
        }
        assert_eq!(literal_warnings("a=10.0.0.1,b=2,c=v1.2").len(), 2);
    }
}
