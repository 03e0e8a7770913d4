//! The person's answer, read from the retry's `inputResponses` (SPEC §5b; SEP-2322: the
//! responses are keyed like the `inputRequests` they answer, each an `ElicitResult`).
//!
//! | the response under [`QUESTION_KEY`] | answer |
//! |---|---|
//! | `{"action": "accept", "content": {"confirm": true, …}}` | [`Answer::Accepted`] |
//! | `{"action": "accept", "content": {"confirm": false, …}}` | [`Answer::Declined`] |
//! | `{"action": "decline"}` | [`Answer::Declined`] |
//! | `{"action": "cancel"}` | [`Answer::Cancelled`] |
//! | absent, not an `ElicitResult`, or an accept without a boolean `confirm` | [`NoAnswer`] |
//!
//! The optional `note` of an accepted or declined form is kept for the audit event (clipped
//! there); a note that is not a string is ignored.

use rmcp::model::{ElicitResult, ElicitationAction, InputResponses};
use serde_json::Value;

use super::question::{CONFIRM_FIELD, NOTE_FIELD, QUESTION_KEY};

/// What the person said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Yes: the call runs.
    Accepted {
        /// Their note, if any.
        note: Option<String>,
    },
    /// No.
    Declined {
        /// Their note, if any.
        note: Option<String>,
    },
    /// They dismissed the question.
    Cancelled,
}

impl Answer {
    /// The outcome's name in the metric and the audit event.
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::Accepted { .. } => "accepted",
            Self::Declined { .. } => "declined",
            Self::Cancelled => "cancelled",
        }
    }
}

/// The retry carries no usable answer to the question; says which part is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoAnswer {
    /// The field to name in `invalid_argument`.
    pub field: &'static str,
    /// What is wrong.
    pub message: &'static str,
}

/// The answer in `responses` (module docs).
///
/// # Errors
/// [`NoAnswer`] when there is none to read.
pub fn read(responses: Option<&InputResponses>) -> Result<Answer, NoAnswer> {
    let response = responses
        .and_then(|r| r.get(QUESTION_KEY))
        .ok_or(NoAnswer {
            field: "inputResponses",
            message: "must answer the confirmation question `confirm` it was asked",
        })?;
    let result: ElicitResult = serde_json::from_value(response.clone()).map_err(|_| NoAnswer {
        field: "inputResponses.confirm",
        message: "must be an elicitation result: action accept, decline or cancel",
    })?;
    let content = result.content.as_ref().and_then(Value::as_object);
    let note = content
        .and_then(|c| c.get(NOTE_FIELD))
        .and_then(Value::as_str)
        .map(str::to_owned);
    match result.action {
        ElicitationAction::Accept => match content.and_then(|c| c.get(CONFIRM_FIELD)) {
            Some(Value::Bool(true)) => Ok(Answer::Accepted { note }),
            Some(Value::Bool(false)) => Ok(Answer::Declined { note }),
            _ => Err(NoAnswer {
                field: "inputResponses.confirm.content.confirm",
                message: "an accepted form must carry confirm: true or false",
            }),
        },
        ElicitationAction::Decline => Ok(Answer::Declined { note }),
        // `ElicitationAction` is non-exhaustive: anything else a newer rmcp reads is no yes.
        _ => Ok(Answer::Cancelled),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn responses(v: Value) -> InputResponses {
        serde_json::from_value(json!({ QUESTION_KEY: v })).unwrap()
    }

    #[test]
    fn an_accepted_form_with_confirm_true_is_a_yes_with_its_note() {
        let r = responses(json!({"action": "accept", "content": {"confirm": true, "note": "ok"}}));
        assert_eq!(
            read(Some(&r)),
            Ok(Answer::Accepted {
                note: Some("ok".into())
            })
        );
        let r = responses(json!({"action": "accept", "content": {"confirm": true, "note": 3}}));
        assert_eq!(read(Some(&r)), Ok(Answer::Accepted { note: None }));
    }

    #[test]
    fn confirm_false_and_decline_are_declined_and_cancel_is_cancelled() {
        let r = responses(json!({"action": "accept", "content": {"confirm": false}}));
        assert_eq!(read(Some(&r)), Ok(Answer::Declined { note: None }));
        let r = responses(json!({"action": "decline"}));
        assert_eq!(read(Some(&r)), Ok(Answer::Declined { note: None }));
        let r = responses(json!({"action": "cancel"}));
        assert_eq!(read(Some(&r)), Ok(Answer::Cancelled));
        assert_eq!(Answer::Cancelled.outcome(), "cancelled");
    }

    #[test]
    fn a_missing_or_malformed_answer_names_what_is_wrong() {
        assert_eq!(read(None).unwrap_err().field, "inputResponses");
        let other: InputResponses =
            serde_json::from_value(json!({"other": {"action": "accept"}})).unwrap();
        assert_eq!(read(Some(&other)).unwrap_err().field, "inputResponses");
        let r = responses(json!({"action": "maybe"}));
        assert_eq!(read(Some(&r)).unwrap_err().field, "inputResponses.confirm");
        let r = responses(json!("yes"));
        assert_eq!(read(Some(&r)).unwrap_err().field, "inputResponses.confirm");
        for content in [
            json!(null),
            json!({}),
            json!({"confirm": "true"}),
            json!([true]),
        ] {
            let r = responses(json!({"action": "accept", "content": content}));
            assert_eq!(
                read(Some(&r)).unwrap_err().field,
                "inputResponses.confirm.content.confirm",
                "{content}"
            );
        }
    }
}
