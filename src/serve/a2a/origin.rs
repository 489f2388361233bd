//! DNS rebinding and cross-site requests refused as `/mcp` refuses them: on a loopback
//! address only a loopback `Host` is answered (a page of another site whose name resolves
//! to 127.0.0.1 sends its own name), and a request from a browser page (`Origin`) only from
//! this machine or an origin `--allow-origin` names; off loopback, where the token guards,
//! any `Host`, and origins only as `--allow-origin` names them.

use std::net::SocketAddr;

use axum::http::{HeaderMap, header};

/// Who may call, from the server's options.
#[derive(Debug, Clone)]
pub struct Allowed {
    pub listen: SocketAddr,
    pub origins: Vec<String>,
}

const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Allowed {
    /// `Err` with why, when the request is refused.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), String> {
        let loopback = self.listen.ip().is_loopback();
        if loopback {
            let host = header_text(headers, header::HOST.as_str()).unwrap_or_default();
            if !LOOPBACK_NAMES.contains(&name_of(host)) {
                return Err(format!(
                    "Host `{host}` is refused: a server on a loopback address answers only \
                     localhost, 127.0.0.1 and [::1]"
                ));
            }
        }
        let Some(origin) = header_text(headers, header::ORIGIN.as_str()) else {
            return Ok(());
        };
        let listed = self.origins.iter().any(|allowed| allowed == origin);
        let local = loopback && local_origin(origin);
        match listed || local {
            true => Ok(()),
            false => Err(format!(
                "Origin `{origin}` is refused: allow it with --allow-origin"
            )),
        }
    }
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// `host:port` without its port (`[::1]:80` is `[::1]`).
fn name_of(host: &str) -> &str {
    match host.rfind(':') {
        Some(colon) if !host[colon..].contains(']') => &host[..colon],
        _ => host,
    }
}

/// An origin of a page served from this machine, any port.
fn local_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    LOOPBACK_NAMES.contains(&name_of(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn loopback_answers_loopback_names_only() {
        let allowed = Allowed {
            listen: "127.0.0.1:8080".parse().unwrap(),
            origins: vec![],
        };
        assert!(
            allowed
                .check(&headers(&[("host", "127.0.0.1:8080")]))
                .is_ok()
        );
        assert!(allowed.check(&headers(&[("host", "[::1]:8080")])).is_ok());
        assert!(allowed.check(&headers(&[("host", "localhost")])).is_ok());
        assert!(
            allowed
                .check(&headers(&[("host", "evil.example:8080")]))
                .is_err()
        );
        let page = [
            ("host", "localhost:8080"),
            ("origin", "http://evil.example"),
        ];
        assert!(allowed.check(&headers(&page)).is_err());
        let local = [
            ("host", "localhost:8080"),
            ("origin", "http://localhost:3000"),
        ];
        assert!(allowed.check(&headers(&local)).is_ok());
    }

    #[test]
    fn off_loopback_any_host_and_listed_origins() {
        let allowed = Allowed {
            listen: "0.0.0.0:8080".parse().unwrap(),
            origins: vec!["https://app.example".into()],
        };
        assert!(
            allowed
                .check(&headers(&[("host", "agents.example")]))
                .is_ok()
        );
        let listed = [
            ("host", "agents.example"),
            ("origin", "https://app.example"),
        ];
        assert!(allowed.check(&headers(&listed)).is_ok());
        let local = [
            ("host", "agents.example"),
            ("origin", "http://localhost:3000"),
        ];
        assert!(allowed.check(&headers(&local)).is_err());
    }
}
