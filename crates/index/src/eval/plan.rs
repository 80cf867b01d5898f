//! A `--where` expression checked against a collection's indexes: what
//! each condition reads, or why it cannot be answered.

use std::collections::HashMap;

use crate::{
    decl::Declared,
    error::Error,
    query::{Cmp, Cond, Expr, Literal, Op, conditions},
    values::{IndexKind, Keyword, datetime_micros},
    words::QueryWord,
};

/// A query, checked against the collection's indexes.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Records any of these match.
    Or(Vec<Plan>),
    /// Records every one of these matches (none when it is empty).
    And(Vec<Plan>),
    /// Live records the plan does not match.
    Not(Box<Plan>),
    /// Records with a value at the path.
    Exists(String),
    /// Records with any of these values at a keyword index's path.
    Keywords(String, Vec<Keyword>),
    /// Records with a value at an integer or datetime index's path that
    /// compares so with the number.
    Compare(String, Cmp, i64),
    /// Records with this word (or, for a prefix, a word with it) at a text
    /// index's path; several words are an [`Plan::And`] of them.
    Word(String, QueryWord),
}

fn no_index(collection: &str, c: &Cond, kind_hint: &str) -> Error {
    Error::InvalidQuery(format!(
        "at position {}: {} has no index in {collection}; add one with `datarepo index add {collection} {} --kind {kind_hint}`",
        c.at, c.path, c.path
    ))
}

fn hint(op: &Op) -> &'static str {
    let lit = match op {
        Op::Compare(_, l) => Some(l),
        Op::In(ls) => ls.first(),
        Op::Exists => None,
        Op::Matches(_) => return "text",
    };
    match (op, lit) {
        (Op::Compare(c, _), _) if !matches!(c, Cmp::Eq | Cmp::Ne) => "integer|datetime",
        (_, Some(Literal::Int(_))) => "integer",
        _ => "keyword",
    }
}

/// Checks `expr` against the indexes of `collection` (`declared`).
pub fn plan(collection: &str, expr: &Expr, declared: &[Declared]) -> Result<Plan, Error> {
    let kinds: HashMap<&str, IndexKind> = declared
        .iter()
        .map(|d| (d.decl.path.as_str(), d.decl.kind))
        .collect();
    // Every condition is checked before any is evaluated.
    for c in conditions(expr) {
        if !kinds.contains_key(c.path.as_str()) {
            return Err(no_index(collection, c, hint(&c.op)));
        }
    }
    to_plan(expr, &kinds)
}

fn literal_error(c: &Cond, kind: IndexKind, lit: &Literal, want: &str) -> Error {
    Error::InvalidQuery(format!(
        "at position {}: {} has {} index, which compares {want}, not {}",
        c.at,
        c.path,
        kind.with_article(),
        lit.type_name()
    ))
}

fn keyword_literal(c: &Cond, lit: &Literal) -> Result<Keyword, Error> {
    match lit {
        Literal::Str(s) => Ok(Keyword::Str(s.clone())),
        Literal::Bool(b) => Ok(Keyword::Bool(*b)),
        Literal::Int(_) => Err(literal_error(
            c,
            IndexKind::Keyword,
            lit,
            "strings and booleans",
        )),
    }
}

fn number_literal(c: &Cond, kind: IndexKind, lit: &Literal) -> Result<i64, Error> {
    match (kind, lit) {
        (IndexKind::Integer, Literal::Int(i)) => Ok(*i),
        (IndexKind::Datetime, Literal::Str(s)) => datetime_micros(s).ok_or_else(|| {
            Error::InvalidQuery(format!(
                "at position {}: {s:?} is not an AT Protocol datetime (e.g. \"2024-01-31T12:00:00Z\"), which the datetime index on {} compares",
                c.at, c.path
            ))
        }),
        (IndexKind::Integer, _) => Err(literal_error(c, kind, lit, "integers")),
        _ => Err(literal_error(c, kind, lit, "datetime strings")),
    }
}

fn to_plan(e: &Expr, kinds: &HashMap<&str, IndexKind>) -> Result<Plan, Error> {
    Ok(match e {
        Expr::Or(items) => Plan::Or(
            items
                .iter()
                .map(|i| to_plan(i, kinds))
                .collect::<Result<_, _>>()?,
        ),
        Expr::And(items) => Plan::And(
            items
                .iter()
                .map(|i| to_plan(i, kinds))
                .collect::<Result<_, _>>()?,
        ),
        Expr::Not(inner) => Plan::Not(Box::new(to_plan(inner, kinds)?)),
        Expr::Cond(c) => {
            let kind = kinds[c.path.as_str()];
            let path = c.path.clone();
            match (&c.op, kind) {
                (Op::Exists, _) => Plan::Exists(path),
                (Op::Matches(words), IndexKind::Text) => match words.as_slice() {
                    [word] => Plan::Word(path, word.clone()),
                    words => Plan::And(
                        words
                            .iter()
                            .map(|w| Plan::Word(path.clone(), w.clone()))
                            .collect(),
                    ),
                },
                (Op::Matches(_), kind) => {
                    return Err(Error::InvalidQuery(format!(
                        "at position {}: {} has {} index; matches needs a text index (datarepo index add <collection> {} --kind text)",
                        c.at,
                        c.path,
                        kind.with_article(),
                        c.path
                    )));
                }
                (_, IndexKind::Text) => {
                    return Err(Error::InvalidQuery(format!(
                        "at position {}: {} has a text index, which answers matches and exists; for = != and in, index it with --kind keyword",
                        c.at, c.path
                    )));
                }
                (Op::Compare(cmp, lit), IndexKind::Keyword) => {
                    let v = keyword_literal(c, lit)?;
                    match cmp {
                        Cmp::Eq => Plan::Keywords(path, vec![v]),
                        Cmp::Ne => Plan::Not(Box::new(Plan::Keywords(path, vec![v]))),
                        other => {
                            return Err(Error::InvalidQuery(format!(
                                "at position {}: {} has a keyword index, which answers = != in and exists, not {}; for ranges, index it with --kind integer or datetime",
                                c.at,
                                c.path,
                                other.symbol()
                            )));
                        }
                    }
                }
                (Op::In(lits), IndexKind::Keyword) => Plan::Keywords(
                    path,
                    lits.iter()
                        .map(|l| keyword_literal(c, l))
                        .collect::<Result<_, _>>()?,
                ),
                (Op::Compare(cmp, lit), kind) => {
                    let v = number_literal(c, kind, lit)?;
                    match cmp {
                        Cmp::Ne => Plan::Not(Box::new(Plan::Compare(path, Cmp::Eq, v))),
                        cmp => Plan::Compare(path, *cmp, v),
                    }
                }
                (Op::In(lits), kind) => Plan::Or(
                    lits.iter()
                        .map(|l| {
                            Ok(Plan::Compare(
                                path.clone(),
                                Cmp::Eq,
                                number_literal(c, kind, l)?,
                            ))
                        })
                        .collect::<Result<_, Error>>()?,
                ),
            }
        }
    })
}
