//! The `--where` language: parsing (this module) and its syntax tree.
//!
//! ```text
//! expr  := or
//! or    := and ("or" and)*
//! and   := unary ("and" unary)*
//! unary := "not" unary | "(" expr ")" | cond
//! cond  := path "exists"
//!        | path ("=" | "!=" | "<" | "<=" | ">" | ">=") literal
//!        | path "in" "[" literal ("," literal)* "]"
//!        | path "matches" string      (a text index: every word; `w*` a prefix)
//! path  := segment ("." segment)*      segment: one or more of [A-Za-z0-9_$]
//! literal := a JSON string, a JSON integer, true or false
//! ```

/// A parsed `--where` expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// Any of these.
    Or(Vec<Expr>),
    /// All of these.
    And(Vec<Expr>),
    /// The collection's records that do not match.
    Not(Box<Expr>),
    /// One condition on a path.
    Cond(Cond),
}

/// `path op …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cond {
    /// The path.
    pub path: String,
    /// Where the path starts in the expression (a byte offset).
    pub at: usize,
    /// What is asked of it.
    pub op: Op,
}

/// A condition's operator and literals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `exists`.
    Exists,
    /// `=`, `!=`, `<`, `<=`, `>`, `>=` and a literal.
    Compare(Cmp, Literal),
    /// `in [...]`.
    In(Vec<Literal>),
    /// `matches "…"`: the words asked for (each present; see `words`).
    Matches(Vec<crate::words::QueryWord>),
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Cmp {
    /// The operator as written in a query.
    pub const fn symbol(self) -> &'static str {
        match self {
            Self::Eq => "=",
            Self::Ne => "!=",
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
        }
    }
}

/// A literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Literal {
    /// A JSON string.
    Str(String),
    /// A JSON integer.
    Int(i64),
    /// `true` or `false`.
    Bool(bool),
}

impl Literal {
    /// The literal's type, for messages.
    pub const fn type_name(&self) -> &'static str {
        match self {
            Self::Str(_) => "a string",
            Self::Int(_) => "an integer",
            Self::Bool(_) => "a boolean",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Str(String),
    Int(i64),
    Op(Cmp),
    Open,
    Close,
    OpenBracket,
    CloseBracket,
    Comma,
}

fn describe(t: Option<&(usize, Token)>) -> String {
    match t {
        None => "the end".to_owned(),
        Some((_, Token::Word(w))) => format!("{w:?}"),
        Some((_, Token::Str(s))) => format!("the string {s:?}"),
        Some((_, Token::Int(i))) => format!("the integer {i}"),
        Some((_, Token::Op(c))) => format!("{:?}", c.symbol()),
        Some((_, Token::Open)) => "\"(\"".to_owned(),
        Some((_, Token::Close)) => "\")\"".to_owned(),
        Some((_, Token::OpenBracket)) => "\"[\"".to_owned(),
        Some((_, Token::CloseBracket)) => "\"]\"".to_owned(),
        Some((_, Token::Comma)) => "\",\"".to_owned(),
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')
}

fn error(at: usize, msg: impl std::fmt::Display) -> String {
    format!("at position {at}: {msg}")
}

fn tokenize(src: &str) -> Result<Vec<(usize, Token)>, String> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let c = b[i];
        let token = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'(' => Token::Open,
            b')' => Token::Close,
            b'[' => Token::OpenBracket,
            b']' => Token::CloseBracket,
            b',' => Token::Comma,
            b'=' => Token::Op(Cmp::Eq),
            b'!' if b.get(i + 1) == Some(&b'=') => {
                i += 1;
                Token::Op(Cmp::Ne)
            }
            b'<' | b'>' => {
                let eq = b.get(i + 1) == Some(&b'=');
                if eq {
                    i += 1;
                }
                Token::Op(match (c, eq) {
                    (b'<', false) => Cmp::Lt,
                    (b'<', true) => Cmp::Le,
                    (_, false) => Cmp::Gt,
                    (_, true) => Cmp::Ge,
                })
            }
            b'"' => {
                // A JSON string: find its end, then let serde_json judge it.
                let mut j = i + 1;
                loop {
                    match b.get(j) {
                        None => return Err(error(start, "unterminated string")),
                        Some(b'\\') => j += 2,
                        Some(b'"') => break,
                        Some(_) => j += 1,
                    }
                }
                let text = &src[i..=j];
                let s: String = serde_json::from_str(text)
                    .map_err(|e| error(start, format!("invalid string {text}: {e}")))?;
                i = j;
                Token::Str(s)
            }
            b'-' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let mut j = i + 1;
                while b.get(j).is_some_and(u8::is_ascii_digit) {
                    j += 1;
                }
                let text = &src[i..j];
                i = j - 1;
                Token::Int(parse_int(text, start)?)
            }
            c if is_word_byte(c) => {
                let mut j = i;
                while b.get(j).copied().is_some_and(is_word_byte) {
                    j += 1;
                }
                let word = src[i..j].to_owned();
                i = j - 1;
                Token::Word(word)
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err(error(start, format!("unexpected character {ch:?}")));
            }
        };
        out.push((start, token));
        i += 1;
    }
    Ok(out)
}

