//! The path lock: FIFO per key, independent keys, cancellation-safe, no entries left behind.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use golato_actors::path_lock::PathLock;
use golato_actors::Host;

fn key(name: &str) -> PathBuf {
    PathBuf::from(format!("/tmp/golato-test/{name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_on_one_key_are_granted_in_request_order() {
    let lock = PathLock::new(&Host::global().unwrap()).unwrap();
    let first = lock.acquire(key("a")).await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for i in 0..10 {
        let (task_lock, order) = (lock.clone(), Arc::clone(&order));
        let (queued_tx, queued_rx) = tokio::sync::oneshot::channel();
        waiters.push(tokio::spawn(async move {
            let acquiring = task_lock.acquire(key("a"));
            // The request is sent when the future is first polled; let the test know after.
            tokio::pin!(acquiring);
            let lease = tokio::select! {
                biased;
                lease = &mut acquiring => lease,
                () = async { queued_tx.send(()).unwrap(); std::future::pending::<()>().await } => unreachable!(),
            };
            order.lock().unwrap().push(i);
            drop(lease);
        }));
        queued_rx.await.unwrap();
        // A round trip through the actor guarantees the Acquire was handled before the next.
        lock.held_keys().await.unwrap();
    }
    drop(first);
    for waiter in waiters {
        waiter.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
    assert_eq!(
        lock.held_keys().await.unwrap(),
        0,
        "an idle key leaves no entry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_keys_do_not_wait_for_each_other() {
    let lock = PathLock::new(&Host::global().unwrap()).unwrap();
    let _a = lock.acquire(key("a")).await.unwrap();
    let _b = lock.acquire(key("b")).await.unwrap();
    assert_eq!(lock.held_keys().await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_gives_up_leaves_its_place_and_exclusion_holds() {
    let lock = PathLock::new(&Host::global().unwrap()).unwrap();
    let holder = lock.acquire(key("a")).await.unwrap();
    // Each request is sent on its future's first poll; a round trip through the actor
    // (held_keys) then guarantees it was queued.
    let abandoned = Box::pin(lock.acquire(key("a")));
    let mut abandoned = Some(abandoned);
    assert!(futures::poll!(abandoned.as_mut().unwrap()).is_pending());
    let mut next = Box::pin(lock.acquire(key("a")));
    assert!(futures::poll!(&mut next).is_pending());
    lock.held_keys().await.unwrap();
    drop(abandoned.take());
    lock.held_keys().await.unwrap();
    assert!(
        futures::poll!(&mut next).is_pending(),
        "the abandoned waiter freed nothing"
    );
    drop(holder);
    let next_lease = next.await.unwrap();
    let mut third = Box::pin(lock.acquire(key("a")));
    assert!(futures::poll!(&mut third).is_pending());
    lock.held_keys().await.unwrap();
    assert!(
        futures::poll!(&mut third).is_pending(),
        "still held by the second holder"
    );
    drop(next_lease);
    drop(third.await.unwrap());
    assert_eq!(lock.held_keys().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separate_locks_coordinate_separately() {
    let host = Host::global().unwrap();
    let (one, two) = (PathLock::new(&host).unwrap(), PathLock::new(&host).unwrap());
    let _held = one.acquire(key("shared")).await.unwrap();
    let _also = two.acquire(key("shared")).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_sent_to_a_waiter_that_then_gives_up_is_passed_on() {
    let lock = PathLock::new(&Host::global().unwrap()).unwrap();
    let holder = lock.acquire(key("a")).await.unwrap();
    let mut granted_then_dropped = Box::pin(lock.acquire(key("a")));
    assert!(futures::poll!(&mut granted_then_dropped).is_pending());
    let mut next = Box::pin(lock.acquire(key("a")));
    assert!(futures::poll!(&mut next).is_pending());
    lock.held_keys().await.unwrap();
    drop(holder);
    // The hand-over went to the first waiter, which has not looked at it yet.
    lock.held_keys().await.unwrap();
    assert!(
        futures::poll!(&mut next).is_pending(),
        "FIFO: the first waiter's turn"
    );
    drop(granted_then_dropped);
    // A guard against hanging, not a timing claim: a lost grant would leave `next` waiting.
    let next = tokio::time::timeout(std::time::Duration::from_secs(30), next).await;
    drop(
        next.expect("the dropped waiter's grant was passed on")
            .unwrap(),
    );
    assert_eq!(lock.held_keys().await.unwrap(), 0);
    drop(lock.acquire(key("a")).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusion_holds_when_many_waiters_come_and_give_up() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let lock = PathLock::new(&Host::global().unwrap()).unwrap();
    let inside = Arc::new(AtomicBool::new(false));
    let entered = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for task in 0..16u64 {
        let (lock, inside, entered) = (lock.clone(), Arc::clone(&inside), Arc::clone(&entered));
        tasks.push(tokio::spawn(async move {
            for round in 0..200u64 {
                let patience = (task * 7 + round * 13) % 5;
                let acquiring = lock.acquire(key("contended"));
                tokio::pin!(acquiring);
                // Some requests give up after a few scheduler turns, at varying points.
                let lease = tokio::select! {
                    biased;
                    lease = &mut acquiring => Some(lease.unwrap()),
                    () = async {
                        for _ in 0..=patience { tokio::task::yield_now().await }
                    }, if round % 3 == 0 => None,
                };
                if let Some(lease) = lease {
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    entered.fetch_add(1, Ordering::Relaxed);
                    tokio::task::yield_now().await;
                    inside.store(false, Ordering::SeqCst);
                    drop(lease);
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert!(entered.load(std::sync::atomic::Ordering::Relaxed) >= 16 * 133);
    assert_eq!(lock.held_keys().await.unwrap(), 0, "no entry left behind");
    drop(lock.acquire(key("contended")).await.unwrap());
}
