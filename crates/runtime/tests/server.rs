//! The plain server's connection limits and drain, over real loopback sockets (real time with
//! short settings: tokio's paused clock would advance past a timeout while a socket waits).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use kosha_runtime::server::{ServerConfig, run};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

fn router() -> Router {
    Router::new()
        .route("/fast", get(|| async { "fast" }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(600)).await;
                "slow"
            }),
        )
        .route("/never", get(std::future::pending::<&'static str>))
        .route(
            "/peer",
            get(
                |axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<SocketAddr>| async move {
                    format!("peer {}", peer.ip())
                },
            ),
        )
}

fn settings() -> ServerConfig {
    ServerConfig {
        header_read_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        max_connections: 16,
        drain_timeout: Duration::from_secs(5),
    }
}

/// A server on a free loopback port; send on the sender to drain it.
async fn start(config: ServerConfig) -> (SocketAddr, oneshot::Sender<()>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        run(listener, router(), config, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    (addr, stop, server)
}

/// Reads until the peer closes (Ok) or `within` passes (Err); returns what arrived.
async fn read_to_close(stream: &mut TcpStream, within: Duration) -> Result<String, String> {
    let mut all = Vec::new();
    let result = tokio::time::timeout(within, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&all).into_owned();
    result.map(|()| text.clone()).map_err(|_| text)
}

/// Reads one whole response of a keep-alive request (its body is short: ends with the text).
async fn read_response(stream: &mut TcpStream, ends_with: &str) -> String {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&all).ends_with(ends_with) {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("response in time")
            .expect("read");
        assert!(n > 0, "closed before the response");
        all.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&all).into_owned()
}

fn request(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: localhost\r\n\r\n")
}

#[tokio::test]
async fn a_connection_that_sends_nothing_or_half_a_head_is_closed_after_the_header_timeout() {
    let config = ServerConfig {
        header_read_timeout: Duration::from_millis(300),
        ..settings()
    };
    let (addr, _stop, _server) = start(config).await;
    for sent in ["", "GET /fast HTTP/1.1\r\nhost: loc"] {
        let started = Instant::now();
        let mut silent = TcpStream::connect(addr).await.unwrap();
        silent.write_all(sent.as_bytes()).await.unwrap();
        read_to_close(&mut silent, Duration::from_secs(3))
            .await
            .unwrap_or_else(|_| panic!("still open after 3 s having sent {sent:?}"));
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    }
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout_not_the_header_one() {
    let config = ServerConfig {
        header_read_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(900),
        ..settings()
    };
    let (addr, _stop, _server) = start(config).await;
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(request("/fast").as_bytes()).await.unwrap();
    read_response(&mut conn, "fast").await;
    let idle_from = Instant::now();
    // Past the header timeout the connection is still open and serves a second request.
    tokio::time::sleep(Duration::from_millis(500)).await;
    conn.write_all(request("/fast").as_bytes()).await.unwrap();
    read_response(&mut conn, "fast").await;
    let idle_from_again = Instant::now();
    assert!(idle_from_again - idle_from >= Duration::from_millis(500));
    read_to_close(&mut conn, Duration::from_secs(3))
        .await
        .expect("closed when idle");
    let idle = idle_from_again.elapsed();
    assert!(idle >= Duration::from_millis(900), "{idle:?}");
    assert!(idle < Duration::from_secs(2), "{idle:?}");
}

/// A known limit (docs/operations.md, `KOSHA_HEADER_READ_TIMEOUT_MS`): the start of a
/// pipelined head that arrives with the request before it, then stalls, is timed as idle.
#[tokio::test]
async fn a_stalled_pipelined_head_is_timed_by_the_idle_timeout() {
    let config = ServerConfig {
        header_read_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(1200),
        ..settings()
    };
    let (addr, _stop, _server) = start(config).await;
    let mut conn = TcpStream::connect(addr).await.unwrap();
    let pipelined = format!("{}GET /fast HTTP/1.1\r\nhost: loc", request("/fast"));
    conn.write_all(pipelined.as_bytes()).await.unwrap();
    read_response(&mut conn, "fast").await;
    let idle_from = Instant::now();
    read_to_close(&mut conn, Duration::from_secs(4))
        .await
        .expect("closed in the end");
    let held = idle_from.elapsed();
    assert!(held >= Duration::from_millis(1100), "{held:?}");
    assert!(held < Duration::from_secs(3), "{held:?}");
}

#[tokio::test]
async fn a_drain_finishes_requests_in_flight_closes_idle_connections_and_stops_accepting() {
    let (addr, stop, server) = start(settings()).await;
    let mut busy = TcpStream::connect(addr).await.unwrap();
    busy.write_all(request("/slow").as_bytes()).await.unwrap();
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(request("/fast").as_bytes()).await.unwrap();
    read_response(&mut idle, "fast").await;
    tokio::time::sleep(Duration::from_millis(100)).await;

    let draining = Instant::now();
    stop.send(()).unwrap();
    // The idle keep-alive connection is closed at once.
    read_to_close(&mut idle, Duration::from_millis(300))
        .await
        .expect("idle connection closed at once");
    // Nothing new is accepted.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(TcpStream::connect(addr).await.is_err(), "still accepting");
    // The request in flight is answered whole, then its connection closes.
    let answer = read_to_close(&mut busy, Duration::from_secs(3))
        .await
        .expect("in-flight connection closed after its answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("slow"), "{answer}");
    tokio::time::timeout(Duration::from_secs(3), server)
        .await
        .expect("server returned after the drain")
        .unwrap();
    assert!(draining.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_drain_gives_up_after_its_timeout() {
    let config = ServerConfig {
        drain_timeout: Duration::from_millis(400),
        ..settings()
    };
    let (addr, stop, server) = start(config).await;
    let mut stuck = TcpStream::connect(addr).await.unwrap();
    stuck.write_all(request("/never").as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let draining = Instant::now();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(3), server)
        .await
        .expect("server gave up the drain")
        .unwrap();
    let took = draining.elapsed();
    assert!(took >= Duration::from_millis(400), "{took:?}");
    // The abandoned connection is dropped, not left open.
    read_to_close(&mut stuck, Duration::from_secs(1))
        .await
        .expect("dropped");
}

#[tokio::test]
async fn connections_over_the_cap_wait_while_every_connection_has_a_request_in_flight() {
    let config = ServerConfig {
        max_connections: 1,
        ..settings()
    };
    let (addr, _stop, _server) = start(config).await;
    let mut first = TcpStream::connect(addr).await.unwrap();
    first.write_all(request("/slow").as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The kernel completes the handshake, but the server does not serve it.
    let mut second = TcpStream::connect(addr).await.unwrap();
    second.write_all(request("/fast").as_bytes()).await.unwrap();
    let mut buf = [0u8; 64];
    let early = tokio::time::timeout(Duration::from_millis(400), second.read(&mut buf)).await;
    assert!(early.is_err(), "served over the cap");
    // The request in flight finishes whole; then its idle connection makes room.
    read_response(&mut first, "slow").await;
    read_response(&mut second, "fast").await;
}

/// Issue #30: idle keep-alive sockets (a `GET /healthz` and silence) filled the cap and kept
/// every real caller out until the 75 s idle timeout.
#[tokio::test]
async fn at_the_cap_the_longest_idle_connection_makes_room_and_requests_in_flight_finish() {
    let config = ServerConfig {
        max_connections: 8,
        ..settings()
    };
    let (addr, _stop, _server) = start(config).await;
    let mut busy = TcpStream::connect(addr).await.unwrap();
    busy.write_all(request("/slow").as_bytes()).await.unwrap();
    // Seven idle keep-alive connections, oldest first: the cap is full.
    let mut idle = Vec::new();
    for _ in 0..7 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(request("/fast").as_bytes()).await.unwrap();
        read_response(&mut s, "fast").await;
        idle.push(s);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for round in 0..3 {
        let started = Instant::now();
        let mut caller = TcpStream::connect(addr).await.unwrap();
        caller.write_all(request("/fast").as_bytes()).await.unwrap();
        read_response(&mut caller, "fast").await;
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(1),
            "round {round}: answered after {took:?}, the idle timeout is 5 s"
        );
        // The oldest idle connection was the one closed.
        read_to_close(&mut idle[round], Duration::from_secs(1))
            .await
            .unwrap_or_else(|_| panic!("round {round}: the longest idle connection is still open"));
        idle.push(caller);
    }
    // A younger idle one still serves, and the request in flight finished whole.
    let last = idle.len() - 2;
    idle[last]
        .write_all(request("/fast").as_bytes())
        .await
        .unwrap();
    read_response(&mut idle[last], "fast").await;
    let slow = read_response(&mut busy, "slow").await;
    assert!(slow.starts_with("HTTP/1.1 200"), "{slow}");
}

#[tokio::test]
async fn each_request_knows_its_peer_address() {
    let (addr, _stop, _server) = start(settings()).await;
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(request("/peer").as_bytes()).await.unwrap();
    read_response(&mut conn, "peer 127.0.0.1").await;
}

#[tokio::test]
async fn http2_with_prior_knowledge_is_served() {
    let (addr, _stop, _server) = start(settings()).await;
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let resp = client
        .get(format!("http://{addr}/fast"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
    assert_eq!(resp.text().await.unwrap(), "fast");
}

/// One HTTP/2 frame: length, type, flags, stream id, payload (RFC 9113 §4.1).
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut frame = vec![len[1], len[2], len[3], kind, flags];
    frame.extend_from_slice(&stream.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// An HTTP/2 client that announces a zero stream window (no DATA may reach it), acknowledges
/// the server's SETTINGS, sends `GET /fast`, reads until the response's HEADERS, then only
/// reads. Returns how long after the response the server took to drop the connection.
async fn h2_zero_window_get(addr: SocketAddr) -> Duration {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    hello.extend(h2_frame(0x4, 0, 0, &[0, 0x4, 0, 0, 0, 0])); // INITIAL_WINDOW_SIZE = 0
    tcp.write_all(&hello).await.unwrap();
    let authority = addr.to_string();
    // HPACK: :method GET, :scheme http, :path "/fast", :authority (literals, RFC 7541 §6.2.1).
    let mut block = vec![0x82, 0x86, 0x44, 5];
    block.extend_from_slice(b"/fast");
    block.push(0x41);
    block.push(u8::try_from(authority.len()).unwrap());
    block.extend_from_slice(authority.as_bytes());
    let mut responded: Option<Instant> = None;
    loop {
        let mut head = [0u8; 9];
        if tcp.read_exact(&mut head).await.is_err() {
            return responded.expect("dropped before the response").elapsed();
        }
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let mut payload = vec![0u8; len];
        if tcp.read_exact(&mut payload).await.is_err() {
            return responded.expect("dropped before the response").elapsed();
        }
        match (head[3], head[4]) {
            (0x4, 0) => {
                // The server's SETTINGS: acknowledge them, then ask.
                let mut out = h2_frame(0x4, 0x1, 0, &[]);
                out.extend(h2_frame(0x1, 0x5, 1, &block)); // HEADERS, END_STREAM|END_HEADERS
                tcp.write_all(&out).await.unwrap();
            }
            (0x1, _) if responded.is_none() => responded = Some(Instant::now()),
            _ => {}
        }
    }
}

/// A server whose `/big` answers 64 MiB: more than loopback's socket buffers hold, so a client
/// that never reads leaves the response unwritten.
async fn start_with_big(config: ServerConfig) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router().route("/big", get(|| async { vec![b'x'; 64 << 20] }));
    tokio::spawn(async move {
        run(listener, app, config, std::future::pending())
            .await
            .unwrap();
    });
    addr
}

#[tokio::test]
async fn a_response_the_client_never_takes_does_not_hold_its_connection_for_ever() {
    // Attack pass of 2026-12-01 (commit 195ef72): an HTTP/2 client with a zero flow-control window held its
    // connection (and a slot of KOSHA_MAX_CONNECTIONS) past the idle timeout, for ever.
    let config = ServerConfig {
        header_read_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(500),
        max_connections: 1,
        ..settings()
    };
    let addr = start_with_big(config).await;

    // HTTP/2: the response's HEADERS arrive, its DATA never may, and the client sends
    // nothing more (the attack pass's client).
    let started = Instant::now();
    let lasted = tokio::time::timeout(Duration::from_secs(5), h2_zero_window_get(addr))
        .await
        .expect("the stalled HTTP/2 connection was dropped");
    // Idle from the handler's end, just before the response arrived: closed at 0.5 s, then
    // one header-read timeout (0.3 s); the margin covers the response's trip.
    assert!(lasted >= Duration::from_millis(750), "{lasted:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "{lasted:?}");

    // HTTP/1.1: a client that sends its request and never reads the answer holds the one
    // slot until the server drops it; then the next connection is served. The waiting
    // connection has it closed at once (no request in flight, issue #30), and dropped one
    // header-read timeout (0.3 s) later.
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled.write_all(request("/big").as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut next = TcpStream::connect(addr).await.unwrap();
    next.write_all(request("/fast").as_bytes()).await.unwrap();
    read_response(&mut next, "fast").await;
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_millis(800), "{waited:?}");
    drop(stalled);
}
