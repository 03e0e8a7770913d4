//! The state table handle (SPEC §8): one DynamoDB client and the table name.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};

use crate::StateError;

/// Environment variable naming the table (SPEC §8); default `kosha-state`.
pub const STATE_TABLE_ENV: &str = "KOSHA_STATE_TABLE";
const DEFAULT_TABLE: &str = "kosha-state";

/// The state table: partition key `pk` (S), TTL attribute `expires_at` (N, epoch s).
///
/// Cheap to clone (clones share one client); build it once in `main`. A table made from the
/// SDK config ([`StateTable::from_env`]) builds its DynamoDB client on first use: building
/// one costs ≈ 0.8 ms, which a Lambda cold start would otherwise pay in init even when its
/// first requests (`initialize`, `tools/list`) never touch DynamoDB (issue 6).
#[derive(Debug, Clone)]
pub struct StateTable {
    client: Arc<LazyClient>,
    name: String,
}

type LazyClient = kosha_runtime::aws::LazyClient<aws_sdk_dynamodb::Config, Client>;

/// Refuses a name that is not a valid DynamoDB table name.
fn check_name(name: &str) -> Result<(), StateError> {
    let valid = (3..=255).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if valid {
        Ok(())
    } else {
        Err(StateError::InvalidSetting {
            name: STATE_TABLE_ENV,
            reason: "a table name is 3-255 characters of A-Z a-z 0-9 _ - .".into(),
        })
    }
}

impl StateTable {
    /// A handle on table `name`.
    ///
    /// # Errors
    /// [`StateError::InvalidSetting`] when `name` is not a valid DynamoDB table name
    /// (3–255 characters of `[A-Za-z0-9_.-]`).
    pub fn new(client: Client, name: impl Into<String>) -> Result<Self, StateError> {
        let name = name.into();
        check_name(&name)?;
        let config = client.config().clone();
        Ok(Self {
            client: Arc::new(LazyClient::built(config, Client::from_conf, client)),
            name,
        })
    }

    /// A handle on table `name` whose client is built from `config` on first use.
    ///
    /// # Errors
    /// As [`StateTable::new`].
    fn lazy(config: aws_sdk_dynamodb::Config, name: &str) -> Result<Self, StateError> {
        check_name(name)?;
        Ok(Self {
            client: Arc::new(LazyClient::new(config, Client::from_conf)),
            name: name.to_owned(),
        })
    }

    /// A handle built from the SDK config, the table named by `KOSHA_STATE_TABLE`.
    ///
    /// # Errors
    /// As [`StateTable::new`].
    pub fn from_env(sdk: &aws_config::SdkConfig) -> Result<Self, StateError> {
        Self::from_sdk(sdk, &Self::name_from_env()?)
    }

    /// The table name `KOSHA_STATE_TABLE` (default `kosha-state`), validated; for binaries
    /// that read all their configuration before building clients.
    ///
    /// # Errors
    /// As [`StateTable::new`].
    pub fn name_from_env() -> Result<String, StateError> {
        let name = std::env::var(STATE_TABLE_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_TABLE.to_owned());
        let name = name.trim().to_owned();
        check_name(&name)?;
        Ok(name)
    }

    /// A handle on table `name` whose client is built from the SDK config on first use.
    ///
    /// # Errors
    /// As [`StateTable::new`].
    pub fn from_sdk(sdk: &aws_config::SdkConfig, name: &str) -> Result<Self, StateError> {
        Self::lazy(aws_sdk_dynamodb::Config::from(sdk), name)
    }

    /// The same table through a client making a single attempt per call (SDK retries off):
    /// this handle when it already does, else a new lazily built client. For callers that
    /// bound each call themselves and fall back on failure (the gateway's token bucket and
    /// override reads, seed 004 §6): a retry would only spend their time budget. Handles made
    /// from one single-attempt table share its client ([`crate::DynamoRateLimiter::new`]).
    pub fn single_attempt(&self) -> Self {
        if self.is_single_attempt() {
            return self.clone();
        }
        let config = self
            .client
            .config()
            .to_builder()
            .retry_config(RetryConfig::disabled())
            .build();
        Self {
            client: Arc::new(LazyClient::new(config, Client::from_conf)),
            name: self.name.clone(),
        }
    }

    /// Whether this table's client makes a single attempt per call (SDK retries off).
    fn is_single_attempt(&self) -> bool {
        self.client
            .config()
            .retry_config()
            .is_some_and(|r| r.max_attempts() == 1)
    }

    #[cfg(test)]
    fn client_built(&self) -> bool {
        self.client.is_built()
    }

    /// The DynamoDB client, built on the first call.
    pub fn client(&self) -> &Client {
        self.client.get()
    }

