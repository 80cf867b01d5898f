//! Differential test: a record's `datetime` gets `@atproto/lexicon`'s
//! verdict (its lenient check: `iso-datestring-validator`, then the strict
//! RFC 3339 check through JavaScript's `Date`), on generated datetimes of
//! every shape a client writes or mistypes: a missing zone, lower-case
//! `t`/`z`, a space separator, `±hhmm` and `-00:00` offsets, over-precise
//! fractions, leap seconds, days past the month's end, hour 24, years
//! before 1000 and after 9999, and characters out of place. Each verdict
//! and message is compared.

use crate::common;

use lexicon::{Document, Lexicons};
use serde_json::json;
use testkit::Rng;

const CASES: usize = 4000;
const COLLECTION: &str = "com.example.when";

fn two(rng: &mut Rng, max: u64) -> String {
    format!("{:02}", rng.below(max + 1))
}

/// One generated datetime.
fn datetime(rng: &mut Rng) -> String {
    let year = match rng.below(6) {
        0 => format!("{:04}", rng.below(1000)),
        1 => "9999".to_owned(),
        2 => "0000".to_owned(),
        3 => format!("{}", rng.below(100)),
        _ => format!("{:04}", 1900 + rng.below(200)),
    };
    let month = match rng.below(8) {
        0 => "02".to_owned(),
        1 => two(rng, 13),
        _ => format!("{:02}", 1 + rng.below(12)),
    };
    let day = match rng.below(6) {
        0 => "29".to_owned(),
        1 => "30".to_owned(),
        2 => "31".to_owned(),
        3 => "00".to_owned(),
        _ => format!("{:02}", 1 + rng.below(28)),
    };
    let hour = match rng.below(8) {
        0 => "24".to_owned(),
        1 => "23".to_owned(),
        _ => two(rng, 23),
    };
    let minute_max = if rng.below(10) == 0 { 60 } else { 59 };
    let minute = two(rng, minute_max);
    let second = match rng.below(8) {
        0 => "60".to_owned(),
        1 => "59".to_owned(),
        _ => two(rng, 59),
    };
    let date_sep = rng.pick(&["-", "-", "-", "/", "", "."]);
    let time_sep = rng.pick(&[":", ":", ":", ".", ""]);
    let t = rng.pick(&["T", "T", "T", "T", "t", " ", "TT"]);
    let fraction = match rng.below(6) {
        0 => String::new(),
        1 => ".".to_owned(),
        2 => {
            let digits = 1 + rng.index(13);
            format!(".{}", &"1234567890123"[..digits])
        }
        _ => format!(".{:03}", rng.below(1000)),
    };
    let seconds = if rng.below(8) == 0 {
        String::new()
    } else {
        format!("{time_sep}{second}")
    };
    let zone = match rng.below(12) {
        0 => String::new(),
        1 => "z".to_owned(),
        2 => "-00:00".to_owned(),
        3 => "+00:00".to_owned(),
        4 => {
            let h = two(rng, 24);
            format!("+{h}{}", rng.pick(&["00", "30", "45"]))
        }
        5 => {
            let h = two(rng, 24);
            format!("-{h}:{}", rng.pick(&["00", "30", "45", "15"]))
        }
        6 => {
            let h = two(rng, 14);
            format!("+{h}:{}", rng.pick(&["00", "30", "45"]))
        }
        7 => " UTC".to_owned(),
        _ => "Z".to_owned(),
    };
    let mut s = format!(
        "{year}{date_sep}{month}{date_sep}{day}{t}{hour}{time_sep}{minute}{seconds}{fraction}{zone}"
    );
    if rng.below(30) == 0 {
        // A character out of place.
        let at = rng.index(s.len() + 1);
        let c = rng.pick(&['x', '+', '-', ':', '(', '[', '\\', '*', 'é', '0']);
        if s.is_char_boundary(at) {
            s.insert(at, c);
        }
    }
    s
}

#[test]
fn record_datetimes_get_the_reference_verdicts() {
    let doc = json!({"lexicon": 1, "id": COLLECTION, "defs": {"main": {
        "type": "record", "key": "any",
        "record": {"type": "object", "properties": {
            "at": {"type": "string", "format": "datetime"}}}}}});
    let mut lexicons = Lexicons::new();
    lexicons.insert(Document::parse(doc.clone()).unwrap());
    let mut rng = Rng(0x0da7_e71e);
    let mut input = json!({"docs": [doc]}).to_string();
    input.push('\n');
    let mut ours = Vec::with_capacity(CASES);
    for _ in 0..CASES {
        let at = datetime(&mut rng);
        let record = json!({"$type": COLLECTION, "at": at});
        ours.push((
            at,
            lexicons
                .validate_record(COLLECTION, &record)
                .map_err(|e| e.to_string()),
        ));
        input.push_str(&json!({"collection": COLLECTION, "record": record}).to_string());
        input.push('\n');
    }
    let answers = common::reference_verdicts(&input);
    assert_eq!(answers.len(), ours.len());
    let mut differ = Vec::new();
    let mut accepted = 0;
    for ((at, verdict), answer) in ours.iter().zip(&answers) {
        let ours = match verdict {
            Ok(_) => json!({"valid": true}),
            Err(e) => json!({"valid": false, "error": e}),
        };
        accepted += usize::from(verdict.is_ok());
        if ours != *answer {
            differ.push(format!("{at:?}: ours {ours}, reference {answer}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {CASES} differ:\n{}",
        differ.len(),
        differ[..differ.len().min(30)].join("\n")
    );
    // Both verdicts are well represented.
    assert!(
        accepted > CASES / 10 && accepted < CASES * 9 / 10,
        "{accepted}"
    );
}
