//! A `--where` expression evaluated on one record's JSON, with no index:
//! what a stream consumer's `where` filter asks of each event.
//!
//! The verdicts are the indexes' (`eval`) wherever a query could be asked:
//! a condition holds when *some* value at its path satisfies it (arrays
//! reached on the way are entered, as `values::values_at` does), `!=` is
//! the negation of `=`, and values are compared by the literal's type:
//!
//! - an integer literal against the integers at the path (an integer
//!   index);
//! - a string literal with `<`, `<=`, `>` or `>=` against the datetimes at
//!   the path, as instants (a datetime index; the literal must be one);
//! - a string literal with `=`, `!=` or `in` against the strings at the
//!   path: equal strings, or two datetimes naming the same instant (so a
//!   keyword index and a datetime index both agree);
//! - a boolean literal against the booleans at the path (a keyword index);
//! - `exists`: a string, boolean or integer at the path;
//! - `matches`: every word asked for is among the words of the strings at
//!   the path (a text index; `words`), a prefix among their beginnings.

use serde_json::Value;

use crate::{
    query::{Cmp, Cond, Expr, Literal, Op, conditions, parse},
    values::{datetime_micros, values_at},
    words::words,
};

/// A parsed `--where` expression whose literals can be compared with a
/// record's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordCondition {
    expr: Expr,
}

impl RecordCondition {
    /// Parses `src` and checks each literal can be compared as written.
    ///
    /// # Errors
    ///
    /// The parser's message, or one naming a condition whose literal no
    /// value could be ordered against (a boolean, or a string that is not
    /// an AT Protocol datetime, with `<`, `<=`, `>` or `>=`).
    pub fn parse(src: &str) -> Result<Self, String> {
        let expr = parse(src)?;
        for c in conditions(&expr) {
            if let Op::Compare(cmp, lit) = &c.op
                && !matches!(cmp, Cmp::Eq | Cmp::Ne)
            {
                match lit {
                    Literal::Int(_) => {}
                    Literal::Str(s) if datetime_micros(s).is_some() => {}
                    Literal::Str(s) => {
                        return Err(format!(
                            "at position {}: {} {} {s:?}: only integers and AT Protocol datetimes \
                             (e.g. \"2024-01-31T12:00:00Z\") are ordered",
                            c.at,
                            c.path,
                            cmp.symbol()
                        ));
                    }
                    Literal::Bool(_) => {
                        return Err(format!(
                            "at position {}: {} {} a boolean: only integers and datetimes are ordered",
                            c.at,
                            c.path,
                            cmp.symbol()
                        ));
                    }
                }
            }
        }
        Ok(Self { expr })
    }

    /// The parsed expression.
    #[must_use]
    pub const fn expr(&self) -> &Expr {
        &self.expr
    }

    /// Whether `record` satisfies the expression.
    #[must_use]
    pub fn matches(&self, record: &Value) -> bool {
        holds(&self.expr, record)
    }
}

fn holds(e: &Expr, record: &Value) -> bool {
    match e {
        Expr::Or(items) => items.iter().any(|i| holds(i, record)),
        Expr::And(items) => items.iter().all(|i| holds(i, record)),
        Expr::Not(inner) => !holds(inner, record),
        Expr::Cond(c) => cond_holds(c, record),
    }
}

fn cond_holds(c: &Cond, record: &Value) -> bool {
    let values = values_at(record, &c.path);
    match &c.op {
        Op::Exists => values
            .iter()
            .any(|v| v.is_string() || v.is_boolean() || v.as_i64().is_some()),
        Op::Compare(Cmp::Ne, lit) => !values.iter().any(|v| equals(v, lit)),
        Op::Compare(Cmp::Eq, lit) => values.iter().any(|v| equals(v, lit)),
        Op::Compare(cmp, lit) => values.iter().any(|v| ordered(v, *cmp, lit)),
        Op::In(lits) => lits.iter().any(|l| values.iter().any(|v| equals(v, l))),
        Op::Matches(asked) => {
            let have: Vec<String> = values
                .iter()
                .filter_map(|v| v.as_str())
                .flat_map(words)
                .collect();
            asked.iter().all(|q| have.iter().any(|w| q.accepts(w)))
        }
    }
}

fn equals(v: &Value, lit: &Literal) -> bool {
    match (v, lit) {
        (Value::Number(n), Literal::Int(i)) => n.as_i64() == Some(*i),
        (Value::Bool(b), Literal::Bool(l)) => b == l,
        (Value::String(s), Literal::Str(l)) => {
            s == l
                || datetime_micros(s)
                    .is_some_and(|at| datetime_micros(l).is_some_and(|want| at == want))
        }
        _ => false,
    }
}

fn ordered(v: &Value, cmp: Cmp, lit: &Literal) -> bool {
    let (have, want) = match (v, lit) {
        (Value::Number(n), Literal::Int(i)) => match n.as_i64() {
            Some(n) => (n, *i),
            None => return false,
        },
        (Value::String(s), Literal::Str(l)) => match (datetime_micros(s), datetime_micros(l)) {
            (Some(have), Some(want)) => (have, want),
            _ => return false,
        },
        _ => return false,
    };
    match cmp {
        Cmp::Lt => have < want,
        Cmp::Le => have <= want,
        Cmp::Gt => have > want,
        Cmp::Ge => have >= want,
        Cmp::Eq => have == want,
        Cmp::Ne => have != want,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(src: &str, record: &Value) -> bool {
        RecordCondition::parse(src).unwrap().matches(record)
    }

    #[test]
    fn conditions_hold_for_some_value_at_the_path() {
        let r = json!({"langs": ["en", "ja"], "likes": 12, "reply": {"n": [1, 5]},
                       "createdAt": "2024-01-02T00:00:00Z", "pinned": true});
        assert!(m(r#"langs = "ja""#, &r));
        assert!(!m(r#"langs != "ja""#, &r));
        assert!(m(r#"langs in ["de", "en"]"#, &r));
        assert!(m("likes >= 10 and reply.n < 2", &r));
        assert!(!m("likes > 12", &r));
        assert!(m(r#"createdAt > "2024-01-01T23:59:59+00:00""#, &r));
        assert!(m(r#"createdAt = "2024-01-02T00:00:00.000Z""#, &r));
        assert!(m("pinned = true and not missing exists", &r));
        assert!(m(r#"missing != "x""#, &r));
        assert!(!m("missing exists", &r));
    }

    #[test]
    fn matches_asks_for_every_word_of_any_string() {
        let r = json!({"text": ["Fast storage in Rust", "über"], "n": 1});
        assert!(m(r#"text matches "rust STORAGE""#, &r));
        assert!(m(r#"text matches "stor* Über""#, &r));
        assert!(!m(r#"text matches "rust go""#, &r));
        assert!(!m(r#"n matches "1x""#, &r));
    }

    #[test]
    fn a_literal_that_cannot_be_ordered_is_refused() {
        let err = RecordCondition::parse(r#"text > "abc""#).unwrap_err();
        assert!(
            err.contains("only integers and AT Protocol datetimes"),
            "{err}"
        );
        assert!(RecordCondition::parse("pinned < true").is_err());
        assert!(RecordCondition::parse("likes >").is_err());
    }
}
