//! One writer per path across workers: the `GolatoPathLock` virtual object (keyed by the
//! canonical path) serializes the holders of a path, FIFO, as Restate runs one exclusive
//! handler per key at a time; a `GolatoLease` workflow per acquisition carries the grant to the
//! waiting process and its release back.
//!
//! The walk of one lease: the process starts the lease workflow (`run`, with the path), which
//! calls `hold` on the path's object and waits there while earlier holders hold it; `hold`
//! makes an awakeable, hands its ID to the lease (`grant`, which resolves the lease's `granted`
//! promise), and waits for it. The process, waiting in `granted`, now writes the file, then
//! calls `release`, which resolves the awakeable: `hold` returns and the next holder's begins.
//! A holder that dies without releasing holds the path for [`LEASE_TTL`] at most.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use restate_sdk::prelude::*;

use golato::builtin::{SharedLease, SharedLock};

/// The longest a path stays held by a holder that never releases it (its process died).
pub const LEASE_TTL: Duration = Duration::from_secs(30);

/// The name of the path-lock object, as registered.
pub const PATH_LOCK_OBJECT: &str = "GolatoPathLock";
/// The name of the lease workflow, as registered.
pub const LEASE_WORKFLOW: &str = "GolatoLease";

pub(crate) struct PathLockObject;

#[restate_sdk::object(name = "GolatoPathLock", client_visibility = "pub(crate)")]
impl PathLockObject {
    /// Holds the path for the lease until it is released (or its time to live passed).
    #[handler]
    async fn hold(&self, ctx: ObjectContext<'_>, hold: Json<Hold>) -> Result<(), HandlerError> {
        let Json(Hold { lease, ttl_ms }) = hold;
        let (awakeable, released) = ctx.awakeable::<String>();
        ctx.workflow_client::<LeaseWorkflowClient>(lease.clone())
            .grant(awakeable)
            .send();
        restate_sdk::select! {
            _ = released => {},
            _ = ctx.sleep(Duration::from_millis(ttl_ms)) => {
                tracing::warn!(path = ctx.key(), lease, "a lease was not released in time: its holder died, or wrote for longer than the lease lasts");
            }
        }
        Ok(())
    }
}

/// What the path's object is asked to hold.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Hold {
    lease: String,
    ttl_ms: u64,
}

/// What a lease is started with.
#[derive(serde::Serialize, serde::Deserialize)]
struct Acquire {
    path: String,
    ttl_ms: u64,
}

pub(crate) struct LeaseWorkflow;

#[restate_sdk::workflow(name = "GolatoLease", client_visibility = "pub(crate)")]
impl LeaseWorkflow {
    /// Waits in the path's queue, holds it, returns once it is released.
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        acquire: Json<Acquire>,
    ) -> Result<(), HandlerError> {
        let Json(Acquire { path, ttl_ms }) = acquire;
        let lease = ctx.key().to_owned();
        ctx.object_client::<PathLockObjectClient>(path)
            .hold(Json(Hold { lease, ttl_ms }))
            .call()
            .await?;
        Ok(())
    }

    /// The path's object granted the lease; `awakeable` releases it.
    #[handler]
    async fn grant(
        &self,
        ctx: SharedWorkflowContext<'_>,
        awakeable: String,
    ) -> Result<(), HandlerError> {
        ctx.resolve_promise::<String>("granted", awakeable);
        Ok(())
    }

    /// Returns once the lease is granted.
    #[handler]
    async fn granted(&self, ctx: SharedWorkflowContext<'_>) -> Result<(), HandlerError> {
        ctx.promise::<String>("granted").await?;
        Ok(())
    }

    /// Releases the lease (once granted).
    #[handler]
    async fn release(&self, ctx: SharedWorkflowContext<'_>) -> Result<(), HandlerError> {
        let awakeable = ctx.promise::<String>("granted").await?;
        ctx.resolve_awakeable(&awakeable, String::new());
        Ok(())
    }
}

/// A [`SharedLock`] on a Restate server: give it to
/// [`builtin::Config::shared_lock`](golato::builtin::Config::shared_lock) of every worker sharing
/// a file system, so that their
/// `write` and `edit` calls never interleave on one file.
///
/// Costs four requests to the server's ingress per write or edit (start, wait for the grant,
/// release; and the hold itself inside the server).
#[derive(Debug, Clone)]
pub struct SharedPathLock {
    ingress: reqwest::Url,
    http: reqwest::Client,
    ttl: Duration,
}

impl SharedPathLock {
    /// A lock kept by the Restate server whose ingress is at `ingress`.
    pub fn new(ingress: &str) -> Result<SharedPathLock, super::Error> {
        Ok(SharedPathLock {
            ingress: super::client::parse(ingress)?,
            http: reqwest::Client::new(),
            ttl: LEASE_TTL,
        })
    }

    /// How long a lease lasts at most ([`LEASE_TTL`] by default): a holder that dies holds its
    /// path that long. Longer than any one write or edit takes.
    pub fn with_ttl(mut self, ttl: Duration) -> SharedPathLock {
        self.ttl = ttl;
        self
    }

    async fn post(
        &self,
        lease: &str,
        handler: &[&str],
        body: Option<&serde_json::Value>,
    ) -> Result<(), String> {
        let mut segments = vec![LEASE_WORKFLOW, lease];
        segments.extend(handler);
        let url = crate::url::with_segments(&self.ingress, &segments);
        let mut request = self.http.post(url.clone());
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|error| {
            format!(
                "the Restate server at {url} did not answer: {}",
                crate::causes(&error)
            )
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let text = response.text().await.unwrap_or_default();
        Err(format!(
            "the Restate server at {url} answered HTTP {status}: {}",
            text.chars().take(500).collect::<String>()
        ))
    }
}

/// Lease IDs unique across processes and machines: host, process, time, count.
fn new_lease_id() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let host = rustix::system::uname();
    format!(
        "{}-{}-{nanos:x}-{}",
        host.nodename().to_string_lossy(),
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Releases its lease when dropped (on the runtime it was taken on).
struct Release {
    lock: SharedPathLock,
    lease: String,
    runtime: tokio::runtime::Handle,
}

impl Drop for Release {
    fn drop(&mut self) {
        let (lock, lease) = (self.lock.clone(), std::mem::take(&mut self.lease));
        self.runtime.spawn(async move {
            if let Err(error) = lock.post(&lease, &["release"], None).await {
                tracing::warn!(
                    lease,
                    error,
                    "could not release a path lease; it expires on its own"
                );
            }
        });
    }
}

impl SharedLock for SharedPathLock {
    fn lock(&self, path: &Path) -> BoxFuture<'static, Result<SharedLease, String>> {
        let lock = self.clone();
        let path = path.to_string_lossy().into_owned();
        async move {
            let lease = new_lease_id();
            let runtime = tokio::runtime::Handle::current();
            // From here on a dropped future must release what it may have been granted.
            let release = Release {
                lock: lock.clone(),
                lease: lease.clone(),
                runtime,
            };
            let acquire = serde_json::json!({
                "path": path,
                "ttl_ms": u64::try_from(lock.ttl.as_millis()).unwrap_or(u64::MAX),
            });
            lock.post(&lease, &["run", "send"], Some(&acquire)).await?;
            lock.post(&lease, &["granted"], None).await?;
            Ok(Box::new(release) as SharedLease)
        }
        .boxed()
    }
}
