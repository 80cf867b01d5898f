//! What the web interface tests share: the browser and the data.
#![allow(dead_code, unreachable_pub)]

pub mod browser;
pub mod data;
