//! YAML values compared and hashed with the order of mapping keys counted. serde_yaml_ng's own
//! `==` and `Hash` ignore it (the hash XORs unkeyed per-entry hashes), while a render prints a
//! mapping in its order: two values that differ only in order must not share a kept render.

use std::hash::{Hash, Hasher};

use serde_yaml_ng::Value;

/// Whether `a` and `b` are the same value, mappings in the same order, numbers of the same kind.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => number_key(x) == number_key(y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Sequence(x), Value::Sequence(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Mapping(x), Value::Mapping(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| same(kx, ky) && same(vx, vy))
        }
        (Value::Tagged(x), Value::Tagged(y)) => x.tag == y.tag && same(&x.value, &y.value),
        _ => false,
    }
}

/// A number as its kind and bits (so `1`, `1.0` and `-0.0` are told apart, and NaN is itself).
fn number_key(n: &serde_yaml_ng::Number) -> (u8, u64) {
    if let Some(u) = n.as_u64() {
        (0, u)
    } else if let Some(i) = n.as_i64() {
        (1, i as u64)
    } else {
        (2, n.as_f64().unwrap_or_default().to_bits())
    }
}

/// Feeds `v` to `h`: equal (by [`same`]) values feed alike, and the shape (kinds, lengths) is
/// fed along with the content, so different values do not feed the same bytes.
pub fn hash(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => h.write_u8(if *b { 2 } else { 1 }),
        Value::Number(n) => {
            h.write_u8(3);
            number_key(n).hash(h);
        }
        Value::String(s) => {
            h.write_u8(4);
            s.hash(h);
        }
        Value::Sequence(items) => {
            h.write_u8(5);
            h.write_usize(items.len());
            items.iter().for_each(|x| hash(x, h));
        }
        Value::Mapping(m) => {
            h.write_u8(6);
            h.write_usize(m.len());
            for (k, x) in m {
                hash(k, h);
                hash(x, h);
            }
        }
        Value::Tagged(t) => {
            h.write_u8(7);
            t.tag.to_string().hash(h);
            hash(&t.value, h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::DefaultHasher;

    fn digest(v: &Value) -> u64 {
        let mut h = DefaultHasher::new();
        hash(v, &mut h);
        h.finish()
    }

    #[test]
    fn order_and_number_kinds_count() {
        let y = |t: &str| -> Value { serde_yaml_ng::from_str(t).unwrap() };
        let (ab, ba) = (y("{a: 1, b: [x, {c: d}]}"), y("{b: [x, {c: d}], a: 1}"));
        // serde_yaml_ng calls these equal and hashes them alike; a render prints them apart.
        assert_eq!(ab, ba);
        assert!(!same(&ab, &ba));
        assert_ne!(digest(&ab), digest(&ba));
        assert!(same(&ab, &y("{a: 1, b: [x, {c: d}]}")));
        assert_eq!(digest(&ab), digest(&y("{a: 1, b: [x, {c: d}]}")));
        for (p, q) in [
            ("1", "1.0"),
            ("0.0", "-0.0"),
            ("~", "''"),
            ("[a, b]", "[ab]"),
            ("[[a], b]", "[a, [b]]"),
            ("!t x", "!u x"),
            ("!t x", "x"),
            ("true", "'true'"),
            ("{a: {}}", "{a: []}"),
        ] {
            assert!(!same(&y(p), &y(q)), "{p} vs {q}");
            assert_ne!(digest(&y(p)), digest(&y(q)), "{p} vs {q}");
        }
        let nan = y(".nan");
        assert!(same(&nan, &nan));
        assert!(same(&y("-3"), &y("-3")) && same(&y("!t x"), &y("!t x")));
    }
}
