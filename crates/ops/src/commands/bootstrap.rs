//! `kosha-ops bootstrap`: creates what SPEC §8–§10 need, idempotently (existing resources are
//! kept as they are):
//! - the state table `KOSHA_STATE_TABLE` (pk S, on-demand, TTL on `expires_at`);
//! - queues `kosha-events` and `kosha-screening-requests`, each with a DLQ (`<name>-dlq`,
//!   redrive after 5 receives for events, 1,000 for screening requests);
//! - the chaos secret `KOSHA_CHAOS_SECRET_ID`: 32 random bytes as 64 lowercase hex characters.
//!   An existing secret is never rotated (its value is printed, even when `KOSHA_CHAOS_KEY`
//!   differs: a warning says so). For a loopback endpoint, a missing secret is created with
//!   `KOSHA_CHAOS_KEY` when that is set: the local emulator keeps nothing across a restart, and
//!   re-bootstrapping with the stack's environment (`.dev/stack.env`) must bring back the key
//!   stack.env already holds, not a new one. For a real account `KOSHA_CHAOS_KEY` is ignored
//!   (a key that sat in a dev file must not become a deployed secret).
//! - the confirmation secret `KOSHA_CONFIRM_SECRET_ID` (SPEC §5b), which seals the state of a
//!   person's confirmation: 32 random bytes as 64 lowercase hex characters, never rotated
//!   when it exists. Its value is never printed: nothing outside the gateway needs it, and a
//!   new one after an emulator restart only ends questions in flight (they live 10 minutes).
//!
//! Prints `KEY=value` lines for `.dev/stack.env`. Refuses (exit 2) unless every configured AWS
//! endpoint is on loopback, or `--yes` is given, and when `KOSHA_CHAOS_KEY` is set but
//! malformed. `KOSHA_CHAOS_KEY` (the secret itself) is printed only for a loopback endpoint,
//! never for a real account.

use std::collections::HashMap;

use aws_sdk_secretsmanager::Client as Secrets;
use aws_sdk_sqs::Client as Sqs;
use aws_sdk_sqs::types::QueueAttributeName;
use clap::Args;
use kosha_state::{
    CHAOS_SECRET_ENV, CONFIRM_SECRET_ENV, DEFAULT_CHAOS_SECRET_ID, DEFAULT_CONFIRM_SECRET_ID,
    StateTable, decode_hmac_key,
};

use crate::exit::Failure;

/// `kosha-ops bootstrap`
#[derive(Debug, Args)]
pub struct BootstrapArgs {
    /// Allow an endpoint that is not the local emulator (a real AWS account).
    #[arg(long)]
    yes: bool,
}

/// The chaos key a local stack already uses (stack.env's line), hex.
const CHAOS_KEY_ENV: &str = "KOSHA_CHAOS_KEY";
const EVENTS_QUEUE: &str = "kosha-events";
const SCREENING_QUEUE: &str = "kosha-screening-requests";
const MAX_RECEIVE_COUNT: u32 = 5;
/// The screening queue's redrive count, as infra/template.yaml's: a 6-hour screening-sim
/// outage must send nothing to the DLQ (screening-worker's handler module has the arithmetic).
const SCREENING_MAX_RECEIVE_COUNT: u32 = 1000;

/// Whether every endpoint the SDK will use is on loopback: `AWS_ENDPOINT_URL` set, each
/// `AWS_ENDPOINT_URL_<SERVICE>` on loopback too, and endpoint URLs not ignored.
pub fn local_endpoint(env: &HashMap<String, String>) -> Result<(), String> {
    let ignored = env
        .get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if ignored {
        return Err("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true".into());
    }
    if env
        .get("AWS_ENDPOINT_URL")
        .is_none_or(|v| v.trim().is_empty())
    {
        return Err("AWS_ENDPOINT_URL is not set".into());
    }
    for (key, value) in env {
        if !key.starts_with("AWS_ENDPOINT_URL") {
            continue;
        }
        let loopback = url::Url::parse(value.trim()).ok().is_some_and(|u| {
            matches!(
                u.host(),
                Some(url::Host::Domain("localhost"))
                    | Some(url::Host::Ipv4(std::net::Ipv4Addr::LOCALHOST))
                    | Some(url::Host::Ipv6(std::net::Ipv6Addr::LOCALHOST))
            )
        });
        if !loopback {
            return Err(format!("{key}={value} is not a loopback address"));
        }
    }
    Ok(())
}

fn failed(what: &str, err: impl std::error::Error) -> Failure {
    let mut message = format!("{what}: {err}");
    let mut source = err.source();
    while let Some(s) = source {
        message.push_str(&format!(": {s}"));
        source = s.source();
    }
    Failure::Failed(message)
}

