//! The words of a `text` index: how strings and `matches` queries are cut
//! into words and normalized.
//!
//! A string is normalized to NFKC, lowercased (Unicode's full lowercase
//! mapping) and normalized to NFKC again (lowercasing can leave a string
//! that is not), then split at Unicode word boundaries (UAX #29); the
//! segments holding a letter or digit are its words. Diacritics are kept:
//! `café` and `cafe` are different words. Compatibility characters are
//! folded (`ﬁ` is `fi`, full-width `Ｒｕｓｔ` is `rust`).

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

use crate::values::{Keyword, MAX_KEYWORD_BYTES, values_at};

/// The normalized form words are taken from. ASCII text is its own NFKC
/// form, so it is only lowercased.
fn normalize(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    text.nfkc()
        .collect::<String>()
        .to_lowercase()
        .nfkc()
        .collect()
}

/// Calls `each` with every word of `text` (as [`words`] gives them),
/// without allocating a string per word.
pub(crate) fn for_each_word(text: &str, mut each: impl FnMut(&str)) {
    for w in normalize(text).unicode_words() {
        let w = w.trim_start();
        if w.len() <= MAX_KEYWORD_BYTES {
            each(w);
        }
    }
}

/// The words of `text`, in order, repeats included; a segment's leading
/// white space is not part of its word (UAX #29 attaches a combining mark
/// to the space before it). A word longer than
/// the keyword limit (1,024 bytes) is left out: it is not indexed, and a
/// query for it matches nothing.
#[must_use]
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_owned()));
    out
}

/// One word of a `matches` query.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueryWord {
    /// The record's text has this word.
    Whole(String),
    /// The record's text has a word starting with this.
    Prefix(String),
}

impl QueryWord {
    /// Whether `word` (normalized, as [`words`] gives it) satisfies this.
    #[must_use]
    pub fn accepts(&self, word: &str) -> bool {
        match self {
            Self::Whole(w) => w == word,
            Self::Prefix(p) => word.starts_with(p.as_str()),
        }
    }
}

/// The words a `matches` query asks for: the words of each
/// whitespace-separated term, a term ending in `*` asking for its last
/// word as a prefix (`stor*`). Repeats are dropped.
///
/// # Errors
///
/// A message when the query has no word (only spaces, punctuation or a
/// bare `*`).
pub fn query_words(query: &str) -> Result<Vec<QueryWord>, String> {
    let mut out = Vec::new();
    for term in query.split_whitespace() {
        let (body, prefix) = match term.strip_suffix('*') {
            Some(body) => (body, true),
            None => (term, false),
        };
        let mut ws = words(body);
        if prefix {
            let Some(last) = ws.pop() else {
                return Err(format!(
                    "{term:?}: a * follows the first letters of a word (as in stor*)"
                ));
            };
            out.extend(ws.into_iter().map(QueryWord::Whole));
            out.push(QueryWord::Prefix(last));
        } else {
            out.extend(ws.into_iter().map(QueryWord::Whole));
        }
    }
    out.sort();
    out.dedup();
    if out.is_empty() {
        return Err(format!(
            "{query:?} has no words to match (words are letters and digits)"
        ));
    }
    Ok(out)
}

/// The words of the strings at `path` (a text index's values), each once,
/// in order.
pub(crate) fn text_words(record: &Value, path: &str) -> Vec<Keyword> {
    let mut out: Vec<Keyword> = values_at(record, path)
        .into_iter()
        .filter_map(Value::as_str)
        .flat_map(words)
        .map(Keyword::Str)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_cut_at_boundaries_and_normalized() {
        assert_eq!(
            words("Rust's storage: FAST, ﬁne & Ｒｕｓｔ — café 3.14!"),
            ["rust's", "storage", "fast", "fine", "rust", "café", "3.14"]
        );
        assert!(words(" ,;!? ").is_empty());
    }

    #[test]
    fn prefixes_are_the_last_word_of_a_starred_term() {
        assert_eq!(
            query_words("Stor* rust").unwrap(),
            [
                QueryWord::Whole("rust".into()),
                QueryWord::Prefix("stor".into())
            ]
        );
        assert_eq!(
            query_words("data-base*").unwrap(),
            [
                QueryWord::Whole("data".into()),
                QueryWord::Prefix("base".into())
            ]
        );
        assert!(query_words("  ").is_err());
        assert!(query_words("*").is_err());
        assert!(query_words("!!*").is_err());
    }

    proptest::proptest! {
        /// Any text's words are words of their own, so a query for a word
        /// a record has finds the record; a prefix of a word asked as one
        /// accepts it.
        #[test]
        fn a_word_is_its_own_only_word(text in "\\PC{0,40}") {
            for w in words(&text) {
                proptest::prop_assert!(!w.is_empty());
                proptest::prop_assert_eq!(words(&w), [w.clone()]);
                let asked = query_words(&format!("{w}*")).unwrap();
                proptest::prop_assert!(asked.iter().all(|q| q.accepts(&w)), "{asked:?} {w:?}");
            }
        }
    }

    #[test]
    fn prefixes_accept_their_extensions() {
        let p = QueryWord::Prefix("stor".into());
        assert!(p.accepts("storage") && p.accepts("stor") && !p.accepts("sto"));
        assert!(QueryWord::Whole("rust".into()).accepts("rust"));
        assert!(!QueryWord::Whole("rust".into()).accepts("rusty"));
    }
}
