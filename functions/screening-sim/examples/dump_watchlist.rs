//! Prints the bundled watchlist as JSON lines (for inspection):
//! `cargo run -p screening-sim --example dump_watchlist`.
#![allow(missing_docs)]

use screening_sim::Watchlist;

fn main() {
    for e in Watchlist::bundled().entries() {
        let dob = e.date_of_birth.map(|d| d.to_string());
        let line = serde_json::json!({
            "id": e.id, "kind": e.kind, "name": e.name, "aliases": e.aliases,
            "country": e.country, "date_of_birth": dob,
        });
        println!("{line}");
    }
}
