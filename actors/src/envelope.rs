//! Traced delivery: every actor message travels in an [`Envelope`] stamped when it was sent, and is
//! handled inside a `tracing` span.
//!
//! actix 0.13 exposes neither the time a message waited nor the length of a mailbox, so the
//! sender side ([`Mailbox`], [`TracedRecipient`]) stamps the envelope and bumps a per-actor depth
//! gauge; the handler side opens a span with `actor`, `message_type`, `mailbox_wait_us` and
//! `queue_depth` (the messages still waiting behind this one) and decrements the gauge. Spans are
//! children of the actor's own span ([`TracedActor::span`]), so they nest run → turn → batch → call.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use actix::dev::ToEnvelope;
use actix::{Actor, Addr, Handler, MailboxError, Message};

use crate::console::{Handling, Kind, Probe};
use crate::stats::ActorCounters;
use crate::Host;

/// An actor whose handled messages are traced as children of its own span.
pub trait TracedActor: Actor {
    /// The span of this actor (a run, a batch, a call); message spans are its children.
    fn span(&self) -> &tracing::Span;
}

/// The depth of one actor's mailbox, and the counters of its actor type on its host (for a
/// counted mailbox).
#[derive(Debug, Default)]
struct Gauge {
    depth: AtomicUsize,
    counters: Option<Arc<ActorCounters>>,
    /// The actor's console entry, when the host's console is on.
    probe: Probe,
}

/// A message `M` stamped with the moment it was sent and the mailbox depth gauge of its receiver.
pub struct Envelope<M> {
    message: M,
    sent_at: Instant,
    waiting: Waiting,
}

/// The envelope's place in its receiver's gauge: given back when it is opened, or when it is
/// dropped unhandled (its actor stopped), so the depth never counts a message twice or forever.
struct Waiting {
    gauge: Option<Arc<Gauge>>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(gauge) = self.gauge.take() {
            gauge.depth.fetch_sub(1, Ordering::Relaxed);
            if let Some(counters) = &gauge.counters {
                counters.dropped();
            }
            gauge.probe.dropped();
        }
    }
}

impl<M> Envelope<M> {
    fn new(message: M, gauge: &Arc<Gauge>) -> Self {
        gauge.depth.fetch_add(1, Ordering::Relaxed);
        if let Some(counters) = &gauge.counters {
            counters.sent();
        }
        gauge.probe.sent();
        Envelope {
            message,
            sent_at: Instant::now(),
            waiting: Waiting {
                gauge: Some(Arc::clone(gauge)),
            },
        }
    }

    /// Opens the envelope: returns the message, the span its handling runs in, and the
    /// console's note that it is being handled (keep it until the handler returns).
    ///
    /// `actor` and `message_type` name the receiver and the message type in the span (not
    /// `message`, which formatting subscribers print as an event's text).
    pub fn open(
        self,
        parent: &tracing::Span,
        actor: &'static str,
        message_type: &'static str,
    ) -> (M, tracing::Span, Handling) {
        let Envelope {
            message,
            sent_at,
            mut waiting,
        } = self;
        let wait_us = u64::try_from(sent_at.elapsed().as_micros()).unwrap_or(u64::MAX);
        let mut behind = 0;
        let mut handling = None;
        if let Some(gauge) = waiting.gauge.take() {
            behind = gauge
                .depth
                .fetch_sub(1, Ordering::Relaxed)
                .saturating_sub(1);
            if let Some(counters) = &gauge.counters {
                counters.handled(wait_us);
            }
            handling = Some(gauge.probe.handling(message_type, wait_us));
        }
        // Under the `golato` target, so that `RUST_LOG=golato=debug` shows the actors' work with
        // the rest of a run's story.
        let span = tracing::debug_span!(
            target: "golato",
            parent: parent,
            "actor_message",
            actor,
            message_type,
            mailbox_wait_us = wait_us,
            queue_depth = behind,
        );
        (message, span, handling.unwrap_or_else(Handling::none))
    }
}