/// Creates `name` (or finds it) and returns its URL.
async fn queue(
    sqs: &Sqs,
    name: &str,
    attributes: Option<(QueueAttributeName, String)>,
) -> Result<String, Failure> {
    let mut create = sqs.create_queue().queue_name(name);
    if let Some((k, v)) = attributes {
        create = create.attributes(k, v);
    }
    match create.send().await {
        Ok(out) => out
            .queue_url
            .ok_or_else(|| Failure::Failed(format!("CreateQueue {name}: no URL returned"))),
        // Exists with other attributes: keep it as it is.
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_queue_name_exists()) =>
        {
            sqs.get_queue_url()
                .queue_name(name)
                .send()
                .await
                .map_err(|e| failed("GetQueueUrl", e))?
                .queue_url
                .ok_or_else(|| Failure::Failed(format!("GetQueueUrl {name}: no URL returned")))
        }
        Err(e) => Err(failed("CreateQueue", e)),
    }
}

/// Creates the queue and its DLQ; returns (queue URL, DLQ URL).
async fn queue_with_dlq(
    sqs: &Sqs,
    name: &str,
    max_receive_count: u32,
) -> Result<(String, String), Failure> {
    let dlq_url = queue(sqs, &format!("{name}-dlq"), None).await?;
    let dlq_arn = sqs
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| failed("GetQueueAttributes", e))?
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .ok_or_else(|| Failure::Failed(format!("{name}-dlq: no QueueArn")))?;
    let redrive = serde_json::json!({
        "deadLetterTargetArn": dlq_arn,
        "maxReceiveCount": max_receive_count.to_string(),
    });
    let url = queue(
        sqs,
        name,
        Some((QueueAttributeName::RedrivePolicy, redrive.to_string())),
    )
    .await?;
    Ok((url, dlq_url))
}

/// What a secret holding an HMAC key is for.
struct HmacSecret<'a> {
    /// Its id.
    id: &'a str,
    /// The `Description` it is created with.
    description: &'static str,
    /// The variable whose key a missing secret is created with, and its value (`None`: a
    /// random key).
    wanted: Option<(&'static str, &'a str)>,
}

/// Reads an HMAC-key secret, creating it when missing with the wanted key (else a random
/// one); returns the hex key the secret holds.
async fn hmac_secret(secrets: &Secrets, secret: &HmacSecret<'_>) -> Result<String, Failure> {
    let id = secret.id;
    let wanted = secret.wanted.map(|(_, key)| key);
    for _ in 0..2 {
        match secrets.get_secret_value().secret_id(id).send().await {
            Ok(out) => {
                let value = out.secret_string.unwrap_or_default();
                decode_hmac_key(&value).map_err(|why| {
                    Failure::Failed(format!("secret {id} exists but is malformed: {why}"))
                })?;
                let value = value.trim().to_owned();
                if let Some((var, w)) = secret.wanted
                    && w != value
                {
                    eprintln!(
                        "kosha-ops: warning: secret {id} holds a different key than {var}; \
                         kept the secret's key (printed), not rotated"
                    );
                }
                return Ok(value);
            }
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) => {}
            Err(e) => return Err(failed("GetSecretValue", e)),
        }
        let key = wanted.map_or_else(|| hex::encode(rand::random::<[u8; 32]>()), str::to_owned);
        match secrets
            .create_secret()
            .name(id)
            .description(secret.description)
            .secret_string(&key)
            .send()
            .await
        {
            Ok(_) => return Ok(key),
            // Created concurrently by someone else: read theirs.
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_exists_exception()) => {}
            Err(e) => return Err(failed("CreateSecret", e)),
        }
    }
    Err(Failure::Failed(format!(
        "secret {id}: could not create or read it"
    )))
}

