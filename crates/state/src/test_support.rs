//! What the emulator tests and `benches/bucket-load` share (feature `test-support`): a count
//! of the DynamoDB requests a client sends, every attempt included, so a test or a benchmark
//! can state the round trips a decision cost.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_config::SdkConfig;
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

/// Counts HTTP requests sent (every attempt), shared between clones.
#[derive(Debug, Clone, Default)]
pub struct CallCounter(pub Arc<AtomicUsize>);

impl CallCounter {
    /// Requests sent so far.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A DynamoDB client on `sdk` whose requests `counter` counts.
pub fn counted_dynamo(sdk: &SdkConfig, counter: &CallCounter) -> aws_sdk_dynamodb::Client {
    let conf = aws_sdk_dynamodb::config::Builder::from(sdk)
        .interceptor(counter.clone())
        .build();
    aws_sdk_dynamodb::Client::from_conf(conf)
}
