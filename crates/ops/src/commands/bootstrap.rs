//! `kosha-ops bootstrap`: creates what SPEC §8–§10 need, idempotently (existing resources are
//! kept as they are):
//! - the state table `KOSHA_STATE_TABLE` (pk S, on-demand, TTL on `expires_at`);
//! - queues `kosha-events` and `kosha-screening-requests`, each with a DLQ (`<name>-dlq`,
//!   redrive after 5 receives);
//! - the chaos secret `KOSHA_CHAOS_SECRET_ID`: 32 random bytes as 64 lowercase hex characters.
//!
//! Prints `KEY=value` lines for `.dev/stack.env`. Refuses (exit 2) unless every configured AWS
//! endpoint is on loopback, or `--yes` is given. `KOSHA_CHAOS_KEY` (the secret itself) is
//! printed only for a loopback endpoint, never for a real account.

use std::collections::HashMap;

use aws_sdk_secretsmanager::Client as Secrets;
use aws_sdk_sqs::Client as Sqs;
use aws_sdk_sqs::types::QueueAttributeName;
use clap::Args;
use kosha_state::{CHAOS_SECRET_ENV, DEFAULT_CHAOS_SECRET_ID, StateTable, decode_chaos_key};

use crate::exit::Failure;

/// `kosha-ops bootstrap`
#[derive(Debug, Args)]
pub struct BootstrapArgs {
    /// Allow an endpoint that is not the local emulator (a real AWS account).
    #[arg(long)]
    yes: bool,
}

const EVENTS_QUEUE: &str = "kosha-events";
const SCREENING_QUEUE: &str = "kosha-screening-requests";
const MAX_RECEIVE_COUNT: u32 = 5;

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
async fn queue_with_dlq(sqs: &Sqs, name: &str) -> Result<(String, String), Failure> {
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
        "maxReceiveCount": MAX_RECEIVE_COUNT.to_string(),
    });
    let url = queue(
        sqs,
        name,
        Some((QueueAttributeName::RedrivePolicy, redrive.to_string())),
    )
    .await?;
    Ok((url, dlq_url))
}

/// Reads the chaos secret, creating it when missing; returns the hex key.
async fn chaos_secret(secrets: &Secrets, id: &str) -> Result<String, Failure> {
    for _ in 0..2 {
        match secrets.get_secret_value().secret_id(id).send().await {
            Ok(out) => {
                let value = out.secret_string.unwrap_or_default();
                decode_chaos_key(&value).map_err(|why| {
                    Failure::Failed(format!("secret {id} exists but is malformed: {why}"))
                })?;
                return Ok(value.trim().to_owned());
            }
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) => {}
            Err(e) => return Err(failed("GetSecretValue", e)),
        }
        let key = hex::encode(rand::random::<[u8; 32]>());
        match secrets
            .create_secret()
            .name(id)
            .description("Kosha chaos-header HMAC-SHA256 key: 64 hex chars = 32 key bytes")
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
    let sdk = kosha_runtime::aws::sdk_config().await;
    let table = StateTable::from_env(&sdk).map_err(|e| Failure::Usage(e.to_string()))?;
    table
        .create_if_missing()
        .await
        .map_err(|e| Failure::Failed(e.to_string()))?;
    let sqs = Sqs::new(&sdk);
    let (events, events_dlq) = queue_with_dlq(&sqs, EVENTS_QUEUE).await?;
    let (screening, screening_dlq) = queue_with_dlq(&sqs, SCREENING_QUEUE).await?;
    let secret_id = env
        .get(CHAOS_SECRET_ENV)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_CHAOS_SECRET_ID.to_owned());
    let key = chaos_secret(&Secrets::new(&sdk), &secret_id).await?;

    println!("KOSHA_STATE_TABLE={}", table.name());
    println!("KOSHA_EVENTS_QUEUE_URL={events}");
    println!("KOSHA_EVENTS_DLQ_URL={events_dlq}");
    println!("KOSHA_SCREENING_QUEUE_URL={screening}");
    println!("KOSHA_SCREENING_DLQ_URL={screening_dlq}");
    println!("KOSHA_CHAOS_SECRET_ID={secret_id}");
    if local.is_ok() {
        println!("KOSHA_CHAOS_KEY={key}");
    }
    Ok(())
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
