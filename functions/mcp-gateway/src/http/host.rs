//! The `Host` and `Origin` checks (SPEC §3: DNS-rebinding protection) and the public base URL
//! the OAuth metadata is published under (SPEC §5, RFC 9728).
//!
//! A request names its authority in the `Host` header (HTTP/1.1 origin form), in its target
//! (an absolute-form target, RFC 9112 §3.2.2, where the target wins over `Host`), or in
//! HTTP/2's `:authority` (RFC 9113 §8.3.1), which hyper puts in the URI. Every authority the
//! request names must be allowed, so no form of the request bypasses the check.

use axum::http::{HeaderMap, HeaderValue, Uri, header};

use crate::config::GatewayConfig;

/// The public base URL: `KOSHA_PUBLIC_BASE_URL` when set, else `https://<authority>` (http
/// for loopback hosts; the authority already passed [`request_host_allowed`]), the port kept.
pub fn public_base(config: &GatewayConfig, uri: &Uri, headers: &HeaderMap) -> String {
    if let Some(b) = &config.public_base_url {
        return b.clone();
    }
    let host = uri
        .authority()
        .map(|a| a.as_str())
        .or_else(|| headers.get(header::HOST).and_then(|h| h.to_str().ok()))
        .unwrap_or("localhost");
    let bare = strip_port(host).to_ascii_lowercase();
    let scheme = if matches!(bare.as_str(), "localhost" | "127.0.0.1" | "[::1]") {
        "http"
    } else {
        "https"
    };
    format!("{scheme}://{host}")
}

/// The request's authority check: at most one `Host` header (RFC 9112 §3.2: a request with
/// more than one is invalid; which one a proxy would use is unknowable), and the `Host` and
/// the target's authority (absolute form, HTTP/2 `:authority`), each where present, pass
/// [`host_allowed`]. A request naming neither passes (it is not from a browser).
pub fn request_host_allowed(uri: &Uri, headers: &HeaderMap, allowed: &[String]) -> bool {
    let mut hosts = headers.get_all(header::HOST).iter();
    let first = hosts.next();
    let target_ok = uri.authority().is_none_or(|a| {
        // An authority with userinfo (`user@host`) names no host a browser would send.
        !a.as_str().contains('@')
            && HeaderValue::from_str(a.as_str()).is_ok_and(|v| host_allowed(Some(&v), allowed))
    });
    hosts.next().is_none() && target_ok && host_allowed(first, allowed)
}

/// `Host` check against `allowed`: exact `host` or `host:port`, or any subdomain of a suffix
/// written `*.example.com` or `.example.com` (the SAM template's form for Function URLs). A
/// `Host` that is not visible ASCII names no allowed host: refused.
fn host_allowed(host: Option<&HeaderValue>, allowed: &[String]) -> bool {
    let Some(host) = host else {
        // HTTP/1.1 requires Host; a request without one is not from a browser.
        return true;
    };
    let Ok(host) = host.to_str() else {
        return false;
    };
    let host = host.to_ascii_lowercase();
    let bare = strip_port(&host);
    allowed.iter().any(|a| {
        let a = a.to_ascii_lowercase();
        if let Some(suffix) = a.strip_prefix("*.").or_else(|| a.strip_prefix('.')) {
            bare.ends_with(&format!(".{suffix}"))
        } else {
            a == host || a == bare
        }
    })
}

/// `host` without its `:port` (digits only): `[::1]:8080` → `[::1]`, `localhost:8080` →
/// `localhost`. Anything else after a bracketed IPv6 literal (`[::1]evil.example`) is not a
/// port: the host is returned whole, so it matches no allowed `[::1]`.
fn strip_port(host: &str) -> &str {
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => match rest.find(']') {
            Some(i) => host.split_at(i + 2),
            None => return host,
        },
        None => match host.rfind(':') {
            Some(i) => host.split_at(i),
            None => return host,
        },
    };
    match port.strip_prefix(':') {
        Some(digits) if digits.bytes().all(|b| b.is_ascii_digit()) => name,
        None if port.is_empty() => name,
        _ => host,
    }
}

/// `Origin` check against `KOSHA_ALLOWED_ORIGINS` (SPEC §2, §3): an entry matches the origin
/// `scheme://host[:port]` exactly (case-insensitively), or, written `scheme://host:*`, with
/// any port or none (`http://localhost:*` admits the MCP Inspector at
/// `http://localhost:6274`). Nothing else is a wildcard: `http://*.example.com` matches only
/// itself.
pub fn origin_allowed(origin: &HeaderValue, allowed: &[String]) -> bool {
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let origin = origin.to_ascii_lowercase();
    allowed.iter().any(|a| {
        let a = a.trim_end_matches('/').to_ascii_lowercase();
        match a.strip_suffix(":*") {
            Some(base) => origin == base || any_port(&origin, base),
            None => a == origin,
        }
    })
}

