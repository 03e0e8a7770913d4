//! `DATABASE_URL` from AWS Secrets Manager (SPEC §13: the template passes
//! `DATABASE_URL_SECRET_ARN`, never the URL itself). Read once at start-up, before the pool is
//! built; the value is never logged.
//!
//! The secret's `SecretString` is either a PostgreSQL URL (`postgres://user:pass@host/db`) or
//! the JSON an RDS-managed secret holds (`{"username", "password", "host", "port"?,
//! "dbname"?}`), from which the URL is built with the user and password percent-encoded.
//!
//! A URL without `sslmode` gets `sslmode=verify-full` (the server's certificate must chain to
//! `KOSHA_DATABASE_CA_FILE` and name the host, [`crate::tls`]): a deployed database is
//! reached over the network, where libpq's default `prefer` would accept any certificate or
//! none. A secret that says `sslmode=` keeps its own.

use serde::Deserialize;

/// Why the database URL could not be read from the secret.
#[derive(Debug, thiserror::Error)]
pub enum SecretUrlError {
    /// Secrets Manager did not answer or refused (the SDK's message; it holds no secret).
    #[error("cannot read the database secret: {0}")]
    Fetch(String),
    /// The secret has no `SecretString`, or it is neither a URL nor RDS-style JSON.
    #[error("the database secret is not a postgres URL or RDS-style JSON ({0})")]
    Format(&'static str),
}

#[derive(Deserialize)]
struct RdsSecret {
    username: String,
    password: String,
    host: String,
    #[serde(default)]
    port: Option<u16>,
    #[serde(default)]
    dbname: Option<String>,
}

/// The PostgreSQL URL a secret string stands for.
///
/// # Errors
/// [`SecretUrlError::Format`] when it is neither form.
pub fn database_url(secret_string: &str) -> Result<String, SecretUrlError> {
    let s = secret_string.trim();
    if s.starts_with("postgres://") || s.starts_with("postgresql://") {
        return Ok(verify_full_unless_said(s.to_owned()));
    }
    let rds: RdsSecret =
        serde_json::from_str(s).map_err(|_| SecretUrlError::Format("unparseable"))?;
    let mut url = url::Url::parse("postgres://placeholder/")
        .map_err(|_| SecretUrlError::Format("internal"))?;
    url.set_host(Some(&rds.host))
        .map_err(|_| SecretUrlError::Format("bad host"))?;
    url.set_port(Some(rds.port.unwrap_or(5432)))
        .map_err(|()| SecretUrlError::Format("bad port"))?;
    url.set_username(&rds.username)
        .map_err(|()| SecretUrlError::Format("bad username"))?;
    url.set_password(Some(&rds.password))
        .map_err(|()| SecretUrlError::Format("bad password"))?;
    url.set_path(rds.dbname.as_deref().unwrap_or("postgres"));
    Ok(verify_full_unless_said(url.to_string()))
}

/// `url` with `sslmode=verify-full` appended when it names no `sslmode` (a bad one is left for
/// the pool to refuse).
fn verify_full_unless_said(url: String) -> String {
    match crate::tls::take_sslmode(&url) {
        Ok((_, None)) if url.contains('?') => format!("{url}&sslmode=verify-full"),
        Ok((_, None)) => format!("{url}?sslmode=verify-full"),
        _ => url,
    }
}

/// Reads `arn` from Secrets Manager and returns the database URL it holds.
///
/// # Errors
/// [`SecretUrlError`].
pub async fn fetch(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
) -> Result<String, SecretUrlError> {
    database_url(&secret_string(client, arn).await?)
}

/// The `SecretString` of secret `arn` (also the embeddings API key's,
/// `KOSHA_EMBEDDINGS_API_KEY_SECRET_ARN`).
///
/// # Errors
/// [`SecretUrlError::Fetch`] with the SDK's message (which holds no secret),
/// [`SecretUrlError::Format`] without a `SecretString`.
pub async fn secret_string(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
) -> Result<String, SecretUrlError> {
    let out = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|e| {
            SecretUrlError::Fetch(aws_sdk_secretsmanager::error::DisplayErrorContext(e).to_string())
        })?;
    out.secret_string()
        .map(str::to_owned)
        .ok_or(SecretUrlError::Format("no SecretString"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_taken_as_it_is_with_verify_full_by_default() {
        let u = "postgres://app:s3cret@db.internal:5432/kosha";
        assert_eq!(database_url(u).unwrap(), format!("{u}?sslmode=verify-full"));
        let u = "postgres://app:s3cret@db.internal:5432/kosha?application_name=x";
        assert_eq!(database_url(u).unwrap(), format!("{u}&sslmode=verify-full"));
        for u in [
            "postgres://app:s3cret@db.internal:5432/kosha?sslmode=require",
            "postgres://app@db.internal/kosha?sslmode=disable&application_name=x",
        ] {
            assert_eq!(database_url(u).unwrap(), u);
        }
    }

    #[test]
    fn rds_json_becomes_a_url_with_escaped_credentials() {
        let json = r#"{"username":"app","password":"p@ss/w:rd?#","host":"db.example.eu-west-1.rds.amazonaws.com","port":6543,"dbname":"kosha","engine":"postgres"}"#;
        let url = database_url(json).unwrap();
        assert_eq!(
            url,
            "postgres://app:p%40ss%2Fw%3Ard%3F%23@db.example.eu-west-1.rds.amazonaws.com:6543/kosha?sslmode=verify-full"
        );
        let parsed = url::Url::parse(&url).unwrap();
        assert_eq!(parsed.password(), Some("p%40ss%2Fw%3Ard%3F%23"));
    }

    #[test]
    fn defaults_port_and_database() {
        let url = database_url(r#"{"username":"u","password":"p","host":"h"}"#).unwrap();
        assert_eq!(url, "postgres://u:p@h:5432/postgres?sslmode=verify-full");
    }

    #[test]
    fn anything_else_is_refused_without_echoing_it() {
        for bad in ["hunter2", "{\"password\":\"hunter2\"}", ""] {
            let e = database_url(bad).unwrap_err().to_string();
            assert!(!e.contains("hunter2"), "{e}");
        }
    }
}
