//! The example policies of docs/operations.md ("Example policies", issue 46): each file of
//! docs/policies, appended to the built-in set as an operator deploys it, loads as the gateway
//! loads `KOSHA_POLICY_FILE`, every policy named by its `@id`, and the doc shows the file as it
//! is. Their behaviour on the running stack: tests/e2e/test_policies.py.
#![allow(clippy::unwrap_used)] // test helpers

use std::path::{Path, PathBuf};

use kosha_authz::{BUILTIN, Policies};

/// The repository's root (this crate is crates/authz).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every example: (file name, its text), in name order.
fn examples() -> Vec<(String, String)> {
    let dir = root().join("docs/policies");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "cedar"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn there_are_the_five_examples() {
    let names: Vec<String> = examples().into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        names,
        [
            "accounts.cedar",
            "business-hours.cedar",
            "confirm-disputes.cedar",
            "dispute-cap.cedar",
            "read-only-client.cedar"
        ]
    );
}

#[test]
fn each_example_with_the_builtin_set_validates_and_names_its_policies() {
    let builtin = Policies::builtin().ids();
    for (name, text) in examples() {
        // What `cat builtin.cedar docs/policies/<name> > policies.cedar` writes.
        let deployed = format!("{BUILTIN}{text}");
        let policies = Policies::parse(&deployed).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ids = policies.ids();
        assert_eq!(ids[..builtin.len()], builtin[..], "{name}");
        let own = &ids[builtin.len()..];
        assert!(!own.is_empty(), "{name} adds no policy");
        for id in own {
            assert!(
                text.contains(&format!("@id(\"{id}\")")),
                "{name}: {id} has no @id"
            );
        }
    }
}

#[test]
fn operations_md_shows_each_example_verbatim() {
    let doc = std::fs::read_to_string(root().join("docs/operations.md")).unwrap();
    for (name, text) in examples() {
        assert!(
            doc.contains(&format!("```cedar\n{text}```\n")),
            "docs/operations.md does not show docs/policies/{name} as it is"
        );
    }
}
