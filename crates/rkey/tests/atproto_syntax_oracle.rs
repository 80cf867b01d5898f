//! Differential test: our record key, TID, NSID, DID and handle validators agree with
//! `@atproto/syntax` (npm) on every string of a generated corpus.

use rkey::{Tid, validate_did, validate_handle, validate_nsid, validate_record_key};

use testkit::Rng;

fn corpus() -> Vec<String> {
    let rkey_chars: Vec<char> = ('A'..='Z')
        .chain('a'..='z')
        .chain('0'..='9')
        .chain("._:~-".chars())
        .collect();
    let tid_chars: Vec<char> = "234567abcdefghijklmnopqrstuvwxyz".chars().collect();
    let nsid_chars: Vec<char> = ('a'..='z').chain('0'..='9').chain("-.AZ".chars()).collect();
    let mut rng = Rng(0x5eed);
    let mut out: Vec<String> = Vec::new();

    // Spec examples and classic edge cases.
    for s in [
        "",
        ".",
        "..",
        "...",
        "self",
        "3jui7kd54zh2y",
        "dHJ1ZQ==",
        "a\n",
        "\na",
        " a",
        "a ",
        "a\r",
        "a\0",
        "app.bsky.feed.post",
        "a.b.c",
        "a.b",
        "com.example.fooBar",
        "com.example.3",
        "com.exa-mple.foo",
        "com.example.foo-bar",
        "-com.example.foo",
        "1com.example.foo",
        "com..foo",
        "com.example.",
        "3jzfcijpj2z2-",
        "3JZFCIJPJ2Z2A",
        "3jzf-cijp-j2z2",
        "2222222222222",
        "zzzzzzzzzzzzz",
        "jzzzzzzzzzzzz",
        "kzzzzzzzzzzzz",
        "did:web:example.com",
        "did:plc:z72i7hdynmk6r22z27h6tvur",
        "did:method:val:two",
        "did:m:v",
        "did:method::::val",
        "did:method:-:_:.",
        "did:key:zQ3shZc2QzApp2oymGvQbzP8eKheVshBHbU4ZYjeXqwSKEn6N",
        "did:method:val%BB",
        "did:method:val%",
        "did:method:val:",
        "did:METHOD:val",
        "did:m123:val",
        "DID:method:val",
        "did:method:",
        "did:method:val/two",
        "did:method:val?two",
        "did:method:val#two",
        "did:",
        "did:web",
        "alice.example.com",
        "john.test",
        "jan.test",
        "a234567890123456789.test",
        "john2.test",
        "john-john.test",
        "john.bsky.app",
        "jo.hn",
        "a.co",
        "x.y",
        "xn--ls8h.test",
        "example.t",
        "jo_hn.test",
        "-john.test",
        "john.0",
        "john.-",
        "john.test.",
        ".john.test",
        "jo!hn.test",
        "john..test",
        "john.123",
        "john.test-",
        "laptop.local",
        "8.cn",
        "11.test",
        "2gzyxa5ihm7nsggfxnu52rck2vv4rvmdlkiu3zzui5du4xyclen53wid.onion",
    ] {
        out.push(s.to_owned());
    }
    // Length boundaries.
    for len in [
        1, 2, 12, 13, 14, 63, 64, 65, 253, 316, 317, 318, 511, 512, 513, 1024,
    ] {
        out.push("a".repeat(len));
        out.push("7".repeat(len));
        out.push(format!("com.{}.x", "b".repeat(len.saturating_sub(6))));
        out.push(format!("a.{}.b", "c".repeat(len.min(70))));
        out.push(format!("did:web:{}", "d".repeat(len)));
        out.push(format!("{}.test", "h".repeat(len.saturating_sub(5))));
        out.push(
            std::iter::repeat_n("abcdefghi", len / 10 + 1)
                .collect::<Vec<_>>()
                .join("."),
        );
    }
    // Every ASCII byte alone, embedded, at each end, and replacing a TID char.
    for b in 0u8..=127 {
        let c = char::from(b);
        out.push(c.to_string());
        out.push(format!("ab{c}cd"));
        out.push(format!("{c}abc"));
        out.push(format!("abc{c}"));
        out.push(format!("3jui7kd54zh2{c}"));
        out.push(format!("{c}jui7kd54zh2y"));
        out.push(format!("com.ex{c}ample.foo"));
        out.push(format!("com.example.fo{c}o"));
        out.push(format!("did:pl{c}:abc"));
        out.push(format!("did:plc:ab{c}c"));
        out.push(format!("alice.exa{c}mple.com"));
    }
    // Unicode look-alikes and whitespace.
    for s in [
        "ѕelf",
        "ｓｅｌｆ",
        "self\u{200b}",
        "\u{feff}self",
        "é",
        "e\u{301}",
        "a\u{a0}b",
        "a\tb",
        "a\u{2028}b",
        "３jui7kd54zh2y",
        "ǀ",
        "a∶b",
        "a‐b",
        "a～b",
        "日本",
        "😀",
        "a😀",
        "com.exämple.foo",
    ] {
        out.push(s.to_owned());
    }
    // Random valid-alphabet keys, TIDs, NSIDs, and mutated variants.
    for _ in 0..3000 {
        let len = 1 + rng.below(20) as usize;
        out.push((0..len).map(|_| rng.pick(&rkey_chars)).collect());
        let len = if rng.below(4) == 0 {
            520
        } else {
            1 + rng.below(40) as usize
        };
        out.push((0..len).map(|_| rng.pick(&rkey_chars)).collect());
        out.push(Tid::from_u64(rng.next_u64()).to_string());
        let mut tid: Vec<char> = Tid::from_u64(rng.next_u64() >> 1)
            .to_string()
            .chars()
            .collect();
        let i = rng.below(13) as usize;
        tid[i] = rng.pick(&tid_chars);
        out.push(tid.into_iter().collect());
        let segments = 2 + rng.below(4) as usize;
        let nsid: Vec<String> = (0..segments)
            .map(|_| {
                let len = 1 + rng.below(8) as usize;
                (0..len).map(|_| rng.pick(&nsid_chars)).collect()
            })
            .collect();
        out.push(nsid.join("."));
        out.push(nsid.join(".").replace('A', "did:"));
        out.push(format!("did:{}", nsid.join(":")));
    }
    out
}

