//! Screens one name against the bundled watchlist and prints the JSON answer:
//! `cargo run -p screening-sim --example screen -- "Smith, John" [COUNTRY] [YYYY-MM-DD]`.
#![allow(missing_docs)]

use screening_sim::{ScreenRequest, Screener, Validate};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!("usage: screen NAME [COUNTRY] [DATE_OF_BIRTH]");
        std::process::exit(2);
    };
    let request = ScreenRequest::new(
        name.clone(),
        args.get(1).map(String::as_str),
        args.get(2).map(String::as_str),
    );
    match request.validate() {
        Ok(valid) => {
            let result = Screener::bundled().screen(&valid);
            println!(
                "{}",
                serde_json::to_string_pretty(&result).unwrap_or_default()
            );
        }
        Err(e) => {
            println!(
                "{}",
                serde_json::json!({"error": {"code": e.code(), "message": e.to_string()}})
            );
            std::process::exit(1);
        }
    }
}