/// Whether `origin` is `base:<digits>`.
fn any_port(origin: &str, base: &str) -> bool {
    origin
        .strip_prefix(base)
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hv(s: &str) -> HeaderValue {
        HeaderValue::from_str(s).unwrap()
    }

    #[test]
    fn two_host_headers_are_refused_even_when_both_are_allowed() {
        let allowed = vec!["localhost".to_owned()];
        let origin_form = Uri::from_static("/mcp");
        let mut headers = HeaderMap::new();
        headers.append(header::HOST, hv("localhost"));
        assert!(request_host_allowed(&origin_form, &headers, &allowed));
        headers.append(header::HOST, hv("localhost"));
        assert!(!request_host_allowed(&origin_form, &headers, &allowed));
        assert!(request_host_allowed(
            &origin_form,
            &HeaderMap::new(),
            &allowed
        ));
    }

    #[test]
    fn the_target_authority_is_checked_whatever_the_host_header_says() {
        let allowed = vec!["localhost".to_owned(), "localhost:8080".to_owned()];
        let mut local = HeaderMap::new();
        local.append(header::HOST, hv("localhost"));
        // Absolute form with an allowed Host header; HTTP/2 `:authority` without one.
        for (target, headers) in [
            ("http://evil.example/mcp", &local),
            ("http://evil.example/mcp", &HeaderMap::new()),
            ("http://localhost@evil.example/mcp", &HeaderMap::new()),
        ] {
            let uri: Uri = target.parse().unwrap();
            assert!(!request_host_allowed(&uri, headers, &allowed), "{target}");
        }
        let mut evil = HeaderMap::new();
        evil.append(header::HOST, hv("evil.com"));
        let uri: Uri = "http://localhost:8080/mcp".parse().unwrap();
        assert!(!request_host_allowed(&uri, &evil, &allowed));
        assert!(request_host_allowed(&uri, &HeaderMap::new(), &allowed));
        assert!(request_host_allowed(&uri, &local, &allowed));
    }

    #[test]
    fn hosts_match_exactly_with_or_without_port_and_by_wildcard() {
        let allowed = vec![
            "localhost".to_owned(),
            "[::1]".to_owned(),
            "*.lambda-url.eu-west-1.on.aws".to_owned(),
            ".lambda-url.us-east-1.on.aws".to_owned(),
            "api.example.com:8443".to_owned(),
        ];
        for ok in [
            "localhost",
            "localhost:8080",
            "[::1]:9000",
            "abc.lambda-url.eu-west-1.on.aws",
            "xyz.lambda-url.us-east-1.on.aws",
            "api.example.com:8443",
        ] {
            assert!(host_allowed(Some(&hv(ok)), &allowed), "{ok}");
        }
        for bad in [
            "evil.com",
            "lambda-url.eu-west-1.on.aws",
            "abc.lambda-url.eu-west-1.on.aws.evil.com",
            "localhost.evil.com",
            // Not a port after an IPv6 literal (attack pass of 2026-12-01, commit 195ef72).
            "[::1]evil.example",
            "[::1].evil.example",
            "[::1]:99@evil.example",
            "[::1",
            "localhost:abc",
        ] {
            assert!(!host_allowed(Some(&hv(bad)), &allowed), "{bad}");
        }
        // A Host that is not visible ASCII is refused, not taken for an absent one.
        let opaque = HeaderValue::from_bytes(b"localhost\xff").unwrap();
        assert!(!host_allowed(Some(&opaque), &allowed));
        assert!(host_allowed(None, &allowed));
    }

    #[test]
    fn origins_need_an_exact_listed_match() {
        let allowed = vec!["https://app.example.com".to_owned()];
        assert!(origin_allowed(&hv("https://app.example.com"), &allowed));
        assert!(!origin_allowed(&hv("https://evil.example.com"), &allowed));
        assert!(!origin_allowed(&hv("https://app.example.com"), &[]));
    }

    #[test]
    fn a_port_wildcard_admits_any_port_of_that_scheme_and_host_only() {
        let allowed = vec![
            "http://localhost:*".to_owned(),
            "http://127.0.0.1:*".to_owned(),
        ];
        for ok in [
            "http://localhost:6274",
            "http://LOCALHOST:1",
            "http://localhost",
            "http://127.0.0.1:5173",
        ] {
            assert!(origin_allowed(&hv(ok), &allowed), "{ok}");
        }
        for bad in [
            "https://localhost:6274",
            "http://localhost.evil.com:6274",
            "http://localhost:6274.evil.com",
            "http://localhost:",
            "http://localhost:*",
            "http://evil.com:6274",
            "null",
        ] {
            assert!(!origin_allowed(&hv(bad), &allowed), "{bad}");
        }
    }
}
