//! The plain HTTP server of the non-Lambda mode (SPEC §1; seed 003: timeouts, drain), what a
//! fleet that outgrows Lambda runs in containers behind a load balancer.
//!
//! - **Serves** one axum [`Router`] over HTTP/1.1 and HTTP/2 (prior knowledge, h2c) with
//!   hyper-util's `auto` connection builder.
//! - **Bounds** every connection ([`ServerConfig`], from the environment): the request head
//!   must arrive within `KOSHA_HEADER_READ_TIMEOUT_MS` of the connection opening or of its
//!   first byte after an idle spell (a connection that sends nothing is closed); a keep-alive
//!   connection with no request in flight is closed after `KOSHA_IDLE_TIMEOUT_MS`; at most
//!   `KOSHA_MAX_CONNECTIONS` are open. At the cap, the connection idle the longest (no
//!   request in flight, none being read) is closed to make room for the next one, so idle
//!   keep-alive sockets, which anyone can open with a `GET /healthz`, never keep a caller
//!   out (issue #30). Room is made only for a connection already accepted; when every
//!   connection has a request in flight or a head being read, that one waits for a slot (and
//!   the ones after it in the kernel's accept queue). A head
//!   not received in time drops the connection (no request is in flight on it); an idle or
//!   draining one gets hyper's graceful shutdown: an HTTP/1.1 connection closes after the
//!   response in progress, an HTTP/2 one sends GOAWAY; no request in flight is cut. A
//!   connection closed for idleness that has still not ended one header-read timeout later
//!   is dropped: its last response is stuck on a client that does not read it (an HTTP/2
//!   client that never opens its flow-control window, an HTTP/1.1 one that never reads), and
//!   would otherwise hold its slot for ever.
//! - **Drains** on the shutdown signal (SIGTERM, ctrl-c): stops accepting, lets requests in
//!   flight finish, closes idle keep-alive connections at once, and gives up after
//!   `KOSHA_DRAIN_TIMEOUT_MS` (default 30 s), dropping what is left.
//! - **Tells** each request its peer's address: axum's `ConnectInfo<SocketAddr>` in its
//!   extensions (the audit's unforgeable `source`; behind a load balancer, the balancer's).
//! - **Neighbours:** [`crate::serve`] chooses this mode when `AWS_LAMBDA_RUNTIME_API` is
//!   unset; the Lambda mode needs none of it (one request per instance, the platform holds the
//!   connections).
//!
//! hyper's own header-read timer also runs while an HTTP/1.1 connection waits idle for its
//! next request, which would make the idle timeout never longer than the header timeout; so
//! both are kept here, per connection, and hyper's is off.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::config::{self, ConfigError};

/// Connection limits of the plain server, read once from the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConfig {
    /// How long a request head may take to arrive (`KOSHA_HEADER_READ_TIMEOUT_MS`, default
    /// 10 000, nginx's `client_header_timeout` order of magnitude and ample for any client).
    pub header_read_timeout: Duration,
    /// How long a keep-alive connection may sit with no request (`KOSHA_IDLE_TIMEOUT_MS`,
    /// default 75 000: above a load balancer's usual 60 s idle timeout, so the balancer, not
    /// this server, closes an idle pooled connection, as AWS and nginx recommend).
    pub idle_timeout: Duration,
    /// Most connections open at once (`KOSHA_MAX_CONNECTIONS`, default 1024).
    pub max_connections: usize,
    /// How long a drain may take before what is left is dropped (`KOSHA_DRAIN_TIMEOUT_MS`,
    /// default 30 000).
    pub drain_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(75),
            max_connections: 1024,
            drain_timeout: Duration::from_secs(30),
        }
    }
}

impl ServerConfig {
    /// The settings from the environment, defaults where unset.
    ///
    /// # Errors
    /// [`ConfigError`] naming a variable that is not a positive integer.
    pub fn from_env() -> Result<Self, ConfigError> {
        let d = Self::default();
        let ms = |key: &str, default: Duration| -> Result<Duration, ConfigError> {
            let value = config::parse_or(key, u64::try_from(default.as_millis()).unwrap_or(0))?;
            if value == 0 {
                return Err(ConfigError::new(key, "must be at least 1"));
            }
            Ok(Duration::from_millis(value))
        };
        let max_connections = config::parse_or("KOSHA_MAX_CONNECTIONS", d.max_connections)?;
        if max_connections == 0 {
            return Err(ConfigError::new(
                "KOSHA_MAX_CONNECTIONS",
                "must be at least 1",
            ));
        }
        Ok(Self {
            header_read_timeout: ms("KOSHA_HEADER_READ_TIMEOUT_MS", d.header_read_timeout)?,
            idle_timeout: ms("KOSHA_IDLE_TIMEOUT_MS", d.idle_timeout)?,
            max_connections,
            drain_timeout: ms("KOSHA_DRAIN_TIMEOUT_MS", d.drain_timeout)?,
        })
    }
}