impl<M> fmt::Debug for Envelope<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Envelope")
            .field("message", &std::any::type_name::<M>())
            .field("sent_at", &self.sent_at)
            .finish()
    }
}

impl<M> Message for Envelope<M>
where
    M: Message,
    M::Result: 'static,
{
    type Result = M::Result;
}

/// The address of an actor whose messages are traced: stamps each message on send.
///
/// Cloning is one reference-count increment: clones share one actix address, whose own clone
/// allocates (every run clones its mailbox for each call).
pub struct Mailbox<A: Actor> {
    shared: Arc<MailboxShared<A>>,
}

struct MailboxShared<A: Actor> {
    addr: Addr<A>,
    gauge: Arc<Gauge>,
}

impl<A: Actor> Clone for Mailbox<A> {
    fn clone(&self) -> Self {
        Mailbox {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<A: Actor> fmt::Debug for Mailbox<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mailbox")
            .field("actor", &std::any::type_name::<A>())
            .field("depth", &self.depth())
            .finish()
    }
}

impl<A: Actor> Mailbox<A> {
    /// Wraps the address of a freshly started actor.
    pub fn new(addr: Addr<A>) -> Self {
        Mailbox::with_gauge(addr, Gauge::default())
    }

    /// Wraps the address of a freshly started actor, counting its messages in
    /// [`Host::stats`] under its type's name (and, with the host's console on, as an actor
    /// of [`Kind::Other`] there).
    pub fn counted(addr: Addr<A>, host: &Host) -> Self {
        Mailbox::counted_as(addr, host, Kind::Other)
    }

    /// [`Mailbox::counted`], shown on the host's console as an actor of `kind` (its entry
    /// ends when the last clone of this mailbox is dropped).
    pub fn counted_as(addr: Addr<A>, host: &Host, kind: Kind) -> Self {
        let counters = host.inner.stats.counters(std::any::type_name::<A>());
        let probe = match &host.inner.console {
            Some(console) => console.register_mailbox(kind, counters.actor().into()),
            None => Probe::none(),
        };
        Mailbox::with_gauge(
            addr,
            Gauge {
                depth: AtomicUsize::new(0),
                counters: Some(counters),
                probe,
            },
        )
    }

    /// The actor's entry on its host's console ([`Probe::none`] when the console is off or the
    /// mailbox is not counted): for the actor to say who it is and what it waits on.
    pub fn probe(&self) -> &Probe {
        &self.shared.gauge.probe
    }

    fn with_gauge(addr: Addr<A>, gauge: Gauge) -> Self {
        Mailbox {
            shared: Arc::new(MailboxShared {
                addr,
                gauge: Arc::new(gauge),
            }),
        }
    }

    /// Messages sent but not yet handled.
    pub fn depth(&self) -> usize {
        self.shared.gauge.depth.load(Ordering::Relaxed)
    }

    /// Whether the actor is still alive to receive messages.
    pub fn connected(&self) -> bool {
        self.shared.addr.connected()
    }

    /// Sends `message` without waiting for it to be handled; dropped if the actor has stopped.
    pub fn do_send<M>(&self, message: M)
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<Envelope<M>>,
        A::Context: ToEnvelope<A, Envelope<M>>,
    {
        let shared = &self.shared;
        shared.addr.do_send(Envelope::new(message, &shared.gauge));
    }

    /// Sends `message` and resolves with the handler's reply.
    ///
    /// # Errors
    /// [`MailboxError::Closed`] if the actor stopped before handling it.
    pub async fn send<M>(&self, message: M) -> Result<M::Result, MailboxError>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<Envelope<M>>,
        A::Context: ToEnvelope<A, Envelope<M>>,
    {
        let shared = &self.shared;
        shared
            .addr
            .send(Envelope::new(message, &shared.gauge))
            .await
    }

