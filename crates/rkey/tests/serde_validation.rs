//! Deserializing a `RecordKey`, `Tid`, `Nsid` or `KeyType` validates it,
//! from JSON text (escapes included) and from `serde_json::Value`.

use rkey::{KeyType, Nsid, RecordKey, Tid};
use serde_json::{Value, json};

#[test]
fn record_key_from_json_text_and_value() {
    let k: RecordKey = serde_json::from_str(r#""self""#).unwrap();
    assert_eq!(k.as_str(), "self");
    // An escape that decodes to an allowed character is fine...
    let k: RecordKey = serde_json::from_str(r#""\u0073elf""#).unwrap();
    assert_eq!(k.as_str(), "self");
    // ...and one that decodes to a disallowed one is rejected.
    assert!(serde_json::from_str::<RecordKey>(r#""a\nb""#).is_err());
    assert!(serde_json::from_str::<RecordKey>(r#""a\/b""#).is_err());
    assert!(serde_json::from_str::<RecordKey>(r#""..""#).is_err());
    assert!(serde_json::from_str::<RecordKey>("12").is_err());
    let k: RecordKey = serde_json::from_value(json!("pre:fix")).unwrap();
    assert_eq!(k.as_str(), "pre:fix");
    assert!(serde_json::from_value::<RecordKey>(json!("any space")).is_err());
    assert!(serde_json::from_value::<RecordKey>(Value::Null).is_err());
    assert_eq!(serde_json::to_value(&k).unwrap(), json!("pre:fix"));
}

#[test]
fn tid_serde_is_a_string() {
    let tid: Tid = serde_json::from_str(r#""3jui7kd54zh2y""#).unwrap();
    assert_eq!(serde_json::to_string(&tid).unwrap(), r#""3jui7kd54zh2y""#);
    let tid2: Tid = serde_json::from_value(json!("3jui7kd54zh2y")).unwrap();
    assert_eq!(tid, tid2);
    let escaped: Tid = serde_json::from_str(r#""\u0033jui7kd54zh2y""#).unwrap();
    assert_eq!(tid, escaped);
    assert!(serde_json::from_str::<Tid>(r#""3JUI7KD54ZH2Y""#).is_err());
    assert!(serde_json::from_value::<Tid>(json!(12)).is_err());
}

#[test]
fn nsid_and_key_type_serde_validate() {
    let n: Nsid = serde_json::from_value(json!("app.bsky.feed.post")).unwrap();
    assert_eq!(n.name(), "post");
    assert!(serde_json::from_value::<Nsid>(json!("app.bsky")).is_err());
    let t: KeyType = serde_json::from_value(json!("literal:self")).unwrap();
    assert_eq!(t, KeyType::Literal(RecordKey::new("self").unwrap()));
    assert_eq!(serde_json::to_value(&t).unwrap(), json!("literal:self"));
    assert!(serde_json::from_value::<KeyType>(json!("literal:a b")).is_err());
    assert!(serde_json::from_value::<KeyType>(json!("uuid")).is_err());
}