    /// The table name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The item with partition key `pk`, read consistently; `None` when absent. The one
    /// single-item read of the item modules (screenings, sim chaos knobs).
    ///
    /// # Errors
    /// [`StateError::Aws`] when the read fails.
    pub(crate) async fn get_item(
        &self,
        pk: String,
    ) -> Result<Option<HashMap<String, AttributeValue>>, StateError> {
        let out = self
            .client()
            .get_item()
            .table_name(self.name())
            .key("pk", crate::attr::sv(pk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| StateError::aws("GetItem", e))?;
        Ok(out.item)
    }

    /// Deletes the item with partition key `pk` (no error when absent).
    ///
    /// # Errors
    /// [`StateError::Aws`] when the delete fails.
    pub(crate) async fn delete_item(&self, pk: String) -> Result<(), StateError> {
        self.client()
            .delete_item()
            .table_name(self.name())
            .key("pk", crate::attr::sv(pk))
            .send()
            .await
            .map_err(|e| StateError::aws("DeleteItem", e))?;
        Ok(())
    }

    /// Creates the table if it does not exist (on-demand billing, `pk` S), waits until it is
    /// active (at most 60 s), and enables TTL on `expires_at` if it is not enabled yet.
    /// Returns whether the table was created by this call.
    ///
    /// # Errors
    /// [`StateError::Aws`] when a call fails, [`StateError::Timeout`] when the table does not
    /// become active within 60 s.
    pub async fn create_if_missing(&self) -> Result<bool, StateError> {
        let created = match self
            .client()
            .create_table()
            .table_name(&self.name)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("pk")
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .map_err(|e| StateError::aws("CreateTable", e))?,
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("pk")
                    .key_type(KeyType::Hash)
                    .build()
                    .map_err(|e| StateError::aws("CreateTable", e))?,
            )
            .send()
            .await
        {
            Ok(_) => true,
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_resource_in_use_exception()) =>
            {
                false
            }
            Err(e) => return Err(StateError::aws("CreateTable", e)),
        };
        self.wait_active().await?;
        self.enable_ttl().await?;
        Ok(created)
    }

    async fn wait_active(&self) -> Result<(), StateError> {
        for _ in 0..60 {
            let out = self
                .client()
                .describe_table()
                .table_name(&self.name)
                .send()
                .await
                .map_err(|e| StateError::aws("DescribeTable", e))?;
            let status = out.table().and_then(|t| t.table_status());
            if status == Some(&TableStatus::Active) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Err(StateError::Timeout {
            operation: "DescribeTable",
        })
    }

    async fn enable_ttl(&self) -> Result<(), StateError> {
        let out = self
            .client()
            .describe_time_to_live()
            .table_name(&self.name)
            .send()
            .await
            .map_err(|e| StateError::aws("DescribeTimeToLive", e))?;
        let status = out
            .time_to_live_description()
            .and_then(|d| d.time_to_live_status());
        if matches!(
            status,
            Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
        ) {
            return Ok(());
        }
        let spec = TimeToLiveSpecification::builder()
            .enabled(true)
            .attribute_name("expires_at")
            .build()
            .map_err(|e| StateError::aws("UpdateTimeToLive", e))?;
        self.client()
            .update_time_to_live()
            .table_name(&self.name)
            .time_to_live_specification(spec)
            .send()
            .await
            .map_err(|e| StateError::aws("UpdateTimeToLive", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_config::{BehaviorVersion, Region};

    fn sdk() -> aws_config::SdkConfig {
        aws_config::SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::standard())
            .build()
    }

    #[test]
    fn single_attempt_table_turns_sdk_retries_off_and_the_default_keeps_them() {
        let single = StateTable::from_env(&sdk()).unwrap().single_attempt();
        assert!(single.is_single_attempt());
        assert_eq!(
            single
                .client()
                .config()
                .retry_config()
                .unwrap()
                .max_attempts(),
            1
        );
        let default = StateTable::from_env(&sdk()).unwrap();
        assert!(!default.is_single_attempt());
        let derived = default.single_attempt();
        assert!(derived.is_single_attempt());
        assert_eq!(derived.name(), default.name());
        assert!(
            !default.is_single_attempt(),
            "the original keeps its retries"
        );
    }

    #[test]
    fn the_client_is_built_on_first_use_once_and_shared_by_clones() {
        let table = StateTable::from_env(&sdk()).unwrap();
        let clone = table.clone();
        assert!(!table.client_built(), "nothing built at construction");
        let first: *const Client = table.client();
        assert!(clone.client_built(), "clones share the built client");
        assert!(std::ptr::eq(first, clone.client()));
        // A single-attempt table already single-attempt is the same handle, no second client.
        let single = StateTable::from_env(&sdk()).unwrap().single_attempt();
        let again = single.single_attempt();
        let _ = single.client();
        assert!(again.client_built());
    }

    #[test]
    fn table_names_are_checked_before_any_client_exists() {
        for bad in ["", "ab", "has space", "x".repeat(256).as_str()] {
            assert!(StateTable::lazy(aws_sdk_dynamodb::Config::from(&sdk()), bad).is_err());
        }
        assert!(
            StateTable::lazy(aws_sdk_dynamodb::Config::from(&sdk()), "kosha-state.v1_x").is_ok()
        );
    }
}