/// Runs `bootstrap`.
pub async fn run(args: BootstrapArgs) -> Result<(), Failure> {
    let env: HashMap<String, String> = std::env::vars().collect();
    let local = local_endpoint(&env);
    if let Err(why) = &local
        && !args.yes
    {
        return Err(Failure::Usage(format!(
            "refusing to bootstrap a non-local AWS endpoint ({why}); pass --yes to do it anyway"
        )));
    }
    let wanted = wanted_chaos_key(env.get(CHAOS_KEY_ENV), local.is_ok())?;
    let sdk = kosha_runtime::aws::sdk_config().await;
    let table = StateTable::from_env(&sdk).map_err(|e| Failure::Usage(e.to_string()))?;
    table
        .create_if_missing()
        .await
        .map_err(|e| Failure::Failed(e.to_string()))?;
    let sqs = Sqs::new(&sdk);
    let (events, events_dlq) = queue_with_dlq(&sqs, EVENTS_QUEUE, MAX_RECEIVE_COUNT).await?;
    let (screening, screening_dlq) =
        queue_with_dlq(&sqs, SCREENING_QUEUE, SCREENING_MAX_RECEIVE_COUNT).await?;
    let secret_id = env
        .get(CHAOS_SECRET_ENV)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_CHAOS_SECRET_ID.to_owned());
    let secrets = Secrets::new(&sdk);
    let chaos = HmacSecret {
        id: &secret_id,
        description: "Kosha chaos-header HMAC-SHA256 key: 64 hex chars = 32 key bytes",
        wanted: wanted.as_deref().map(|w| (CHAOS_KEY_ENV, w)),
    };
    let key = hmac_secret(&secrets, &chaos).await?;
    let confirm_id = env
        .get(CONFIRM_SECRET_ENV)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_CONFIRM_SECRET_ID.to_owned());
    let confirm = HmacSecret {
        id: &confirm_id,
        description: "Kosha confirmation requestState HMAC-SHA256 key: 64 hex chars = 32 key bytes",
        wanted: None,
    };
    hmac_secret(&secrets, &confirm).await?;

    println!("KOSHA_STATE_TABLE={}", table.name());
    println!("KOSHA_EVENTS_QUEUE_URL={events}");
    println!("KOSHA_EVENTS_DLQ_URL={events_dlq}");
    println!("KOSHA_SCREENING_QUEUE_URL={screening}");
    println!("KOSHA_SCREENING_DLQ_URL={screening_dlq}");
    println!("KOSHA_CHAOS_SECRET_ID={secret_id}");
    println!("KOSHA_CONFIRM_SECRET_ID={confirm_id}");
    if local.is_ok() {
        println!("KOSHA_CHAOS_KEY={key}");
    }
    Ok(())
}

/// `KOSHA_CHAOS_KEY` as the key for a missing secret: trimmed and lowercased, honoured only
/// for a local endpoint, `None` when unset or blank.
///
/// # Errors
/// [`Failure::Usage`] naming the variable (never its value) when it is not a valid key.
fn wanted_chaos_key(value: Option<&String>, local: bool) -> Result<Option<String>, Failure> {
    let Some(value) = value.map(|v| v.trim()).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if !local {
        eprintln!("kosha-ops: warning: {CHAOS_KEY_ENV} is ignored for a non-local endpoint");
        return Ok(None);
    }
    decode_hmac_key(value)
        .map_err(|why| Failure::Usage(format!("{CHAOS_KEY_ENV} is not a chaos key: {why}")))?;
    Ok(Some(value.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn chaos_key_from_the_environment_only_when_local_and_valid() {
        let key = "AB".repeat(32);
        assert_eq!(
            wanted_chaos_key(Some(&format!(" {key}\n")), true).ok(),
            Some(Some("ab".repeat(32)))
        );
        assert_eq!(wanted_chaos_key(Some(&key), false).ok(), Some(None));
        assert_eq!(wanted_chaos_key(None, true).ok(), Some(None));
        assert_eq!(
            wanted_chaos_key(Some(&"  ".to_owned()), true).ok(),
            Some(None)
        );
        for bad in ["xyz", "abcd"] {
            match wanted_chaos_key(Some(&bad.to_owned()), true) {
                Err(Failure::Usage(m)) => assert!(!m.contains(bad), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn only_loopback_endpoints_are_local() {
        for ok in [
            "http://127.0.0.1:5000",
            "http://localhost:1",
            "http://[::1]:9",
        ] {
            assert_eq!(
                local_endpoint(&env(&[("AWS_ENDPOINT_URL", ok)])),
                Ok(()),
                "{ok}"
            );
        }
        for bad in [
            "https://dynamodb.us-east-1.amazonaws.com",
            "http://10.0.0.5:4566",
            "nonsense",
            "",
        ] {
            assert!(
                local_endpoint(&env(&[("AWS_ENDPOINT_URL", bad)])).is_err(),
                "{bad}"
            );
        }
        assert!(local_endpoint(&env(&[])).is_err());
        assert!(
            local_endpoint(&env(&[
                ("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
                (
                    "AWS_ENDPOINT_URL_SQS",
                    "https://sqs.eu-west-1.amazonaws.com"
                ),
            ]))
            .is_err()
        );
        assert!(
            local_endpoint(&env(&[
                ("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
                ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"),
            ]))
            .is_err()
        );
    }
}