fn parse_int(text: &str, at: usize) -> Result<i64, String> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.len() > 1 && digits.starts_with('0') {
        return Err(error(
            at,
            format!("{text} is not a JSON integer (leading zero)"),
        ));
    }
    text.parse().map_err(|_| {
        error(
            at,
            format!("integer {text} is out of range (64-bit signed)"),
        )
    })
}

fn valid_path(p: &str) -> bool {
    p.split('.').all(|s| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
    })
}

/// How deeply `not` and parentheses may nest: evaluation recurses as deep,
/// and a query must not be able to exhaust a server's stack.
pub(crate) const MAX_DEPTH: usize = 64;
/// The longest expression, in bytes.
pub(crate) const MAX_WHERE_BYTES: usize = 8192;
/// Most literals (and `exists` conditions) in an expression: each costs a
/// pass over a row or a bit-sliced view, so they bound a query's work.
pub(crate) const MAX_TERMS: usize = 256;

struct Parser {
    tokens: Vec<(usize, Token)>,
    pos: usize,
    end: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&(usize, Token)> {
        self.tokens.get(self.pos)
    }

    fn at(&self) -> usize {
        self.peek().map_or(self.end, |(at, _)| *at)
    }

    fn keyword(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some((_, Token::Word(w))) if w == word) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, want: &Token, what: &str) -> Result<(), String> {
        if self.peek().map(|(_, t)| t) == Some(want) {
            self.pos += 1;
            Ok(())
        } else {
            Err(error(
                self.at(),
                format!("expected {what}, found {}", describe(self.peek())),
            ))
        }
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut items = vec![self.and()?];
        while self.keyword("or") {
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::Or(items)
        })
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut items = vec![self.unary()?];
        while self.keyword("and") {
            items.push(self.unary()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::And(items)
        })
    }

    fn unary(&mut self) -> Result<Expr, String> {
        let nested = matches!(self.peek(), Some((_, Token::Open)))
            || matches!(self.peek(), Some((_, Token::Word(w))) if w == "not");
        if !nested {
            return self.cond();
        }
        if self.depth == MAX_DEPTH {
            return Err(error(
                self.at(),
                format!("not and parentheses nest deeper than {MAX_DEPTH}"),
            ));
        }
        self.depth += 1;
        let e = if self.keyword("not") {
            self.unary().map(|e| Expr::Not(Box::new(e)))
        } else {
            self.pos += 1;
            self.or()
                .and_then(|e| self.expect(&Token::Close, "\")\"").map(|()| e))
        };
        self.depth -= 1;
        e
    }

    fn cond(&mut self) -> Result<Expr, String> {
        let at = self.at();
        let path = match self.peek() {
            Some((_, Token::Word(w))) => w.clone(),
            other => {
                return Err(error(
                    at,
                    format!("expected a path, found {}", describe(other)),
                ));
            }
        };
        if !valid_path(&path) {
            return Err(error(
                at,
                format!(
                    "{path:?} is not a path (segments of A-Z a-z 0-9 _ $, separated by single dots)"
                ),
            ));
        }
        self.pos += 1;
        let op = if self.keyword("exists") {
            Op::Exists
        } else if self.keyword("in") {
            self.expect(&Token::OpenBracket, "\"[\" after in")?;
            let mut items = vec![self.literal()?];
            while self.peek().map(|(_, t)| t) == Some(&Token::Comma) {
                self.pos += 1;
                items.push(self.literal()?);
            }
            self.expect(&Token::CloseBracket, "\",\" or \"]\"")?;
            Op::In(items)
        } else if self.keyword("matches") {
            let at = self.at();
            let Some((_, Token::Str(query))) = self.peek() else {
                return Err(error(
                    at,
                    format!(
                        "expected the words to match, in double quotes, after matches, found {}",
                        describe(self.peek())
                    ),
                ));
            };
            let words = crate::words::query_words(query).map_err(|e| error(at, e))?;
            self.pos += 1;
            Op::Matches(words)
        } else if let Some((_, Token::Op(cmp))) = self.peek() {
            let cmp = *cmp;
            self.pos += 1;
            Op::Compare(cmp, self.literal()?)
        } else {
            return Err(error(
                self.at(),
                format!(
                    "expected exists, in, matches or a comparison (= != < <= > >=) after {path}, found {}",
                    describe(self.peek())
                ),
            ));
        };
        Ok(Expr::Cond(Cond { path, at, op }))
    }

    fn literal(&mut self) -> Result<Literal, String> {
        let at = self.at();
        let lit = match self.peek() {
            Some((_, Token::Str(s))) => Literal::Str(s.clone()),
            Some((_, Token::Int(i))) => Literal::Int(*i),
            Some((_, Token::Word(w))) if w == "true" => Literal::Bool(true),
            Some((_, Token::Word(w))) if w == "false" => Literal::Bool(false),
            Some((_, Token::Word(w))) if w.bytes().all(|b| b.is_ascii_digit()) => {
                Literal::Int(parse_int(w, at)?)
            }
            other => {
                return Err(error(
                    at,
                    format!(
                        "expected a literal (a JSON string in double quotes, an integer, true or false), found {}",
                        describe(other)
                    ),
                ));
            }
        };
        self.pos += 1;
        Ok(lit)
    }
}

