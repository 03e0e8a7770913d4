//! One call as Cedar sees it (SPEC §5a): the principal entity, the action and resource, and
//! the context.

use std::time::{SystemTime, UNIX_EPOCH};

use cedar_policy::{Context, Entities, Entity, EntityUid, Request, RestrictedExpression};
use kosha_auth::Principal;
use serde_json::{Map, Value};

use crate::load::Policies;
use crate::reads::Reads;

/// The addressed transaction, as the policies read it (`context.record`, SPEC §5a).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The account it belongs to (`acc_0012`).
    pub account_id: String,
    /// Its amount in minor units of `currency` (81240 for 812.40 EUR).
    pub amount_minor: i64,
    /// ISO 4217 code (`EUR`).
    pub currency: String,
}

/// One call to decide: who calls which tool, with which arguments, on which record, when.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The caller.
    pub principal: &'a Principal,
    /// The tool's name (the action).
    pub tool: &'a str,
    /// The checked arguments, `amount_minor` included for a dispute whose caller gave none
    /// (the transaction's amount, SPEC §4); `null` values count as absent.
    pub input: &'a Map<String, Value>,
    /// The addressed transaction, read when [`Policies::reads`] says `record`.
    pub record: Option<&'a Record>,
    /// The request's MCP revision (`2025-11-25`, `2026-07-28`).
    pub protocol_version: &'a str,
    /// The gateway's clock: seconds since the Unix epoch (`context.now`; `time_of_day` and
    /// `weekday` derive from it).
    pub now_s: i64,
}

impl<'a> Ask<'a> {
    /// `principal` calling `tool` with `input`, now, at MCP 2025-11-25, with no record.
    pub fn new(principal: &'a Principal, tool: &'a str, input: &'a Map<String, Value>) -> Self {
        let now_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        Self {
            principal,
            tool,
            input,
            record: None,
            protocol_version: "2025-11-25",
            now_s,
        }
    }
}

/// Why a call could not be put to Cedar: a deny (SPEC §5a: an evaluation error is a deny).
#[derive(Debug)]
pub(crate) struct Unaskable(pub String);

/// The principal entity: `Kosha::Principal::"<user>"` with its attributes and tags.
pub(crate) fn entities(
    policies: &Policies,
    principal: &Principal,
) -> Result<(EntityUid, Entities), Unaskable> {
    let uid = policies.names.principal(principal.user());
    let strings = |items: &mut dyn Iterator<Item = &str>| {
        RestrictedExpression::new_set(items.map(|s| RestrictedExpression::new_string(s.to_owned())))
    };
    let mut attrs = vec![
        (
            "client_id".to_owned(),
            RestrictedExpression::new_string(principal.client_id.clone()),
        ),
        (
            "roles".to_owned(),
            strings(&mut principal.roles.iter().map(|r| r.as_str())),
        ),
        (
            "groups".to_owned(),
            strings(&mut principal.groups.iter().map(String::as_str)),
        ),
        (
            "scopes".to_owned(),
            strings(&mut principal.scopes.iter().map(String::as_str)),
        ),
    ];
    if let Some(username) = &principal.username {
        attrs.push((
            "username".to_owned(),
            RestrictedExpression::new_string(username.clone()),
        ));
    }
    let tags = principal
        .tags
        .iter()
        .map(|(k, v)| (k.clone(), RestrictedExpression::new_string(v.clone())));
    let entity = Entity::new_with_tags(uid.clone(), attrs, [], tags)
        .map_err(|e| Unaskable(format!("principal entity: {e}")))?;
    let entities = Entities::from_entities([entity], None)
        .map_err(|e| Unaskable(format!("principal entity: {e}")))?;
    Ok((uid, entities))
}

