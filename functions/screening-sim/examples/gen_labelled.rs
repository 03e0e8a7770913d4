//! Writes the labelled query set to stdout:
//! `cargo run -p screening-sim --example gen_labelled > functions/screening-sim/tests/data/labelled.jsonl`.
//! The generator itself is `tests/support/labelled_gen.rs` (shared with `tests/labelled.rs`).
#![allow(missing_docs, clippy::unwrap_used)]

#[path = "../tests/support/labelled_gen.rs"]
mod labelled_gen;

fn main() {
    print!("{}", labelled_gen::render(&labelled_gen::generate()));
}
