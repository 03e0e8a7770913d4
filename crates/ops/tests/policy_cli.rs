//! `kosha-ops policy check|test` end to end (SPEC §5a, §11): the binary on policy files, with
//! tokens signed by a dev key and verified as the gateway verifies them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use kosha_auth::Role;
use kosha_auth::dev::{self, MintClaims};
use serde_json::{Value, json};

use common::{now_s, stderr, stdout};

const ISSUER: &str = "http://127.0.0.1/kosha-dev";

/// The role table, a dispute cap that a supervisor escapes, a confirmation above 2,000.00, a
/// read-only machine client, and a branch tag that closes list_transactions at night.
const POLICIES: &str = r#"// Kosha's role table.
@id("agents-call-the-data-tools")
permit (principal, action, resource) when { principal.roles.contains("agent") };

@id("disputes-capped")
@reason("disputes over 500.00 EUR need a supervisor")
forbid (principal, action == Kosha::Action::"raise_dispute", resource)
when { context has record && context.record.currency == "EUR" && context.input.amount_minor > 50000 }
unless { principal.groups.contains("supervisor") };

@id("big-disputes-confirmed")
forbid (principal, action == Kosha::Action::"raise_dispute", resource)
when { context.input.amount_minor > 200000 } unless { context.confirmed };

@id("reporting-app-reads-only")
@reason("this app may only read")
forbid (principal, action in [Kosha::Action::"raise_dispute", Kosha::Action::"flag_transaction_for_review"], resource)
when { principal.client_id == "reporting-app" };

@id("north-branch-by-day")
@reason("the north branch lists transactions from 08:00 to 18:00 UTC")
forbid (principal, action == Kosha::Action::"list_transactions", resource)
when { principal.hasTag("custom:branch") && principal.getTag("custom:branch") == "north"
       && (context.time_of_day < 28800 || context.time_of_day >= 64800) };
"#;

/// A directory of its own with the dev key pair, the policy file and a JWKS URL for it.
struct Fixture {
    dir: PathBuf,
    pem: String,
    kid: String,
}