#[test]
fn validators_agree_with_atproto_syntax() {
    let corpus = corpus();
    let input: String = corpus
        .iter()
        .map(|s| serde_json::to_string(s).unwrap() + "\n")
        .collect();
    let answers = testkit::run_node("atproto-syntax.mjs", &input);
    assert_eq!(answers.len(), corpus.len(), "one oracle answer per input");
    let mut disagreements = Vec::new();
    let (mut valid_rkeys, mut valid_tids, mut valid_nsids) = (0, 0, 0);
    let (mut valid_dids, mut valid_handles) = (0, 0);
    for (s, answer) in corpus.iter().zip(&answers) {
        let oracle: serde_json::Value = serde_json::from_str(answer).unwrap();
        let ours = [
            ("rkey", validate_record_key(s).is_ok()),
            ("tid", Tid::parse(s).is_ok()),
            ("nsid", validate_nsid(s).is_ok()),
            ("did", validate_did(s).is_ok()),
            ("handle", validate_handle(s).is_ok()),
        ];
        for (what, ok) in ours {
            if oracle[what].as_bool() != Some(ok) {
                disagreements.push(format!("{what} {s:?}: ours {ok}, oracle {}", oracle[what]));
            }
        }
        valid_rkeys += usize::from(ours[0].1);
        valid_tids += usize::from(ours[1].1);
        valid_nsids += usize::from(ours[2].1);
        valid_dids += usize::from(ours[3].1);
        valid_handles += usize::from(ours[4].1);
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    // The corpus must exercise both answers of every validator.
    for (what, valid) in [
        ("rkey", valid_rkeys),
        ("tid", valid_tids),
        ("nsid", valid_nsids),
    ] {
        assert!(
            valid > 500 && valid < corpus.len() - 500,
            "{what}: {valid} of {} valid",
            corpus.len()
        );
    }
    // DIDs and handles are rarer in the corpus; both answers still occur.
    for (what, valid) in [("did", valid_dids), ("handle", valid_handles)] {
        assert!(
            valid > 50 && valid < corpus.len() - 50,
            "{what}: {valid} of {} valid",
            corpus.len()
        );
    }
}