    /// A type-erased sender of one message type to this actor, still traced.
    pub fn recipient<M>(&self) -> TracedRecipient<M>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<Envelope<M>>,
        A::Context: ToEnvelope<A, Envelope<M>>,
    {
        // The mailbox itself, behind a message-typed view: an `Addr::recipient` would clone
        // the actix address (two allocations) and box it (a third), for every recipient.
        TracedRecipient {
            shared: Arc::clone(&self.shared) as Arc<dyn Deliver<M>>,
        }
    }
}

/// A traced sender of one message type `M`, whatever actor receives it. Clones share it.
pub struct TracedRecipient<M>
where
    M: Message + Send,
    M::Result: Send,
{
    shared: Arc<dyn Deliver<M>>,
}

/// A mailbox seen through one message type it accepts.
trait Deliver<M: Message + Send>: Send + Sync
where
    M::Result: Send,
{
    fn deliver(&self, message: M);
    fn request(
        &self,
        message: M,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<M::Result, MailboxError>> + Send>>;
}

impl<A, M> Deliver<M> for MailboxShared<A>
where
    A: Handler<Envelope<M>>,
    A::Context: ToEnvelope<A, Envelope<M>>,
    M: Message + Send + 'static,
    M::Result: Send,
{
    fn deliver(&self, message: M) {
        self.addr.do_send(Envelope::new(message, &self.gauge));
    }

    fn request(
        &self,
        message: M,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<M::Result, MailboxError>> + Send>>
    {
        Box::pin(self.addr.send(Envelope::new(message, &self.gauge)))
    }
}

impl<M> Clone for TracedRecipient<M>
where
    M: Message + Send,
    M::Result: Send,
{
    fn clone(&self) -> Self {
        TracedRecipient {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<M> fmt::Debug for TracedRecipient<M>
where
    M: Message + Send,
    M::Result: Send,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TracedRecipient")
            .field("message", &std::any::type_name::<M>())
            .finish()
    }
}

impl<M> TracedRecipient<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    /// Sends `message` without waiting; dropped if the receiver has stopped.
    pub fn do_send(&self, message: M) {
        self.shared.deliver(message);
    }

    /// Sends `message` and resolves with the handler's reply.
    ///
    /// # Errors
    /// [`MailboxError::Closed`] if the receiver stopped before handling it.
    pub async fn send(&self, message: M) -> Result<M::Result, MailboxError> {
        self.shared.request(message).await
    }
}

/// Implements `Handler<Envelope<M>>` for a (non-generic) [`TracedActor`] that implements
/// `Handler<M>`, for each listed message type: the envelope is opened in a span and the plain
/// handler runs inside it.
///
/// ```
/// use actix::{Actor, Context, Handler, Message};
/// use golato_actors::{traced_handlers, TracedActor};
///
/// struct Counter { count: u64, span: tracing::Span }
/// impl Actor for Counter { type Context = Context<Self>; }
/// impl TracedActor for Counter { fn span(&self) -> &tracing::Span { &self.span } }
///
/// #[derive(Message)]
/// #[rtype(result = "u64")]
/// struct Add(u64);
///
/// impl Handler<Add> for Counter {
///     type Result = u64;
///     fn handle(&mut self, Add(n): Add, _: &mut Context<Self>) -> u64 { self.count += n; self.count }
/// }
/// traced_handlers!(Counter { Add });
/// ```
#[macro_export]
macro_rules! traced_handlers {
    ($actor:ty { $($message:ty),+ $(,)? }) => {$(
        impl ::actix::Handler<$crate::Envelope<$message>> for $actor {
            type Result = <$actor as ::actix::Handler<$message>>::Result;

            fn handle(
                &mut self,
                envelope: $crate::Envelope<$message>,
                ctx: &mut <$actor as ::actix::Actor>::Context,
            ) -> Self::Result {
                let (message, span, _handling) = envelope.open(
                    $crate::TracedActor::span(self),
                    stringify!($actor),
                    stringify!($message),
                );
                let _entered = span.enter();
                <$actor as ::actix::Handler<$message>>::handle(self, message, ctx)
            }
        }
    )+};
}
