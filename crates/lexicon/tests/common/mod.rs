//! Shared by the lexicon crate's tests: the reference validator's answers
//! and generated Bluesky posts.
#![allow(dead_code, unreachable_pub)]

pub mod posts;

use serde_json::Value;

/// `@atproto/lexicon`'s answer (`{"valid": true}` or `{"valid": false,
/// "error"}`) to each record line of `input` (see
/// `tests/oracles/lexicon-validate.mjs`: `{"docs": […]}` lines set the
/// documents, `{"collection", "record"}` lines are validated).
pub fn reference_verdicts(input: &str) -> Vec<Value> {
    testkit::run_node("lexicon-validate.mjs", input)
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).expect("the oracle writes JSON lines"))
        .filter(|v| v.get("ok").is_none())
        .collect()
}
