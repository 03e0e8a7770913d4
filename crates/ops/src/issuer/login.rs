//! The local issuer's login page (issue 44, SPEC §5): `GET /oauth2/authorize` checks the
//! authorization request (`super::authorize`) and answers a plain HTML page listing the dev
//! users, one button each; the form posts the request's parameters and the chosen `username`
//! to `POST /login`, which checks them again, issues a code and redirects (303 See Other) to the
//! client's loopback `redirect_uri` with `code` and `state`. A request that cannot be trusted
//! is a 400 page; any other refusal is a redirect carrying `error` (RFC 6749 §4.1.2.1).

use std::sync::Arc;

use axum::extract::{RawForm, RawQuery, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::StatusCode;

use super::Issuer;
use super::authorize::{AuthorizationRequest, DEV_USERS, Refusal, dev_user};

/// Where the login form posts.
pub const LOGIN_PATH: &str = "/login";

/// `GET /oauth2/authorize`: the login page, or the refusal.
pub async fn authorize(RawQuery(query): RawQuery) -> Response {
    let params = pairs(query.as_deref().unwrap_or("").as_bytes());
    match AuthorizationRequest::parse(&params) {
        Ok(_) => Html(page(&params)).into_response(),
        Err(refusal) => refused(refusal),
    }
}

/// `POST /login`: the chosen user's code, sent to the redirect URI.
pub async fn login(State(issuer): State<Arc<Issuer>>, RawForm(form): RawForm) -> Response {
    let mut params = pairs(&form);
    let username = take(&mut params, "username");
    let request = match AuthorizationRequest::parse(&params) {
        Ok(request) => request,
        Err(refusal) => return refused(refusal),
    };
    let Some(user) = username.as_deref().and_then(dev_user) else {
        return (
            StatusCode::BAD_REQUEST,
            Html(message("choose a listed user")),
        )
            .into_response();
    };
    let mut target = request.redirect_uri.clone();
    let state = request.state.clone();
    let code = issuer.codes.issue(request, user);
    target.query_pairs_mut().append_pair("code", &code);
    if let Some(state) = state {
        target.query_pairs_mut().append_pair("state", &state);
    }
    eprintln!(
        "{}",
        serde_json::json!({"event": "login", "outcome": "code_issued", "username": user.username})
    );
    Redirect::to(target.as_str()).into_response()
}

fn refused(refusal: Refusal) -> Response {
    match refusal {
        Refusal::Page(why) => (StatusCode::BAD_REQUEST, Html(message(why))).into_response(),
        Refusal::Redirect(url) => Redirect::to(url.as_str()).into_response(),
    }
}

fn pairs(raw: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(raw)
        .map(|(n, v)| (n.into_owned(), v.into_owned()))
        .collect()
}

/// Removes `name` from `params` and returns its (last) value.
fn take(params: &mut Vec<(String, String)>, name: &str) -> Option<String> {
    let value = params
        .iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone());
    params.retain(|(n, _)| n != name);
    value
}

/// The login page: the request's parameters as hidden fields, a button per dev user.
fn page(params: &[(String, String)]) -> String {
    let hidden: String = params
        .iter()
        .map(|(n, v)| {
            format!(
                "<input type=\"hidden\" name=\"{}\" value=\"{}\">\n",
                escape(n),
                escape(v)
            )
        })
        .collect();
    let buttons: String = DEV_USERS
        .iter()
        .map(|u| {
            let groups: Vec<&str> = u.roles.iter().map(|r| r.as_str()).collect();
            format!(
                "<p><button type=\"submit\" name=\"username\" value=\"{0}\">{0}</button> \
                 groups: {1}</p>\n",
                u.username,
                groups.join(", ")
            )
        })
        .collect();
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Kosha dev login</title></head>\n<body><h1>Kosha dev login</h1>\n\
         <p>Sign in as one of the local stack's users.</p>\n\
         <form method=\"post\" action=\"{LOGIN_PATH}\">\n{hidden}{buttons}</form>\n</body></html>\n"
    )
}

fn message(text: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Kosha dev login</title></head>\n<body><p>{}</p></body></html>\n",
        escape(text)
    )
}

/// HTML-escapes text for an element or a quoted attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
