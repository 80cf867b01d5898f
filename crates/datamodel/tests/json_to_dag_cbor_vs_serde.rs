//! `map_to_dag_cbor` writes what `serde_ipld_dagcbor` writes for the same
//! data built as an `Ipld` tree, and `dag_cbor_to_json` reads it back to the
//! JSON it came from.

use std::collections::BTreeMap;

use ipld_core::ipld::Ipld;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// The oracle's view of a JSON value: built by hand, serialized by
/// `serde_ipld_dagcbor` (which sorts map keys the dag-cbor way itself).
fn to_ipld(v: &Value) -> Ipld {
    match v {
        Value::Null => Ipld::Null,
        Value::Bool(b) => Ipld::Bool(*b),
        Value::Number(n) => Ipld::Integer(i128::from(n.as_i64().expect("integers only"))),
        Value::String(s) => Ipld::String(s.clone()),
        Value::Array(items) => Ipld::List(items.iter().map(to_ipld).collect()),
        Value::Object(map) => Ipld::Map(
            map.iter()
                .map(|(k, v)| (k.clone(), to_ipld(v)))
                .collect::<BTreeMap<_, _>>(),
        ),
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z0-9 é]{0,30}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn records_encode_as_serde_does_and_read_back(
        fields in prop::collection::btree_map("[a-z$]{1,10}", json_value(), 0..8)
    ) {
        let map: Map<String, Value> = fields
            .into_iter()
            .filter(|(k, _)| k != "$link" && k != "$bytes")
            .collect();
        let mut ours = Vec::new();
        let mut path = String::from("$");
        datamodel::map_to_dag_cbor(&map, None, &mut ours, &mut path).unwrap();
        prop_assert_eq!(&path, "$");
        let value = Value::Object(map);
        let theirs = serde_ipld_dagcbor::to_vec(&to_ipld(&value)).unwrap();
        prop_assert_eq!(&ours, &theirs);
        prop_assert_eq!(datamodel::dag_cbor_to_json(&ours), value);
    }
}

#[test]
fn a_float_is_refused_with_its_path() {
    let Value::Object(map) = serde_json::json!({"a": {"b": [1, 2.5]}}) else {
        unreachable!()
    };
    let mut path = String::from("$");
    let err = datamodel::map_to_dag_cbor(&map, None, &mut Vec::new(), &mut path).unwrap_err();
    assert!(
        err.0.starts_with("$.a.b[1]: 2.5 is not an integer"),
        "{err}"
    );
}