/// Parses a `--where` expression.
///
/// # Errors
///
/// A message naming the byte position and what was expected there.
pub fn parse(src: &str) -> Result<Expr, String> {
    if src.len() > MAX_WHERE_BYTES {
        return Err(error(
            MAX_WHERE_BYTES,
            format!(
                "the expression has {} bytes; at most {MAX_WHERE_BYTES}",
                src.len()
            ),
        ));
    }
    let tokens = tokenize(src)?;
    let mut p = Parser {
        tokens,
        pos: 0,
        end: src.len(),
        depth: 0,
    };
    if p.peek().is_none() {
        return Err(error(0, "empty expression"));
    }
    let e = p.or()?;
    if p.peek().is_some() {
        return Err(error(
            p.at(),
            format!("expected and, or or the end, found {}", describe(p.peek())),
        ));
    }
    let terms: usize = conditions(&e)
        .iter()
        .map(|c| match &c.op {
            Op::In(items) => items.len(),
            Op::Matches(words) => words.len(),
            _ => 1,
        })
        .sum();
    if terms > MAX_TERMS {
        return Err(error(
            0,
            format!(
                "the expression has {terms} values, words and exists conditions; at most {MAX_TERMS} \
                 (a value costs a pass over the index: ask for a range, or in several queries)"
            ),
        ));
    }
    Ok(e)
}

/// Every condition of `e`.
pub(crate) fn conditions(e: &Expr) -> Vec<&Cond> {
    let mut out = Vec::new();
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Or(items) | Expr::And(items) => stack.extend(items),
            Expr::Not(inner) => stack.push(inner),
            Expr::Cond(c) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any input: no panic, and an error names a position within it.
        #[test]
        fn parsing_never_panics(src in "[a-z0-9 ()\\[\\],=!<>\"\\\\.$_-]{0,40}|\\PC{0,20}") {
            if let Err(e) = parse(&src) {
                let at: usize = e
                    .strip_prefix("at position ")
                    .and_then(|r| r.split(':').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap();
                proptest::prop_assert!(at <= src.len(), "{}", e);
            }
        }
    }

    fn cond(path: &str, at: usize, op: Op) -> Expr {
        Expr::Cond(Cond {
            path: path.into(),
            at,
            op,
        })
    }

    #[test]
    fn and_binds_tighter_than_or() {
        let e = parse(r#"a = "x" or b = 1 and not c exists"#).unwrap();
        assert_eq!(
            e,
            Expr::Or(vec![
                cond("a", 0, Op::Compare(Cmp::Eq, Literal::Str("x".into()))),
                Expr::And(vec![
                    cond("b", 11, Op::Compare(Cmp::Eq, Literal::Int(1))),
                    Expr::Not(Box::new(cond("c", 25, Op::Exists))),
                ]),
            ])
        );
    }

    #[test]
    fn whitespace_is_free_and_lists_parse() {
        let e = parse(r#"(x.y_$1>=-5)and z in["a",true,7]"#).unwrap();
        assert_eq!(
            e,
            Expr::And(vec![
                cond("x.y_$1", 1, Op::Compare(Cmp::Ge, Literal::Int(-5))),
                cond(
                    "z",
                    16,
                    Op::In(vec![
                        Literal::Str("a".into()),
                        Literal::Bool(true),
                        Literal::Int(7)
                    ])
                ),
            ])
        );
    }

    #[test]
    fn errors_name_the_position() {
        for (src, at, what) in [
            ("", 0, "empty"),
            ("a =", 3, "expected a literal"),
            ("a = 1 b", 6, "expected and, or"),
            ("(a exists", 9, "\")\""),
            ("a.. = 1", 0, "not a path"),
            ("a = 01", 4, "leading zero"),
            ("a = 99999999999999999999", 4, "out of range"),
            ("a ~ 1", 2, "unexpected character"),
            ("a in []", 6, "expected a literal"),
            (r#"a = "x"#, 4, "unterminated"),
            ("a", 1, "expected exists"),
            (&"(".repeat(1_000), 64, "deeper than 64"),
            (&"not ".repeat(65), 256, "deeper than 64"),
        ] {
            let err = parse(src).unwrap_err();
            assert!(
                err.starts_with(&format!("at position {at}:")),
                "{src:?}: {err}"
            );
            assert!(err.contains(what), "{src:?}: {err}");
        }
    }
}
