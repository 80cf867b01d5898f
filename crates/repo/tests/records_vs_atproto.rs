//! Differential test: records encode to the same dag-cbor CID, and read
//! back as the same JSON, as with `@atproto/lex-json` + `@ipld/dag-cbor`
//! (npm); both reject the same invalid records.

use repo::Record;
use serde_json::{Value, json};

const COLLECTION: &str = "com.example.record";

use testkit::Rng;

const CIDS: [&str; 2] = [
    "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
    "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku",
];

fn value(rng: &mut Rng, depth: u32) -> Value {
    let max = if depth >= 4 { 6 } else { 9 };
    match rng.below(max) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => {
            // Safe integers (JS's limit) of every magnitude, both signs.
            let bits = rng.below(53);
            let n = (rng.next_u64() >> (64 - bits.max(1))) as i64;
            json!(if rng.below(2) == 0 { n } else { -n })
        }
        3 => {
            let len = rng.below(12) as usize;
            let pool = [
                "a", "Z", "0", " ", "é", "日", "😀", "\"", "\\", "\n", "$", "ß",
            ];
            Value::String(
                (0..len)
                    .map(|_| pool[rng.below(pool.len() as u64) as usize])
                    .collect(),
            )
        }
        4 => json!({ "$link": CIDS[rng.below(2) as usize] }),
        5 => {
            let len = rng.below(20) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            use base64::Engine as _;
            json!({ "$bytes": base64::engine::general_purpose::STANDARD_NO_PAD.encode(bytes) })
        }
        6 | 7 => Value::Array((0..rng.below(4)).map(|_| value(rng, depth + 1)).collect()),
        _ => object(rng, depth + 1),
    }
}

fn object(rng: &mut Rng, depth: u32) -> Value {
    let keys = [
        "a",
        "bb",
        "text",
        "createdAt",
        "x1",
        "Aa",
        "aa",
        "ü",
        "longer_key_name",
        "k",
    ];
    let mut map = serde_json::Map::new();
    for _ in 0..rng.below(6) {
        let k = keys[rng.below(keys.len() as u64) as usize];
        map.insert(k.to_owned(), value(rng, depth));
    }
    Value::Object(map)
}

fn corpus() -> Vec<Value> {
    let mut rng = Rng(0xdecaf);
    let mut out = Vec::new();
    for _ in 0..1500 {
        let mut record = object(&mut rng, 0);
        record["$type"] = json!(COLLECTION);
        out.push(record);
    }
    // Invalid: floats, malformed links and bytes, anywhere in the tree.
    for bad in [
        json!(1.5),
        json!(-0.25),
        json!(1e300),
        json!({ "$link": "not a cid" }),
        json!({ "$link": 42 }),
        json!({ "$link": CIDS[0], "extra": 1 }),
        json!({ "$bytes": "***" }),
        json!({ "$bytes": 7 }),
    ] {
        out.push(json!({ "$type": COLLECTION, "v": bad.clone() }));
        out.push(json!({ "$type": COLLECTION, "deep": [{ "v": [bad] }] }));
    }
    out
}

#[test]
fn records_match_atproto_encoding() {
    let corpus = corpus();
    let input: String = corpus.iter().map(|v| v.to_string() + "\n").collect();
    let answers = testkit::run_node("record-cid.mjs", &input);
    assert_eq!(answers.len(), corpus.len(), "one oracle answer per record");
    let (mut valid, mut invalid) = (0, 0);
    for (record, answer) in corpus.iter().zip(&answers) {
        let oracle: Value = serde_json::from_str(answer).unwrap();
        let ours = Record::from_json(COLLECTION, record.clone());
        match (&ours, oracle.get("cid")) {
            (Ok(ours), Some(cid)) => {
                valid += 1;
                assert_eq!(
                    ours.cid().to_string(),
                    cid.as_str().unwrap(),
                    "CID of {record}"
                );
                assert_eq!(ours.to_json(), oracle["json"], "JSON of {record}");
                // Reading the stored block back gives the same record.
                let again = Record::from_block(ours.block().clone()).unwrap();
                assert_eq!(&again, ours);
            }
            (Err(_), None) => invalid += 1,
            (ours, _) => panic!("disagree on {record}: ours {ours:?}, oracle {oracle}"),
        }
    }
    assert!(
        valid >= 1500 && invalid >= 16,
        "{valid} valid, {invalid} invalid"
    );
}

#[test]
fn type_is_filled_in_and_checked() {
    let r = Record::from_json(COLLECTION, json!({ "text": "hi" })).unwrap();
    assert_eq!(r.to_json(), json!({ "$type": COLLECTION, "text": "hi" }));
    let err = Record::from_json(COLLECTION, json!({ "$type": "com.other.thing" })).unwrap_err();
    assert!(err.to_string().contains("com.other.thing"), "{err}");
    let err = Record::from_json(COLLECTION, json!(["not", "an", "object"])).unwrap_err();
    assert!(err.to_string().contains("JSON object"), "{err}");
}

#[test]
fn errors_name_the_path() {
    let err = Record::from_json(COLLECTION, json!({ "a": [0, { "b": 2.5 }] })).unwrap_err();
    assert!(err.to_string().contains("$.a[1].b"), "{err}");
}
