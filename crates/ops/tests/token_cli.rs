//! `kosha-ops token …` end to end: keygen, mint, verify; exit statuses 0 / 1 / 2.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

use kosha_auth::{Role, Verifier, VerifierConfig};

const ISSUER: &str = "http://127.0.0.1/kosha-dev";

fn ops(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kosha-ops"));
    command
        .args(args)
        .env_remove("KOSHA_DEV_SIGNING_KEY")
        .env_remove("KOSHA_JWT_ISSUER");
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("kosha-ops-{name}-{}", std::process::id()))
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .trim()
        .to_owned()
}

#[tokio::test]
async fn keygen_then_mint_gives_a_token_the_verifier_accepts() {
    let dir = temp_dir("mint");
    let out = ops(
        &["token", "keygen", "--out-dir", dir.to_str().unwrap()],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let key = line["private_key"].as_str().unwrap().to_owned();

    // A second keygen keeps the key (same kid); --force replaces it.
    let again = ops(
        &["token", "keygen", "--out-dir", dir.to_str().unwrap()],
        &[],
    );
    let again: serde_json::Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(again["kid"], line["kid"]);

    let out = ops(
        &[
            "token",
            "mint",
            "--role",
            "agent",
            "--role",
            "operator",
            "--client-id",
            "dev-agent",
            "--ttl",
            "30m",
        ],
        &[
            ("KOSHA_DEV_SIGNING_KEY", &key),
            ("KOSHA_JWT_ISSUER", ISSUER),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = stdout(&out);

    let jwks_url = format!("file://{}", line["jwks"].as_str().unwrap());
    let config = VerifierConfig::new(ISSUER, Some(&jwks_url), ["dev-agent"], None).unwrap();
    let principal = Verifier::new(config, kosha_runtime::tls::http_client().unwrap())
        .verify(Some(&format!("Bearer {token}")))
        .await
        .unwrap();
    assert_eq!(principal.client_id, "dev-agent");
    assert_eq!(principal.roles, vec![Role::Agent, Role::Operator]);
    let claims: serde_json::Value =
        jsonwebtoken::dangerous::insecure_decode_claims(&token).unwrap();
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        1800
    );

    // --user: the person behind the client, whose token the gateway tells by `username`.
    let out = ops(
        &[
            "token",
            "mint",
            "--role",
            "agent",
            "--client-id",
            "dev-agent",
            "--user",
            "user-7",
        ],
        &[
            ("KOSHA_DEV_SIGNING_KEY", &key),
            ("KOSHA_JWT_ISSUER", ISSUER),
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let claims: serde_json::Value =
        jsonwebtoken::dangerous::insecure_decode_claims(stdout(&out)).unwrap();
    assert_eq!(
        (&claims["sub"], &claims["username"], &claims["client_id"]),
        (
            &serde_json::json!("user-7"),
            &serde_json::json!("user-7"),
            &serde_json::json!("dev-agent")
        )
    );
    assert_eq!(claims["cognito:groups"], serde_json::json!(["agent"]));
    assert_eq!(claims["scope"], "openid kosha/agent");

    let forced = ops(
        &[
            "token",
            "keygen",
            "--force",
            "--out-dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    let forced: serde_json::Value = serde_json::from_str(&stdout(&forced)).unwrap();
    assert_ne!(forced["kid"], line["kid"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_usage_exits_2() {
    for args in [
        &["token", "mint", "--role", "admin", "--client-id", "x"][..],
        &["token", "mint", "--client-id", "x"][..],
        &[
            "token",
            "mint",
            "--role",
            "agent",
            "--client-id",
            "x",
            "--user",
            "a b",
        ][..],
        &[
            "token",
            "mint",
            "--role",
            "agent",
            "--client-id",
            "x",
            "--ttl",
            "12x",
        ][..],
        &[
            "token",
            "mint",
            "--role",
            "agent",
            "--client-id",
            "x",
            "--ttl",
            "0s",
        ][..],
        &["token", "frobnicate"][..],
    ] {
        assert_eq!(ops(args, &[]).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn missing_key_exits_1_with_one_line() {
    let missing = temp_dir("none").join("dev-signing-key.pem");
    let out = ops(
        &["token", "mint", "--role", "agent", "--client-id", "x"],
        &[("KOSHA_DEV_SIGNING_KEY", missing.to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("kosha-ops: "), "{stderr}");
    assert!(out.stdout.is_empty());
}

/// A client id the gateway will not accept still mints (tests mint such tokens on purpose),
/// with a one-line warning on stderr when `KOSHA_ALLOWED_CLIENT_IDS` says so (SPEC §5, §11).
#[test]
fn mint_warns_when_the_client_id_is_not_allowed() {
    let dir = temp_dir("allowed");
    let out = ops(
        &["token", "keygen", "--out-dir", dir.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let key = dir.join("dev-signing-key.pem");
    let mint = |client_id: &str, allowed: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kosha-ops"));
        command
            .args(["token", "mint", "--role", "agent", "--client-id", client_id])
            .env("KOSHA_DEV_SIGNING_KEY", &key)
            .env("KOSHA_JWT_ISSUER", ISSUER)
            .env_remove("KOSHA_ALLOWED_CLIENT_IDS");
        if let Some(list) = allowed {
            command.env("KOSHA_ALLOWED_CLIENT_IDS", list);
        }
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{client_id} {allowed:?}");
        assert_eq!(stdout(&out).split('.').count(), 3, "a JWT on stdout");
        String::from_utf8(out.stderr).unwrap()
    };
    let warning = mint("someone-else", Some("kosha-dev-agent, kosha-dev-operator"));
    assert_eq!(warning.lines().count(), 1, "{warning}");
    assert!(warning.starts_with("kosha-ops: warning: "), "{warning}");
    assert!(warning.contains("\"someone-else\""), "{warning}");
    assert!(warning.contains("KOSHA_ALLOWED_CLIENT_IDS"), "{warning}");
    assert!(warning.contains("reject"), "{warning}");
    // Listed (the gateway trims around commas), unset, or blank: nothing to say.
    assert_eq!(
        mint(
            "kosha-dev-operator",
            Some("kosha-dev-agent, kosha-dev-operator")
        ),
        ""
    );
    assert_eq!(mint("someone-else", None), "");
    assert_eq!(mint("someone-else", Some(" , ")), "");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--role` may be given more than once (SPEC §11): in any order, repeats collapsing, so the
/// tester's token (`agent` and `operator`, SPEC §2) carries each group once.
#[test]
fn role_may_be_repeated() {
    let dir = temp_dir("roles");
    let out = ops(
        &["token", "keygen", "--out-dir", dir.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let key = dir.join("dev-signing-key.pem");
    let groups = |roles: &[&str]| {
        let mut args = vec!["token", "mint", "--client-id", "kosha-dev-tester"];
        for role in roles {
            args.extend(["--role", role]);
        }
        let out = ops(&args, &[("KOSHA_DEV_SIGNING_KEY", key.to_str().unwrap())]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let claims: serde_json::Value =
            jsonwebtoken::dangerous::insecure_decode_claims(stdout(&out)).unwrap();
        claims["cognito:groups"].clone()
    };
    let both = serde_json::json!(["agent", "operator"]);
    assert_eq!(groups(&["agent", "operator"]), both);
    assert_eq!(groups(&["operator", "agent", "operator"]), both);
    assert_eq!(groups(&["agent", "agent"]), serde_json::json!(["agent"]));
    // One flag per role: a comma list is not a role.
    let out = ops(
        &[
            "token",
            "mint",
            "--client-id",
            "x",
            "--role",
            "agent,operator",
        ],
        &[("KOSHA_DEV_SIGNING_KEY", key.to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
