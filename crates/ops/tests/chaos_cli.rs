//! `kosha-ops chaos sign` with a local key (`KOSHA_CHAOS_KEY`, no AWS call): the header it
//! prints verifies with the gateway's verifier; exit statuses 0 / 2 (SPEC §9, §11). The
//! Secrets Manager path is in `cli.rs` (needs the emulator).
#![allow(clippy::unwrap_used)]

mod common;

use std::process::{Command, Output};

use kosha_resilience::chaos::{self, Fault, Rejection, Target};

use common::{now_s, stderr, stdout};

const KEY_HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn ops(args: &[&str], key: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kosha-ops"));
    command
        .args(args)
        .env_remove("KOSHA_CHAOS_KEY")
        // No emulator here: a Secrets Manager call would fail (exit 1), never reach AWS.
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true");
    if let Some(key) = key {
        command.env("KOSHA_CHAOS_KEY", key);
    }
    command.output().unwrap()
}

fn sign(extra: &[&str]) -> Output {
    let mut args = vec!["chaos", "sign"];
    args.extend_from_slice(extra);
    ops(&args, Some(KEY_HEX))
}

/// Exit 0, exactly one line on stdout, nothing on stderr; returns the line.
fn header(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
    assert_eq!(stderr(o), "");
    let out = stdout(o);
    assert_eq!(out.lines().count(), 1, "{out:?}");
    out.trim_end().to_owned()
}

/// Exit `code`, nothing on stdout, one line on stderr; returns the line.
fn refused(o: &Output, code: i32) -> String {
    assert_eq!(o.status.code(), Some(code), "stderr: {}", stderr(o));
    assert_eq!(stdout(o), "");
    assert_eq!(stderr(o).lines().count(), 1, "{:?}", stderr(o));
    stderr(o)
}

fn key() -> Vec<u8> {
    hex::decode(KEY_HEX).unwrap()
}

#[test]
fn signs_a_header_the_verifier_accepts() {
    let before = now_s();
    let line = header(&sign(&[
        "--target", "core-api", "--fault", "latency", "--ms", "800", "--p", "0.2",
    ]));
    let after = now_s();
    assert!(
        line.starts_with("target=core-api;fault=latency;ms=800;p=0.2;exp="),
        "{line}"
    );
    let spec = chaos::verify(line.as_bytes(), &key(), after).unwrap();
    assert_eq!(
        (spec.target(), spec.fault(), spec.ms(), spec.p()),
        (Target::CoreApi, Fault::Latency, Some(800), 0.2)
    );
    // Default ttl 5 minutes.
    assert!(
        (before + 300..=after + 300).contains(&spec.exp()),
        "{}",
        spec.exp()
    );
    // Another key does not verify it.
    assert_eq!(
        chaos::verify(line.as_bytes(), &[7; 32], after),
        Err(Rejection::BadSignature)
    );
}

#[test]
fn p_defaults_to_1_and_ttl_is_honoured_up_to_900s() {
    for (target, fault) in [
        ("screening-sim", "error"),
        ("openai", "timeout"),
        ("postgres", "reset"),
    ] {
        let line = header(&sign(&[
            "--target", target, "--fault", fault, "--ttl", "900s",
        ]));
        assert_eq!(
            line.split(";exp=").next().unwrap(),
            format!("target={target};fault={fault};p=1")
        );
        let now = now_s();
        let spec = chaos::verify(line.as_bytes(), &key(), now).unwrap();
        assert!(spec.exp() > now + 890 && spec.exp() <= now + 900);
        assert_eq!(spec.p(), 1.0);
    }
    let line = header(&sign(&[
        "--target", "core-api", "--fault", "error", "--ttl", "15m", "--p", "0",
    ]));
    assert!(line.contains(";p=0;"), "{line}");
}

#[test]
fn bad_usage_exits_2_with_one_line() {
    for (args, says) in [
        (&["--target", "redis", "--fault", "error"][..], "redis"),
        (
            &["--target", "core-api", "--fault", "explode"][..],
            "explode",
        ),
        (&["--target", "core-api"][..], "--fault"),
        (&["--target", "core-api", "--fault", "latency"][..], "--ms"),
        (
            &["--target", "core-api", "--fault", "error", "--ms", "5"][..],
            "--ms",
        ),
        (
            &[
                "--target", "core-api", "--fault", "latency", "--ms", "30001",
            ][..],
            "--ms",
        ),
        (
            &["--target", "core-api", "--fault", "latency", "--ms", "-1"][..],
            "",
        ),
        (
            &["--target", "core-api", "--fault", "error", "--p", "1.5"][..],
            "--p",
        ),
        (
            &["--target", "core-api", "--fault", "error", "--p", "NaN"][..],
            "--p",
        ),
        (
            &["--target", "core-api", "--fault", "error", "--p", "half"][..],
            "",
        ),
        (
            &["--target", "core-api", "--fault", "error", "--ttl", "901s"][..],
            "900s",
        ),
        (
            &["--target", "core-api", "--fault", "error", "--ttl", "16m"][..],
            "900s",
        ),
        (
            &["--target", "core-api", "--fault", "error", "--ttl", "0s"][..],
            "",
        ),
    ] {
        let line = refused(&sign(args), 2);
        assert!(line.contains(says), "{args:?}: {line}");
    }
}

#[test]
fn a_malformed_local_key_is_bad_usage_and_not_echoed() {
    for bad in ["not-hex-at-all", "abcd"] {
        let o = ops(
            &["chaos", "sign", "--target", "core-api", "--fault", "error"],
            Some(bad),
        );
        let line = refused(&o, 2);
        assert!(line.contains("KOSHA_CHAOS_KEY"), "{line}");
        assert!(!line.contains(bad), "{line}");
    }
}

#[test]
fn without_a_local_key_an_unreachable_secrets_manager_exits_1() {
    let o = ops(
        &["chaos", "sign", "--target", "core-api", "--fault", "error"],
        None,
    );
    let line = refused(&o, 1);
    assert!(line.contains("kosha/chaos-hmac-key"), "{line}");
}
