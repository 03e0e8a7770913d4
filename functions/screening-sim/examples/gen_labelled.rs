//! Writes the labelled query set, or with `common` the common-names set, to stdout:
//! `cargo run -p screening-sim --example gen_labelled > functions/screening-sim/tests/data/labelled.jsonl`
//! and `cargo run -p screening-sim --example gen_labelled -- common > functions/screening-sim/tests/data/common_names.jsonl`.
//! The generator itself is `tests/support/labelled_gen.rs` and `seen_gen.rs` (shared with
//! `tests/labelled.rs`).
#![allow(missing_docs, clippy::unwrap_used)]

#[path = "../tests/support/labelled_gen.rs"]
mod labelled_gen;

fn main() {
    if std::env::args().nth(1).as_deref() == Some("common") {
        print!("{}", labelled_gen::render(&labelled_gen::common()));
    } else {
        print!("{}", labelled_gen::render(&labelled_gen::generate()));
    }
}