/// Serves `router` on `listener` under `config` until `shutdown` completes, then drains.
/// Returns once every connection has closed or the drain timeout has passed.
///
/// # Errors
/// The listener's error when accepting fails for a reason other than a per-connection one.
pub async fn run(
    listener: TcpListener,
    router: Router,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(config.max_connections));
    let open = Arc::new(Open::default());
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    loop {
        let free = slots.clone().try_acquire_owned().ok();
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // A connection that failed between SYN and accept (reset, fd limits): the
                // listener itself is fine; back off briefly on resource exhaustion.
                Err(e) if is_per_connection(&e) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed; retrying");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // At the cap, only a connection actually waiting makes room (idle ones first).
        let permit = match free {
            Some(p) => p,
            None => tokio::select! {
                () = &mut shutdown => break,
                permit = make_room(&slots, &open) => match permit {
                    Some(p) => p,
                    None => break,
                },
            },
        };
        let router = router.clone();
        let stopping = stopping.clone();
        let activity = Arc::new(Activity::new());
        let id = open.insert(activity.clone());
        let open = open.clone();
        connections.spawn(async move {
            serve_connection(stream, router, config, stopping, activity).await;
            open.remove(id);
            drop(permit);
        });
        // Reap finished connections so the set does not grow with the process's lifetime.
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    let _ = stop.send(true);
    let open = connections.len();
    tracing::info!(open, "draining");
    let drained = tokio::time::timeout(config.drain_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = connections.len(),
            "drain timed out; dropping connections"
        );
        connections.shutdown().await;
    }
    Ok(())
}

/// A connection slot: at once when one is free; at the cap, after closing the connection idle
/// the longest, asking again every [`EVICT_RETRY`] while none has closed (the one asked may
/// have taken a request meanwhile, and then finishes it); `None` when the semaphore is closed.
async fn make_room(
    slots: &Arc<Semaphore>,
    open: &Open,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    loop {
        match slots.clone().try_acquire_owned() {
            Ok(p) => return Some(p),
            Err(tokio::sync::TryAcquireError::Closed) => return None,
            Err(tokio::sync::TryAcquireError::NoPermits) => {}
        }
        open.evict_longest_idle();
        if let Ok(p) = tokio::time::timeout(EVICT_RETRY, slots.clone().acquire_owned()).await {
            return p.ok();
        }
    }
}

/// How long the accept loop waits for an evicted connection to close before it evicts
/// another.
const EVICT_RETRY: Duration = Duration::from_millis(50);

/// The open connections' activity, by id, for eviction at the cap.
#[derive(Debug, Default)]
struct Open {
    next: AtomicUsize,
    all: Mutex<std::collections::HashMap<usize, Arc<Activity>>>,
}

impl Open {
    fn insert(&self, activity: Arc<Activity>) -> usize {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.all.lock().insert(id, activity);
        id
    }

    fn remove(&self, id: usize) {
        self.all.lock().remove(&id);
    }

