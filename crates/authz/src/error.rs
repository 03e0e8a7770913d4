//! Why a policy set cannot be loaded (SPEC §5a, ARCHITECTURE pitfall 29).

/// Why a policy set cannot be used; the gateway does not start (SPEC §5a). Its `Display` is
/// one line: `policy <id> at line <n>: <what>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", policy.as_deref().map_or_else(|| "policy file".to_owned(), |p| format!("policy {p}")), line.map_or_else(String::new, |l| format!(" at line {l}")))]
pub struct LoadError {
    /// The policy's `@id` (or Cedar's `policyN` when it has none), when the error is in one.
    pub policy: Option<String>,
    /// The 1-based line of the file where the error is, when known.
    pub line: Option<usize>,
    /// What is wrong, in Cedar's words.
    pub message: String,
}
