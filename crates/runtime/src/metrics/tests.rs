//! The catalogue against `docs/metrics.md` and against the source (issue 45, 2026-12-05:
//! `hedges` was emitted but not catalogued, and the EMF test checks only what its calls
//! happen to emit).
//!
//! The source scan tokenises every `.rs` file under `crates/` and `functions/` that is not
//! test code (directories `tests`, `benches`, `examples`, files `tests.rs`, items under
//! `#[cfg(test)]`) and finds each `counter!`, `gauge!` and `histogram!` call: its name (a
//! string literal, or a `const` holding one anywhere in the scanned files) and its label keys
//! (`"key" => value`). Doc comments and strings are tokens, not calls, so examples in prose are
//! not counted.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

use super::{CATALOGUE, Kind, find, markdown_table};

#[test]
fn docs_print_the_catalogue() {
    let docs = include_str!("../../../../docs/metrics.md");
    let table = markdown_table();
    assert!(
        docs.contains(&table),
        "docs/metrics.md is out of date; its table must read:\n{table}"
    );
}

#[test]
fn names_are_unique_and_no_dimension_is_per_caller() {
    for (i, m) in CATALOGUE.iter().enumerate() {
        assert!(
            CATALOGUE[..i].iter().all(|o| o.name != m.name),
            "{}",
            m.name
        );
        for d in m.dimensions {
            assert!(
                !["client_id", "principal", "request_id", "trace_id"].contains(d),
                "{}: {d} is not low-cardinality",
                m.name
            );
        }
    }
}

/// One `counter!`/`gauge!`/`histogram!` call in the source.
#[derive(Debug)]
struct Call {
    file: PathBuf,
    kind: Kind,
    /// The metric name, or what the first argument was when it names no string.
    name: Result<String, String>,
    labels: Vec<String>,
}

#[test]
fn every_metric_the_source_emits_is_catalogued_with_its_kind_and_dimensions() {
    let calls = scan(&workspace());
    // A scanner that finds nothing passes everything: it must see the known call sites.
    for known in ["tool_duration_ms", "breaker_state", "outbox_published"] {
        assert!(
            calls.iter().any(|c| c.name.as_deref() == Ok(known)),
            "the scan missed {known}"
        );
    }
    let mut problems = Vec::new();
    for call in &calls {
        let file = call.file.display();
        let name = match &call.name {
            Ok(name) => name,
            Err(arg) => {
                problems.push(format!(
                    "{file}: metric name `{arg}` is neither a string literal nor a const"
                ));
                continue;
            }
        };
        let Some(metric) = find(name) else {
            problems.push(format!("{file}: `{name}` is not in the catalogue"));
            continue;
        };
        if metric.kind != call.kind {
            problems.push(format!(
                "{file}: `{name}` is emitted as a {} but catalogued as a {}",
                call.kind.as_str(),
                metric.kind.as_str()
            ));
        }
        for label in &call.labels {
            if !metric.dimensions.contains(&label.as_str()) {
                problems.push(format!(
                    "{file}: `{name}` carries `{label}`, not a catalogued dimension"
                ));
            }
        }
    }
    let emitted: BTreeSet<&str> = calls
        .iter()
        .filter_map(|c| c.name.as_deref().ok())
        .collect();
    for m in CATALOGUE {
        if !emitted.contains(m.name) {
            problems.push(format!("`{}` is catalogued but nothing emits it", m.name));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_scan_reads_literals_consts_labels_and_skips_test_code() {
    let source = r#"
        /// `counter!("in_a_doc")` is prose.
        const HEDGES: &str = "hedges";
        fn f() {
            metrics::describe_counter!("described", Unit::Count, "x");
            let c = |o| metrics::counter!(HEDGES, "dependency" => d, "outcome" => o);
            metrics::gauge!(
                "breaker_state",
                "dependency" => d.to_owned()
            ).set(1.0);
            metrics::histogram!(name_of(x)).record(1.0);
        }
        #[cfg(test)]
        mod tests { fn t() { metrics::counter!("only_in_a_test").increment(1); } }
    "#;
    let mut consts = HashMap::new();
    let tokens = TokenStream::from_str(source).unwrap_or_default();
    collect_consts(tokens.clone(), &mut consts);
    let mut calls = Vec::new();
    collect_calls(tokens, Path::new("x.rs"), &consts, &mut calls);
    let got: Vec<(Kind, Result<&str, &str>, Vec<&str>)> = calls
        .iter()
        .map(|c| {
            (
                c.kind,
                c.name.as_deref().map_err(String::as_str),
                c.labels.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Kind::Counter, Ok("hedges"), vec!["dependency", "outcome"]),
            (Kind::Gauge, Ok("breaker_state"), vec!["dependency"]),
            (Kind::Histogram, Err("name_of (x)"), vec![]),
        ]
    );
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every metric call of the workspace's non-test code under `crates/` and `functions/`.
fn scan(root: &Path) -> Vec<Call> {
    let mut files = Vec::new();
    for dir in ["crates", "functions"] {
        sources(&root.join(dir), &mut files);
    }
    files.sort();
    let parsed: Vec<(PathBuf, TokenStream)> = files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let tokens = TokenStream::from_str(&text);
            assert!(tokens.is_ok(), "{} does not tokenise", path.display());
            (path, tokens.unwrap_or_default())
        })
        .collect();
    let mut consts = HashMap::new();
    for (_, tokens) in &parsed {
        collect_consts(tokens.clone(), &mut consts);
    }
    let mut calls = Vec::new();
    for (path, tokens) in parsed {
        let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        collect_calls(tokens, &relative, &consts, &mut calls);
    }
    calls
}

/// The `.rs` files under `dir`, test code left out.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            let skipped = ["target", "tests", "benches", "examples"].contains(&name.as_str());
            if !skipped && !name.starts_with('.') {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// `const NAME: &str = "value";` anywhere in `tokens`, by name.
fn collect_consts(tokens: TokenStream, out: &mut HashMap<String, String>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Group(g) => collect_consts(g.stream(), out),
            TokenTree::Ident(id) if id == "const" => {
                let (Some(TokenTree::Ident(name)), Some(end)) = (
                    trees.get(i + 1),
                    trees[i..].iter().position(|t| is_punct(t, ';')),
                ) else {
                    continue;
                };
                let item = &trees[i..i + end];
                if let [.., TokenTree::Punct(eq), TokenTree::Literal(lit)] = item
                    && eq.as_char() == '='
                    && let Some(value) = string(&lit.to_string())
                {
                    out.insert(name.to_string(), value);
                }
            }
            _ => {}
        }
    }
}

/// The metric calls in `tokens`, items under `#[cfg(test)]` skipped.
fn collect_calls(
    tokens: TokenStream,
    file: &Path,
    consts: &HashMap<String, String>,
    out: &mut Vec<Call>,
) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        if is_punct(&trees[i], '#') {
            let inner = trees.get(i + 1).is_some_and(|t| is_punct(t, '!'));
            let attr = if inner { i + 2 } else { i + 1 };
            if trees.get(attr).is_some_and(is_cfg_test) {
                if inner {
                    return;
                }
                i = skip_item(&trees, attr + 1);
                continue;
            }
        }
        if let (TokenTree::Ident(id), Some(bang), Some(TokenTree::Group(args))) =
            (&trees[i], trees.get(i + 1), trees.get(i + 2))
            && is_punct(bang, '!')
            && args.delimiter() == Delimiter::Parenthesis
        {
            let kind = match id.to_string().as_str() {
                "counter" => Some(Kind::Counter),
                "gauge" => Some(Kind::Gauge),
                "histogram" => Some(Kind::Histogram),
                _ => None,
            };
            if let Some(kind) = kind {
                out.push(call(kind, file, args.stream(), consts));
            }
        }
        if let TokenTree::Group(g) = &trees[i] {
            collect_calls(g.stream(), file, consts, out);
        }
        i += 1;
    }
}