/// The request for `ask`, with `confirmed` as given; the context holds everything, checked
/// against the schema, when the tool's policies read any of it (`reads`), else nothing.
pub(crate) fn request(
    policies: &Policies,
    ask: &Ask<'_>,
    principal: EntityUid,
    reads: Reads,
    confirmed: bool,
) -> Result<Request, Unaskable> {
    let Some((action, resource)) = policies.names.tool(ask.tool) else {
        return Err(Unaskable(format!("no action {}", ask.tool)));
    };
    let context = if reads.any() {
        // Built from its pairs, not parsed from JSON (the parse cost more than the decision,
        // docs/benchmarks.md "Policy decisions"). The arguments were checked against the
        // tool's inputSchema, whose types are the Cedar schema's: strings, integers, booleans.
        let mut pairs = vec![
            ("input".to_owned(), record_of(ask.input)?),
            (
                "protocol_version".to_owned(),
                RestrictedExpression::new_string(ask.protocol_version.to_owned()),
            ),
            ("now".to_owned(), RestrictedExpression::new_long(ask.now_s)),
            (
                "time_of_day".to_owned(),
                RestrictedExpression::new_long(ask.now_s.rem_euclid(86_400)),
            ),
            (
                "weekday".to_owned(),
                // 1970-01-01 was a Thursday (ISO weekday 4).
                RestrictedExpression::new_long(
                    (ask.now_s.div_euclid(86_400) + 3).rem_euclid(7) + 1,
                ),
            ),
        ];
        if crate::WRITE_TOOLS.contains(&ask.tool) {
            pairs.push((
                "confirmed".to_owned(),
                RestrictedExpression::new_bool(confirmed),
            ));
        }
        if let Some(r) = ask.record {
            let record = RestrictedExpression::new_record([
                (
                    "account_id".to_owned(),
                    RestrictedExpression::new_string(r.account_id.clone()),
                ),
                (
                    "amount_minor".to_owned(),
                    RestrictedExpression::new_long(r.amount_minor),
                ),
                (
                    "currency".to_owned(),
                    RestrictedExpression::new_string(r.currency.clone()),
                ),
            ])
            .map_err(|e| Unaskable(format!("record: {e}")))?;
            pairs.push(("record".to_owned(), record));
        }
        let context = Context::from_pairs(pairs).map_err(|e| Unaskable(format!("context: {e}")))?;
        // Checked against the action's context type: a missing attribute or a wrong type is
        // not decidable (a deny), never evaluated as if absent.
        let request = Request::new(
            principal,
            action.clone(),
            resource.clone(),
            context,
            Some(&policies.schema),
        );
        return request.map_err(|e| Unaskable(format!("request: {e}")));
    } else {
        Context::empty()
    };
    Request::new(principal, action.clone(), resource.clone(), context, None)
        .map_err(|e| Unaskable(format!("request: {e}")))
}

/// `input` as a Cedar record: strings, integers (Long) and booleans; `null` is absent. Anything
/// else (a float, an array, an object) fits no action's schema: the call is not decidable.
fn record_of(input: &Map<String, Value>) -> Result<RestrictedExpression, Unaskable> {
    let mut fields = Vec::with_capacity(input.len());
    for (name, value) in input {
        let value = match value {
            Value::Null => continue,
            Value::String(s) => RestrictedExpression::new_string(s.clone()),
            Value::Bool(b) => RestrictedExpression::new_bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(n) => RestrictedExpression::new_long(n),
                None => return Err(Unaskable(format!("input.{name}: not a Long"))),
            },
            Value::Array(_) | Value::Object(_) => {
                return Err(Unaskable(format!("input.{name}: not a scalar")));
            }
        };
        fields.push((name.clone(), value));
    }
    RestrictedExpression::new_record(fields).map_err(|e| Unaskable(format!("input: {e}")))
}

/// The listing request for `principal` and `tool`: a context of `protocol_version` alone
/// (the listing set reads nothing else, [`crate::listing`]).
pub(crate) fn listing_request(
    policies: &Policies,
    principal: EntityUid,
    tool: &str,
    protocol_version: &str,
) -> Result<Request, Unaskable> {
    let Some((action, resource)) = policies.names.tool(tool) else {
        return Err(Unaskable(format!("no action {tool}")));
    };
    // Built from its one pair, not parsed from JSON: parsing a context costs more than
    // evaluating the built-in set (callgrind, docs/benchmarks.md "Policy decisions").
    let pair = (
        "protocol_version".to_owned(),
        RestrictedExpression::new_string(protocol_version.to_owned()),
    );
    let context = Context::from_pairs([pair]).map_err(|e| Unaskable(format!("context: {e}")))?;
    Request::new(principal, action.clone(), resource.clone(), context, None)
        .map_err(|e| Unaskable(format!("request: {e}")))
}
