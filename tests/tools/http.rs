//! http_get against a tiny HTTP server on 127.0.0.1 (no internet).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use runner::tools::host_allowed;
use serde_json::json;

use crate::common::{Scratch, builtin, call, error_of, ok};

/// Starts a server that answers by path; returns its port. It lives as long as the test binary.
fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream, port));
        }
    });
    port
}

fn answer(mut stream: TcpStream, port: u16) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let request = String::from_utf8_lossy(&request);
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
    let (status, extra, body): (&str, String, Vec<u8>) = match path.as_str() {
        "/hello" => (
            "200 OK",
            String::new(),
            b"hello from the test server".to_vec(),
        ),
        "/missing" => ("404 Not Found", String::new(), b"no such page".to_vec()),
        "/redirect-ok" => (
            "302 Found",
            format!("Location: http://127.0.0.1:{port}/hello\r\n"),
            vec![],
        ),
        "/redirect-away" => (
            "302 Found",
            format!("Location: http://localhost:{port}/hello\r\n"),
            vec![],
        ),
        "/big" => ("200 OK", String::new(), vec![b'a'; 1024 * 1024 + 10]),
        "/hang" => {
            std::thread::sleep(Duration::from_secs(5));
            return;
        }
        _ => ("500 Internal Server Error", String::new(), vec![]),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}

#[tokio::test]
async fn fetches_from_an_allowed_host() {
    let port = serve();
    let dir = Scratch::new();
    let tool = builtin(
        json!({"builtin": "http_get", "allow_hosts": ["127.0.0.1"]}),
        dir.path(),
    );

    let out = ok(call(
        tool.as_ref(),
        json!({"url": format!("http://127.0.0.1:{port}/hello")}),
    )
    .await);
    assert_eq!(out.data["status"], 200);
    assert_eq!(out.data["content_type"], "text/plain; charset=utf-8");
    assert_eq!(out.data["text"], "hello from the test server");
    assert_eq!(out.metadata["truncated"], false);

    // A redirect to an allowed host is followed.
    let out = ok(call(
        tool.as_ref(),
        json!({"url": format!("http://127.0.0.1:{port}/redirect-ok")}),
    )
    .await);
    assert_eq!(out.data["text"], "hello from the test server");
    assert_eq!(
        out.metadata["url"],
        format!("http://127.0.0.1:{port}/hello")
    );
}

#[tokio::test]
async fn non_2xx_is_a_failure_with_the_body() {
    let port = serve();
    let dir = Scratch::new();
    let tool = builtin(
        json!({"builtin": "http_get", "allow_hosts": ["127.0.0.1"]}),
        dir.path(),
    );
    let out = call(
        tool.as_ref(),
        json!({"url": format!("http://127.0.0.1:{port}/missing")}),
    )
    .await;
    assert!(error_of(&out).contains("404"), "{out:?}");
    assert_eq!(out.data["status"], 404);
    assert_eq!(out.data["text"], "no such page");
}

#[tokio::test]
async fn hosts_schemes_and_redirects_outside_the_allow_list_are_refused() {
    let port = serve();
    let dir = Scratch::new();
    let tool = builtin(
        json!({"builtin": "http_get", "allow_hosts": ["example.com"]}),
        dir.path(),
    );
    let out = call(
        tool.as_ref(),
        json!({"url": format!("http://127.0.0.1:{port}/hello")}),
    )
    .await;
    let err = error_of(&out);
    assert!(
        err.contains("host `127.0.0.1` is not allowed; allowed hosts: example.com"),
        "{err}"
    );

    for (url, expected) in [
        ("file:///etc/passwd", "scheme `file` is not allowed"),
        ("ftp://example.com/x", "scheme `ftp` is not allowed"),
        ("not a url", "invalid URL"),
    ] {
        let out = call(tool.as_ref(), json!({"url": url})).await;
        let err = error_of(&out);
        assert!(err.contains(expected), "{url}: {err}");
    }

    let tool = builtin(
        json!({"builtin": "http_get", "allow_hosts": ["127.0.0.1"]}),
        dir.path(),
    );
    let out = call(
        tool.as_ref(),
        json!({"url": format!("http://127.0.0.1:{port}/redirect-away")}),
    )
    .await;
    let err = error_of(&out);
    assert!(
        err.contains("redirect refused: host `localhost` is not allowed"),
        "{err}"
    );
}

#[tokio::test]
async fn the_body_is_capped_and_slow_servers_time_out() {
    let port = serve();
    let dir = Scratch::new();
    let tool = builtin(
        json!({"builtin": "http_get", "allow_hosts": ["127.0.0.1"], "timeout": "300ms"}),
        dir.path(),
    );
    let out = ok(call(
        tool.as_ref(),
        json!({"url": format!("http://127.0.0.1:{port}/big")}),
    )
    .await);
    assert_eq!(out.metadata["truncated"], true);
    assert!(
        out.data["text"]
            .as_str()
            .unwrap()
            .ends_with("[… body truncated at 1048576 bytes]")
    );

    let out = call(
        tool.as_ref(),
        json!({"url": format!("http://127.0.0.1:{port}/hang")}),
    )
    .await;
    assert!(error_of(&out).contains("did not finish within"), "{out:?}");
    assert_eq!(out.metadata["timed_out"], true);
}

#[test]
fn wildcards_match_subdomains_only() {
    let allow = ["*.example.com".to_string(), "api.github.com".to_string()];
    assert!(host_allowed("a.example.com", &allow));
    assert!(host_allowed("a.b.example.com", &allow));
    assert!(host_allowed("API.GitHub.com", &allow));
    assert!(!host_allowed("example.com", &allow));
    assert!(!host_allowed("badexample.com", &allow));
    assert!(!host_allowed("github.com", &allow));
    assert!(!host_allowed("api.github.com.evil.net", &allow));
}
