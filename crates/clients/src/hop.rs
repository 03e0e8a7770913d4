//! The `X-Request-Deadline` one hop sends (SPEC §7): the earlier of the call's deadline and
//! the attempt's own end, less the 150 ms hop margin, so the receiver finishes (and gives its
//! own dependencies their budgets) while the caller still listens. The gateway's calls to
//! core-api and screening-sim and the screening-worker's calls to screening-sim all send it
//! through [`hop_deadline`].

use std::time::Duration;

use kosha_resilience::deadline::Deadline;

/// Margin a caller keeps for itself on each hop (SPEC §7).
pub const HOP_MARGIN: Duration = Duration::from_millis(150);

/// The deadline sent with an attempt that may last `attempt_timeout` from now, under the
/// call's `deadline`: `min(deadline, now + attempt_timeout) − HOP_MARGIN` (SPEC §7).
///
/// ```
/// use std::time::Duration;
/// use kosha_clients::hop::{HOP_MARGIN, hop_deadline};
/// use kosha_resilience::deadline::Deadline;
///
/// // A 30 s call whose attempt may last 1.5 s: the receiver is given 1.35 s, not 29.85 s.
/// let sent = hop_deadline(&Deadline::after(Duration::from_secs(30)), Duration::from_millis(1_500));
/// assert!(sent.remaining() <= Duration::from_millis(1_500) - HOP_MARGIN);
/// ```
pub fn hop_deadline(deadline: &Deadline, attempt_timeout: Duration) -> Deadline {
    deadline
        .min(Deadline::after(attempt_timeout))
        .child(HOP_MARGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_attempt_shorter_than_the_call_bounds_the_header() {
        // The screening-worker used to send `call deadline − 150 ms` (29.85 s here).
        let sent = hop_deadline(
            &Deadline::after(Duration::from_secs(30)),
            Duration::from_millis(1_500),
        );
        assert_eq!(sent.remaining(), Duration::from_millis(1_350));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_ending_before_the_attempt_bounds_the_header() {
        let sent = hop_deadline(
            &Deadline::after(Duration::from_millis(400)),
            Duration::from_millis(1_500),
        );
        assert_eq!(sent.remaining(), Duration::from_millis(250));
    }
}
