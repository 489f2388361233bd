//! The web view at `/`: a page, its style sheet and its script, embedded in the binary at
//! build time (plain HTML, CSS and ES modules; no build step, nothing fetched from elsewhere).
//! The page calls the API like any client; these three routes hold no data, so they are
//! served without the token (the page asks for it and sends it with each API request).

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

const INDEX: &str = include_str!("web/index.html");
const STYLE: &str = include_str!("web/style.css");
const SCRIPT: &str = include_str!("web/app.js");

/// Only this origin's own files and API: no inline script or style, no other host, no
/// frames, no plugins.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/web/style.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
        .route(
            "/web/app.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    let mut set = |name, value| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(header::CONTENT_TYPE, kind);
    set(header::CONTENT_SECURITY_POLICY, POLICY);
    set(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(header::REFERRER_POLICY, "no-referrer");
    set(header::X_FRAME_OPTIONS, "DENY");
    set(header::CACHE_CONTROL, "no-cache");
    response
}
