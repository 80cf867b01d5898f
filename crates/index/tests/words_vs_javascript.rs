//! A text index's words against JavaScript's own Unicode machinery
//! (`tests/oracles/words.mjs`: `String.prototype.normalize("NFKC")`,
//! `toLowerCase`, and ICU's word segmenter, which implements UAX #29): the
//! same words, in order, for thousands of random strings.
//!
//! The strings are drawn from scripts whose word boundaries ICU takes from
//! UAX #29's rules as written (Latin, Greek, Cyrillic, digits and the
//! punctuation between them, combining marks, compatibility characters);
//! ICU cuts Thai and CJK text with dictionaries, which UAX #29 leaves to
//! tailoring, so those are not compared.

/// Characters the random strings are made of: letters that case-fold
/// (including `ẞ`, `Σ` and `İ`), digits, the punctuation UAX #29 treats
/// specially between letters and digits (`'`, `’`, `.`, `,`, `:`, `_`, `-`),
/// spaces, a combining acute accent, and compatibility forms NFKC folds
/// (`ﬁ`, full-width letters, `①`, `ℌ`, superscript two).
const ALPHABET: &[char] = &[
    'a', 'b', 'z', 'A', 'Q', 'é', 'É', 'ö', 'ß', 'ẞ', 'æ', 'Ω', 'σ', 'Σ', 'ς', 'İ', 'ı', 'д', 'Ж',
    '0', '7', '9', ' ', ' ', '\u{a0}', '\t', '\n', '\'', '’', '.', ',', ':', '_', '-', '!', '?',
    '"', '(', '@', '#', '\u{301}', 'ﬁ', 'Ｒ', 'ｕ', '１', '①', 'ℌ', '²', '😀',
];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[test]
fn words_are_javascripts() {
    let mut rng = Rng(0x005e_ed0f_7e47);
    let texts: Vec<String> = (0..4000)
        .map(|_| {
            (0..rng.below(24))
                .map(|_| ALPHABET[rng.below(ALPHABET.len())])
                .collect()
        })
        .collect();
    let input: String = texts
        .iter()
        .map(|t| serde_json::to_string(t).unwrap() + "\n")
        .collect();
    let expected = testkit::run_node("words.mjs", &input);
    assert_eq!(expected.len(), texts.len());
    let mut differ = Vec::new();
    for (text, want) in texts.iter().zip(&expected) {
        let want: Vec<String> = serde_json::from_str(want).unwrap();
        let got = index::words(text);
        if got != want {
            differ.push(format!("{text:?}: ours {got:?}, JavaScript's {want:?}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} texts differ, e.g.:\n{}",
        differ.len(),
        texts.len(),
        differ[..differ.len().min(12)].join("\n")
    );
}
