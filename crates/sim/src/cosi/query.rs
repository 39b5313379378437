//! COSI resource queries as the COSI runtime evaluates them: label queries (OR of queries, AND
//! of terms; exists, equal, in, string and numeric less-than, each invertible) and the ID query
//! (an unanchored regular expression), with the errors the COSI gRPC server gives for bad ones.

use std::collections::HashMap;

use regex::Regex;
use tonic::Status;

use cosi::label_term::Operation;
use talm_wire::proto::cosi::resource as cosi;

/// A label comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Exists,
    Equal,
    In,
    Lt,
    Lte,
    LtNumeric,
    LteNumeric,
}

impl Op {
    fn is_comparison(self) -> bool {
        matches!(self, Op::Lt | Op::Lte | Op::LtNumeric | Op::LteNumeric)
    }
}

/// One term of a label query.
#[derive(Debug, Clone)]
pub struct Term {
    pub key: String,
    pub values: Vec<String>,
    pub op: Op,
    pub invert: bool,
}

/// The filters of a List or a kind Watch.
#[derive(Debug, Clone, Default)]
pub struct Queries {
    /// Label queries, any of which may match; each is the AND of its terms.
    pub labels: Vec<Vec<Term>>,
    pub id: Option<Regex>,
}

/// What Go's runtime panics with when a term that needs a value has none; Talos's recovery
/// middleware answers it as `Internal`.
fn no_value() -> Status {
    Status::internal("runtime error: index out of range [0] with length 0")
}

fn term(t: &cosi::LabelTerm) -> Result<Term, Status> {
    let first = || t.value.first().cloned().ok_or_else(no_value);
    let (op, values, invert) = match Operation::try_from(t.op) {
        Ok(Operation::Exists) => (Op::Exists, vec![], t.invert),
        // Deprecated: "exists", inverted, whatever `invert` says.
        Ok(Operation::NotExists) => (Op::Exists, vec![], true),
        Ok(Operation::Equal) => (Op::Equal, vec![first()?], t.invert),
        Ok(Operation::In) => (Op::In, t.value.clone(), t.invert),
        Ok(Operation::Lt) => (Op::Lt, vec![first()?], t.invert),
        Ok(Operation::Lte) => (Op::Lte, vec![first()?], t.invert),
        Ok(Operation::LtNumeric) => (Op::LtNumeric, vec![first()?], t.invert),
        Ok(Operation::LteNumeric) => (Op::LteNumeric, vec![first()?], t.invert),
        Err(_) => {
            return Err(Status::unimplemented(format!(
                "unsupported label query operator: {}",
                t.op
            )))
        }
    };
    Ok(Term {
        key: t.key.clone(),
        values,
        op,
        invert,
    })
}

/// Converts the request's queries, refusing what the COSI server refuses.
pub fn parse(labels: &[cosi::LabelQuery], id: Option<&cosi::IdQuery>) -> Result<Queries, Status> {
    let labels = labels
        .iter()
        .map(|q| q.terms.iter().map(term).collect::<Result<Vec<_>, _>>())
        .collect::<Result<Vec<_>, _>>()?;
    let id = match id.map(|q| q.regexp.as_str()) {
        None | Some("") => None,
        Some(re) => Some(compile(re)?),
    };
    Ok(Queries { labels, id })
}

/// Go's `regexp.Compile` error text for the usual mistakes, with the code RE2 names.
fn compile(re: &str) -> Result<Regex, Status> {
    Regex::new(re).map_err(|e| {
        use regex::Error;
        let what = match &e {
            Error::Syntax(text) => go_code(text),
            _ => "expression too large".to_string(),
        };
        Status::invalid_argument(format!(
            "failed to compile regexp: error parsing regexp: {what}: `{re}`"
        ))
    })
}

/// RE2's name for a syntax error, from the Rust parser's description of it.
fn go_code(text: &str) -> String {
    let t = text.to_ascii_lowercase();
    let code = if t.contains("unclosed group") {
        "missing closing )"
    } else if t.contains("unopened group") {
        "unexpected )"
    } else if t.contains("unclosed character class") {
        "missing closing ]"
    } else if t.contains("repetition operator missing expression") {
        "missing argument to repetition operator"
    } else if t.contains("invalid character class range") || t.contains("invalid range") {
        "invalid character class range"
    } else if t.contains("unrecognized escape") || t.contains("incomplete escape") {
        "invalid escape sequence"
    } else if t.contains("repetition quantifier") || t.contains("counted repetition") {
        "invalid repeat count"
    } else {
        "invalid syntax"
    };
    code.to_string()
}