/// One call from its macro arguments: the name up to the first `,`, then `"key" =>` labels.
fn call(kind: Kind, file: &Path, args: TokenStream, consts: &HashMap<String, String>) -> Call {
    let args: Vec<TokenTree> = args.into_iter().collect();
    let end = args
        .iter()
        .position(|t| is_punct(t, ','))
        .unwrap_or(args.len());
    let first = TokenStream::from_iter(args[..end].iter().cloned()).to_string();
    let name = match &args[..end] {
        [TokenTree::Literal(lit)] => string(&lit.to_string()),
        [.., TokenTree::Ident(id)] => consts.get(&id.to_string()).cloned(),
        _ => None,
    };
    let labels = args[end..]
        .windows(3)
        .filter_map(|w| match w {
            [
                TokenTree::Literal(key),
                TokenTree::Punct(eq),
                TokenTree::Punct(gt),
            ] if eq.as_char() == '=' && eq.spacing() == Spacing::Joint && gt.as_char() == '>' => {
                string(&key.to_string())
            }
            _ => None,
        })
        .collect();
    Call {
        file: file.to_path_buf(),
        kind,
        name: name.ok_or(first),
        labels,
    }
}

/// Past the item that starts at `from`: its `{…}` body or its `;`.
fn skip_item(trees: &[TokenTree], from: usize) -> usize {
    trees[from..]
        .iter()
        .position(|t| {
            is_punct(t, ';')
                || matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace)
        })
        .map_or(trees.len(), |p| from + p + 1)
}

fn is_cfg_test(tree: &TokenTree) -> bool {
    matches!(tree, TokenTree::Group(g)
        if g.delimiter() == Delimiter::Bracket && g.stream().to_string().replace(' ', "") == "cfg(test)")
}

fn is_punct(tree: &TokenTree, c: char) -> bool {
    matches!(tree, TokenTree::Punct(p) if p.as_char() == c)
}

/// The value of a plain string literal token (`"name"`), not of a raw or byte string.
fn string(literal: &str) -> Option<String> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then(|| inner.to_owned())
}