impl Fixture {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "kosha-ops-policy-{name}-{}-{:x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        let keys = dev::generate().unwrap();
        dev::write_key_files(&dir, &keys).unwrap();
        let fixture = Self {
            dir,
            pem: keys.private_pem,
            kid: keys.kid,
        };
        fixture.file("policies.cedar", POLICIES);
        fixture
    }

    fn file(&self, name: &str, text: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    fn policies(&self) -> String {
        self.dir.join("policies.cedar").display().to_string()
    }

    /// The gateway's token settings for this fixture's key.
    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kosha-ops"));
        let jwks = format!("file://{}", self.dir.join(dev::JWKS_FILE).display());
        command
            .env("KOSHA_JWT_ISSUER", ISSUER)
            .env("KOSHA_JWKS_URL", jwks)
            .env("KOSHA_ALLOWED_CLIENT_IDS", "app,reporting-app")
            .env_remove("KOSHA_SCOPE_PREFIX")
            .env_remove("KOSHA_JWT_LEEWAY_S");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// A user's token of app client `client_id` in `groups`, with `extra` claims.
    fn user_token(&self, client_id: &str, user: &str, groups: &[&str], extra: Value) -> String {
        let roles = Role::from_groups(groups.iter().copied());
        let mut claims = MintClaims::user(ISSUER, client_id, user, user, &roles)
            .to_json(now_s())
            .unwrap();
        claims["cognito:groups"] = json!(groups);
        if let (Some(claims), Value::Object(extra)) = (claims.as_object_mut(), extra) {
            claims.extend(extra);
        }
        dev::sign_claims(&self.pem, &self.kid, &claims).unwrap()
    }

    /// A machine client's token of the client-credentials grant with `scopes`.
    fn machine_token(&self, client_id: &str, scopes: &[&str]) -> String {
        let claims = MintClaims::client_credentials(ISSUER, client_id, scopes)
            .to_json(now_s())
            .unwrap();
        dev::sign_claims(&self.pem, &self.kid, &claims).unwrap()
    }

    /// `policy test` on the fixture's policies; the decision's line.
    fn decide(&self, token: &str, tool: &str, args: Value, extra: &[&str]) -> Value {
        let args = args.to_string();
        let policies = self.policies();
        let mut argv = vec![
            "policy", "test", &policies, "--token", token, "--tool", tool, "--args", &args,
        ];
        argv.extend_from_slice(extra);
        let out = self.run(&argv);
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
        serde_json::from_str(stdout(&out).trim()).unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Exit `code`, nothing on stdout, one line on stderr; that line.
fn refused(o: &Output, code: i32) -> String {
    assert_eq!(o.status.code(), Some(code), "stderr: {}", stderr(o));
    assert_eq!(stdout(o), "");
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    err
}

const EUR_812: &str = r#"{"account_id": "acc_0012", "amount_minor": 81240, "currency": "EUR"}"#;

fn dispute() -> Value {
    json!({"transaction_id": "txn_000341", "reason": "charged twice"})
}

#[test]
fn check_accepts_a_valid_file_and_names_its_policies() {
    let f = Fixture::new("check-ok");
    let out = f.run(&["policy", "check", &f.policies()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "ok: 5 policies (agents-call-the-data-tools, disputes-capped, big-disputes-confirmed, \
         reporting-app-reads-only, north-branch-by-day)\n"
    );
    assert_eq!(stderr(&out), "");
    // The built-in set, as shipped, is a valid file too.
    let builtin = f.file("builtin.cedar", kosha_authz::BUILTIN);
    let out = f.run(&["policy", "check", &builtin]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("ok: 2 policies ("),
        "{}",
        stdout(&out)
    );
}

#[test]
fn check_refuses_a_syntax_error_naming_its_line() {
    let f = Fixture::new("check-syntax");
    let text = "@id(\"fine\")\npermit (principal, action, resource);\n\n@id(\"broken\")\n\
                permit (principal, action, resource)\nwhen { principal.client_id == };\n";
    let path = f.file("syntax.cedar", text);
    let err = refused(&f.run(&["policy", "check", &path]), 1);
    assert!(err.starts_with(&format!("kosha-ops: {path}: ")), "{err}");
    assert!(err.contains(" at line 6: "), "{err}");
}

#[test]
fn check_refuses_a_validation_error_naming_the_policy_and_its_line() {
    let f = Fixture::new("check-validation");
    let text = "@id(\"fine\")\npermit (principal, action, resource);\n\n@id(\"typo\")\n\
                forbid (principal, action == Kosha::Action::\"raise_dispute\", resource)\n\
                when { context.input.amount > 50000 };\n";
    let path = f.file("typo.cedar", text);
    let err = refused(&f.run(&["policy", "check", &path]), 1);
    assert!(
        err.starts_with(&format!("kosha-ops: {path}: policy typo at line 6: ")),
        "{err}"
    );
}

#[test]
fn check_refuses_a_confirmation_read_for_a_read_tool() {
    // SPEC §5b: only the write tools' context has `confirmed`.
    let f = Fixture::new("check-confirmed");
    let text = "@id(\"agents\")\npermit (principal, action, resource);\n\n\
                @id(\"confirm-reads\")\n\
                forbid (principal, action == Kosha::Action::\"get_transaction\", resource)\n\
                unless { context.confirmed };\n";
    let path = f.file("confirm-reads.cedar", text);
    let err = refused(&f.run(&["policy", "check", &path]), 1);
    assert!(err.contains("policy confirm-reads at line "), "{err}");
    // The same rule on a write tool is fine.
    let writes = text.replace("get_transaction", "raise_dispute");
    let path = f.file("confirm-writes.cedar", &writes);
    let out = f.run(&["policy", "check", &path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn check_usage_and_unreadable_files() {
    let f = Fixture::new("check-usage");
    refused(&f.run(&["policy", "check"]), 2);
    refused(&f.run(&["policy", "check", "a.cedar", "b.cedar"]), 2);
    let missing = f.dir.join("missing.cedar").display().to_string();
    let err = refused(&f.run(&["policy", "check", &missing]), 1);
    assert!(
        err.contains("cannot read") && err.contains(&missing),
        "{err}"
    );
    // An empty file is a valid set that denies everything: said, not refused.
    let empty = f.file("empty.cedar", "// nothing yet\n");
    let out = f.run(&["policy", "check", &empty]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "ok: 0 policies ()\n");
    assert!(
        stderr(&out).contains("every call is denied"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn test_allows_with_the_deciding_permit() {
    let f = Fixture::new("allow");
    let token = f.user_token("app", "alice", &["agent"], json!({}));
    let mut small = dispute();
    small["amount_minor"] = json!(100);
    let line = f.decide(&token, "raise_dispute", small, &["--record", EUR_812]);
    assert_eq!(
        line,
        json!({"decision": "allow", "policies": ["agents-call-the-data-tools"], "listed": true})
    );
    let line = f.decide(
        &token,
        "get_transaction",
        json!({"transaction_id": "txn_000341"}),
        &[],
    );
    assert_eq!(line["decision"], "allow");
}

#[test]
fn test_forbids_with_the_forbids_reason_on_the_records_amount() {
    let f = Fixture::new("forbid");
    let agent = f.user_token("app", "alice", &["agent"], json!({}));
    // No amount given: the dispute is for the transaction's 812.40 EUR (SPEC §4).
    let line = f.decide(&agent, "raise_dispute", dispute(), &["--record", EUR_812]);
    assert_eq!(
        line,
        json!({
            "decision": "forbid",
            "policies": ["disputes-capped"],
            "reason": "disputes over 500.00 EUR need a supervisor",
            "listed": true
        })
    );
    // The group comes from the token: a supervisor may.
    let supervisor = f.user_token("app", "bob", &["agent", "supervisor"], json!({}));
    let line = f.decide(
        &supervisor,
        "raise_dispute",
        dispute(),
        &["--record", EUR_812],
    );
    assert_eq!(line["decision"], "allow", "{line}");
    // A user without a permit: forbidden, "not permitted", and not listed.
    let operator = f.user_token("app", "olga", &["operator"], json!({}));
    let line = f.decide(
        &operator,
        "get_transaction",
        json!({"transaction_id": "txn_1"}),
        &[],
    );
    assert_eq!(
        line,
        json!({"decision": "forbid", "policies": [], "reason": "not permitted", "listed": false})
    );
}

#[test]
fn test_asks_for_a_confirmation_that_lifts_the_deny() {
    let f = Fixture::new("confirm");
    let token = f.user_token("app", "bob", &["agent", "supervisor"], json!({}));
    let mut big = dispute();
    big["amount_minor"] = json!(250_000);
    let record = r#"{"account_id": "acc_0012", "amount_minor": 300000, "currency": "EUR"}"#;
    let line = f.decide(&token, "raise_dispute", big, &["--record", record]);
    assert_eq!(
        line,
        json!({"decision": "confirm", "policies": ["big-disputes-confirmed"], "listed": true})
    );
}

#[test]
fn test_says_when_the_tool_is_not_listed() {
    let f = Fixture::new("unlisted");
    // The machine client's role comes from its scope (SPEC §5); the static forbid hides the
    // write tools from it, and lists the read tools.
    let token = f.machine_token("reporting-app", &["kosha/agent"]);
    let line = f.decide(
        &token,
        "flag_transaction_for_review",
        json!({"transaction_id": "txn_000341", "reason": "odd"}),
        &[],
    );
    assert_eq!(
        line,
        json!({
            "decision": "forbid",
            "policies": ["reporting-app-reads-only"],
            "reason": "this app may only read",
            "listed": false
        })
    );
    let line = f.decide(
        &token,
        "get_transaction",
        json!({"transaction_id": "txn_000341"}),
        &[],
    );
    assert_eq!(line["listed"], true);
}

#[test]
fn test_reads_tags_from_the_token_and_the_clock_from_now() {
    let f = Fixture::new("clock");
    let north = f.user_token("app", "nina", &["agent"], json!({"custom:branch": "north"}));
    let list = json!({"account_id": "acc_0012"});
    // 2026-12-07 (a Monday) 07:59:59 and 08:00:00 UTC.
    let before = "1796630399";
    let opens = "1796630400";
    let line = f.decide(
        &north,
        "list_transactions",
        list.clone(),
        &["--now", before],
    );
    assert_eq!(line["decision"], "forbid", "{line}");
    assert_eq!(line["policies"], json!(["north-branch-by-day"]));
    // Forbidden by the clock alone: listed all the same.
    assert_eq!(line["listed"], true);
    let line = f.decide(&north, "list_transactions", list.clone(), &["--now", opens]);
    assert_eq!(line["decision"], "allow", "{line}");
    let south = f.user_token("app", "sam", &["agent"], json!({"custom:branch": "south"}));
    let line = f.decide(&south, "list_transactions", list, &["--now", before]);
    assert_eq!(line["decision"], "allow", "{line}");
}

#[test]
fn test_reads_the_token_from_stdin() {
    let f = Fixture::new("stdin");
    let token = f.user_token("app", "alice", &["agent"], json!({}));
    let policies = f.policies();
    let mut child = f
        .command()
        .args([
            "policy",
            "test",
            &policies,
            "--token",
            "-",
            "--tool",
            "get_service_health",
            "--args",
            "{}",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    writeln!(child.stdin.take().unwrap(), "{token}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let line: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(line["decision"], "allow");
}

/// `policy test` with `args` after the file; exit `code`, the stderr line.
fn test_refused(f: &Fixture, args: &[&str], code: i32) -> String {
    let policies = f.policies();
    let mut argv = vec!["policy", "test", policies.as_str()];
    argv.extend_from_slice(args);
    refused(&f.run(&argv), code)
}

#[test]
fn test_bad_usage_exits_2_with_a_clear_line() {
    let f = Fixture::new("usage");
    let token = f.user_token("app", "alice", &["agent"], json!({}));
    let t = token.as_str();
    let err = test_refused(
        &f,
        &[
            "--token",
            t,
            "--tool",
            "get_transaction",
            "--args",
            "{\"transaction_id\"",
        ],
        2,
    );
    assert!(err.contains("--args") && err.contains("not JSON"), "{err}");
    let err = test_refused(
        &f,
        &["--token", t, "--tool", "get_transaction", "--args", "[]"],
        2,
    );
    assert!(err.contains("JSON object"), "{err}");
    let err = test_refused(
        &f,
        &["--token", t, "--tool", "drop_tables", "--args", "{}"],
        2,
    );
    assert!(err.contains("not a tool"), "{err}");
    let bad_record = [
        "--record",
        r#"{"account_id": "acc_0012", "amount_minor": "1"}"#,
    ];
    let mut argv = vec!["--token", t, "--tool", "raise_dispute", "--args", "{}"];
    argv.extend_from_slice(&bad_record);
    let err = test_refused(&f, &argv, 2);
    assert!(err.contains("--record"), "{err}");
    // The cap reads context.record: the transaction must be given.
    let args = r#"{"transaction_id": "txn_000341", "reason": "r", "amount_minor": 5}"#;
    let err = test_refused(
        &f,
        &["--token", t, "--tool", "raise_dispute", "--args", args],
        2,
    );
    assert!(err.contains("give --record"), "{err}");
    // Arguments the policies read must fit the schema, named by field.
    let args = r#"{"transaction_id": "txn_000341", "reason": "r", "amount_minor": "5"}"#;
    let mut argv = vec!["--token", t, "--tool", "raise_dispute", "--args", args];
    argv.extend_from_slice(&["--record", EUR_812]);
    let err = test_refused(&f, &argv, 2);
    assert!(err.contains("amount_minor must be an integer"), "{err}");
    let err = test_refused(
        &f,
        &[
            "--token",
            t,
            "--tool",
            "list_transactions",
            "--args",
            "{\"account_id\": \"a\"}",
            "--record",
            EUR_812,
        ],
        2,
    );
    assert!(err.contains("addresses no transaction"), "{err}");
    let err = test_refused(&f, &["--tool", "get_transaction", "--args", "{}"], 2);
    assert!(err.contains("--token"), "{err}");
}

#[test]
fn test_a_token_the_gateway_refuses_exits_1_without_echoing_it() {
    let f = Fixture::new("refused");
    let args = ["--tool", "get_service_health", "--args", "{}"];
    // Signed by another key.
    let other = Fixture::new("refused-other");
    let foreign = other.user_token("app", "alice", &["agent"], json!({}));
    let mut argv = vec!["--token", foreign.as_str()];
    argv.extend_from_slice(&args);
    let err = test_refused(&f, &argv, 1);
    assert!(err.contains("401 invalid_token"), "{err}");
    assert!(!err.contains(&foreign), "the token is never echoed");
    // A client the gateway does not allow.
    let stranger = f.user_token("stranger-app", "alice", &["agent"], json!({}));
    let mut argv = vec!["--token", stranger.as_str()];
    argv.extend_from_slice(&args);
    assert!(test_refused(&f, &argv, 1).contains("401"));
    // A user in no role group: 403 before any policy.
    let nobody = f.user_token("app", "nina", &["supervisor"], json!({}));
    let mut argv = vec!["--token", nobody.as_str()];
    argv.extend_from_slice(&args);
    assert!(test_refused(&f, &argv, 1).contains("403"));
    // Without the gateway's settings the token cannot be verified: bad usage.
    let token = f.user_token("app", "alice", &["agent"], json!({}));
    let policies = f.policies();
    let out = f
        .command()
        .env_remove("KOSHA_JWT_ISSUER")
        .args(["policy", "test", &policies, "--token", &token])
        .args(args)
        .output()
        .unwrap();
    let err = refused(&out, 2);
    assert!(err.contains("KOSHA_JWT_ISSUER"), "{err}");
}

#[test]
fn test_refuses_a_file_the_gateway_would_not_start_with() {
    let f = Fixture::new("bad-file");
    let token = f.user_token("app", "alice", &["agent"], json!({}));
    let path = f.file(
        "bad.cedar",
        "permit (principal, action == Kosha::Action::\"nope\", resource);",
    );
    let out = f.run(&[
        "policy",
        "test",
        &path,
        "--token",
        &token,
        "--tool",
        "get_service_health",
        "--args",
        "{}",
    ]);
    let err = refused(&out, 1);
    assert!(err.contains("policy policy0 at line 1"), "{err}");
}