/// Go's `compare.GetNumbers` value: digits (and `-`), then an optional unit (k, M, Ki, Mi...).
fn number(value: &str) -> Option<i64> {
    let value = value.trim();
    let split = value
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '-'))
        .map(|(i, _)| i)
        .unwrap_or(value.len());
    let (digits, units) = value.split_at(split);
    if digits.is_empty() {
        return None;
    }
    let n: i64 = digits.parse().ok()?;
    let units = units.trim().to_lowercase();
    let mult: i64 = if units.is_empty() {
        1
    } else {
        let binary = match units.get(..2) {
            Some("pi") => Some(1 << 50),
            Some("ti") => Some(1 << 40),
            Some("gi") => Some(1 << 30),
            Some("mi") => Some(1 << 20),
            Some("ki") => Some(1 << 10),
            _ => None,
        };
        match binary {
            Some(m) => m,
            None => match units.get(..1)? {
                "p" => 1_000_000_000_000_000,
                "t" => 1_000_000_000_000,
                "g" => 1_000_000_000,
                "m" => 1_000_000,
                "k" => 1_000,
                _ => return None,
            },
        }
    };
    Some(n.wrapping_mul(mult))
}

impl Term {
    /// Whether labels satisfy the term; a comparison on a missing or non-numeric label never
    /// matches, inverted or not.
    pub fn matches(&self, labels: &HashMap<String, String>) -> bool {
        let Some(value) = labels.get(&self.key) else {
            return !self.op.is_comparison() && self.invert;
        };
        if self.op != Op::Exists && self.values.is_empty() {
            return self.invert;
        }
        let first = || self.values[0].as_str();
        let m = match self.op {
            Op::Exists => true,
            Op::Equal => value == first(),
            Op::In => self.values.iter().any(|v| v == value),
            Op::Lt => value.as_str() < first(),
            Op::Lte => value.as_str() <= first(),
            Op::LtNumeric | Op::LteNumeric => {
                let (Some(l), Some(r)) = (number(value), number(first())) else {
                    return false;
                };
                if self.op == Op::LtNumeric {
                    l < r
                } else {
                    l <= r
                }
            }
        };
        m != self.invert
    }
}

impl Queries {
    /// Whether a resource (its ID and labels) passes the filters.
    pub fn matches(&self, r: &cosi::Resource) -> bool {
        let Some(md) = r.metadata.as_ref() else {
            return false;
        };
        if let Some(re) = &self.id {
            if !re.is_match(&md.id) {
                return false;
            }
        }
        self.labels.is_empty()
            || self
                .labels
                .iter()
                .any(|terms| terms.iter().all(|t| t.matches(&md.labels)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn t(key: &str, op: Op, values: &[&str], invert: bool) -> Term {
        Term {
            key: key.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
            op,
            invert,
        }
    }

    #[test]
    fn terms_match_as_cosi_does() {
        let l = labels(&[("role", "db"), ("size", "2Gi"), ("n", "10")]);
        assert!(t("role", Op::Exists, &[], false).matches(&l));
        assert!(!t("role", Op::Exists, &[], true).matches(&l));
        assert!(t("zone", Op::Exists, &[], true).matches(&l), "not exists");
        assert!(t("role", Op::Equal, &["db"], false).matches(&l));
        assert!(t("role", Op::Equal, &["web"], true).matches(&l));
        assert!(
            t("zone", Op::Equal, &["a"], true).matches(&l),
            "inverted equal matches a missing label"
        );
        assert!(t("role", Op::In, &["web", "db"], false).matches(&l));
        assert!(!t("role", Op::In, &[], false).matches(&l));
        assert!(t("n", Op::Lt, &["9"], false).matches(&l), "string order");
        assert!(!t("n", Op::LtNumeric, &["9"], false).matches(&l));
        assert!(t("n", Op::LteNumeric, &["10"], false).matches(&l));
        assert!(t("size", Op::LtNumeric, &["3G"], false).matches(&l));
        assert!(!t("size", Op::LtNumeric, &["2G"], false).matches(&l));
        assert!(
            !t("zone", Op::Lt, &["z"], true).matches(&l),
            "comparisons never match a missing label"
        );
        assert!(!t("role", Op::LtNumeric, &["1"], true).matches(&l));
    }

    #[test]
    fn numbers_read_units_like_go() {
        assert_eq!(number(" 12 "), Some(12));
        assert_eq!(number("1Ki"), Some(1024));
        assert_eq!(number("1kb"), Some(1000));
        assert_eq!(number("-3M"), Some(-3_000_000));
        assert_eq!(number("x1"), None);
        assert_eq!(number("1x"), None);
    }

    #[test]
    fn bad_queries_get_cosis_errors() {
        let empty_equal = cosi::LabelQuery {
            terms: vec![cosi::LabelTerm {
                key: "a".into(),
                op: Operation::Equal as i32,
                ..Default::default()
            }],
        };
        let st = parse(&[empty_equal], None).unwrap_err();
        assert_eq!(st.code(), tonic::Code::Internal);
        let odd = cosi::LabelQuery {
            terms: vec![cosi::LabelTerm {
                op: 42,
                ..Default::default()
            }],
        };
        assert_eq!(
            parse(&[odd], None).unwrap_err().message(),
            "unsupported label query operator: 42"
        );
        let st = parse(
            &[],
            Some(&cosi::IdQuery {
                regexp: "(eth".into(),
            }),
        )
        .unwrap_err();
        assert_eq!(st.code(), tonic::Code::InvalidArgument);
        assert_eq!(
            st.message(),
            "failed to compile regexp: error parsing regexp: missing closing ): `(eth`"
        );
    }
}