    /// Asks the connection idle the longest, not yet asked, to close; false when none is idle.
    fn evict_longest_idle(&self) -> bool {
        let all = self.all.lock();
        let victim = all
            .values()
            .filter(|a| !a.evict.load(Ordering::Acquire))
            .filter_map(|a| match *a.phase.lock() {
                Phase::Idle(since) => Some((since, a)),
                Phase::Reading(_) | Phase::Busy => None,
            })
            .min_by_key(|(since, _)| *since);
        match victim {
            Some((_, a)) => {
                a.evict.store(true, Ordering::Release);
                a.changed.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Accept errors that concern one connection only.
fn is_per_connection(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionRefused
    )
}

/// What one connection's watcher knows: requests in flight, and since when it has waited for a
/// request head (`reading`) or sat idle.
#[derive(Debug)]
struct Activity {
    in_flight: AtomicUsize,
    phase: Mutex<Phase>,
    changed: Notify,
    /// Set by the accept loop at the cap: close as soon as no request is in flight.
    evict: AtomicBool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request head since this instant (the connection opened, or its first
    /// byte after an idle spell arrived).
    Reading(Instant),
    /// No request since this instant.
    Idle(Instant),
    /// At least one request in flight.
    Busy,
}

impl Activity {
    fn new() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            phase: Mutex::new(Phase::Reading(Instant::now())),
            changed: Notify::new(),
            evict: AtomicBool::new(false),
        }
    }

    fn set(&self, phase: Phase) {
        *self.phase.lock() = phase;
        self.changed.notify_one();
    }

    /// Bytes arrived: an idle connection starts reading a head.
    fn on_bytes(&self) {
        let mut phase = self.phase.lock();
        if matches!(*phase, Phase::Idle(_)) {
            *phase = Phase::Reading(Instant::now());
            drop(phase);
            self.changed.notify_one();
        }
    }

    fn begin(self: &Arc<Self>) -> RequestGuard {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.set(Phase::Busy);
        RequestGuard(self.clone())
    }
}

/// One request in flight; on drop, the connection is idle when it was the last.
struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.set(Phase::Idle(Instant::now()));
        }
    }
}

/// The connection's socket, telling [`Activity`] when bytes arrive.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.on_bytes();
        }
        poll
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Serves one connection until it closes, closing it gracefully when a timeout passes or the
/// server drains.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    config: ServerConfig,
    mut stopping: watch::Receiver<bool>,
    activity: Arc<Activity>,
) {
    let _ = stream.set_nodelay(true);
    let peer = stream.peer_addr().ok();
    let io = TokioIo::new(Watched {
        stream,
        activity: activity.clone(),
    });
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            let guard = activity.begin();
            if let Some(peer) = peer {
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
            }
            let router = router.clone();
            async move {
                let resp = router.oneshot(req.map(Body::new)).await;
                drop(guard);
                resp
            }
        })
    };
    let builder = Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(io, service);
    let mut conn = pin!(conn);
    let mut closing = *stopping.borrow();
    if closing {
        conn.as_mut().graceful_shutdown();
    }
    // When the connection was closed for idleness. From then on it has one header-read timeout
    // to end, counted from the close or from its last handler's end, whichever is later.
    let mut closed_idle: Option<Instant> = None;
    let close_by = |since: Instant, at: Instant| at.max(since) + config.header_read_timeout;
    loop {
        let deadline = match (*activity.phase.lock(), closed_idle) {
            (Phase::Busy, _) => None,
            (Phase::Reading(since) | Phase::Idle(since), Some(at)) => Some(close_by(since, at)),
            (Phase::Reading(since), None) => Some(since + config.header_read_timeout),
            (Phase::Idle(since), None) => Some(since + config.idle_timeout),
        };
        let expired = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = expired, if !closing || closed_idle.is_some() => {
                // Re-read: the phase may have changed as the timer fired.
                let now = Instant::now();
                match (*activity.phase.lock(), closed_idle) {
                    (Phase::Busy, _) => {}
                    // Closed for idleness and still not ended: nothing of ours is running,
                    // only a response the client does not take. Drop it.
                    (Phase::Reading(since) | Phase::Idle(since), Some(at))
                        if now >= close_by(since, at) =>
                    {
                        tracing::debug!("connection did not end after its idle close; dropped");
                        return;
                    }
                    (_, Some(_)) => {}
                    // No request is in flight, and hyper would wait for the rest of a head
                    // before it honours a graceful close: drop the connection.
                    (Phase::Reading(since), None) if now >= since + config.header_read_timeout => {
                        return;
                    }
                    (Phase::Idle(since), None) if now >= since + config.idle_timeout => {
                        closing = true;
                        closed_idle = Some(now);
                        conn.as_mut().graceful_shutdown();
                    }
                    _ => {}
                }
            }
            () = activity.changed.notified() => {
                // Evicted at the cap: closed like an idle timeout, once no request is in
                // flight (hyper's graceful close lets the one in progress finish).
                if !closing
                    && activity.evict.load(Ordering::Acquire)
                    && !matches!(*activity.phase.lock(), Phase::Busy)
                {
                    closing = true;
                    closed_idle = Some(Instant::now());
                    conn.as_mut().graceful_shutdown();
                }
            }
            changed = stopping.changed(), if !closing => {
                if changed.is_err() || *stopping.borrow() {
                    closing = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}
