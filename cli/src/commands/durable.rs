//! `golato serve` and `golato submit`: durable runs on a Restate server (feature `durable`).

#[cfg(not(feature = "durable"))]
use crate::args::SubmitArgs;
use crate::args::{ControlArgs, ServeArgs};
use crate::error::{CliError, Exit};
#[cfg(feature = "durable")]
use std::sync::Arc;

#[cfg(not(feature = "durable"))]
fn unavailable(command: &str) -> CliError {
    CliError::usage(format!(
        "`golato {command}` needs durable runs, which this golato was built without; build it with its default features (`cargo install --path cli`)"
    ))
}

#[cfg(not(feature = "durable"))]
pub(crate) async fn serve(_: ServeArgs, _: crate::settings::Settings) -> Result<Exit, CliError> {
    Err(unavailable("serve"))
}

#[cfg(not(feature = "durable"))]
pub(crate) async fn submit(_: SubmitArgs) -> Result<Exit, CliError> {
    Err(unavailable("submit"))
}

#[cfg(feature = "durable")]
pub(crate) use crate::commands::submit::submit;

/// What `golato cancel`, `steer` and `follow-up` do to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    Cancel,
    Steer,
    FollowUp,
}

#[cfg(not(feature = "durable"))]
pub(crate) async fn control(_: ControlArgs, _: Control) -> Result<Exit, CliError> {
    Err(unavailable("cancel, steer and follow-up"))
}

#[cfg(not(feature = "durable"))]
pub(crate) async fn approve(_: crate::args::ApproveArgs) -> Result<Exit, CliError> {
    Err(unavailable("approve"))
}

/// `golato approve`: answers a durable run's question.
#[cfg(feature = "durable")]
pub(crate) async fn approve(args: crate::args::ApproveArgs) -> Result<Exit, CliError> {
    use crate::args::YesNo;
    golato_restate::check_run_id(&args.id).map_err(|error| CliError::usage(error.to_string()))?;
    let answer = match (args.answer, args.reason) {
        (YesNo::Yes, Some(_)) => {
            return Err(CliError::usage(
                "--reason goes with `no`: it tells the model why the call was refused",
            ))
        }
        (YesNo::Yes, None) => golato_restate::Answer::Yes,
        (YesNo::No, reason) => golato_restate::Answer::No { reason },
    };
    let client = golato_restate::Client::new(&args.restate)
        .map_err(|error| CliError::usage(format!("--restate: {error}")))?;
    client
        .answer(&args.id, &args.call_id, &answer)
        .await
        .map_err(|error| CliError::Failed(error.to_string()))?;
    let said = match answer {
        golato_restate::Answer::Yes => "it runs",
        golato_restate::Answer::No { .. } => "it does not run, and the model is told",
    };
    eprintln!(
        "golato: answered call {} of run {}: {said}",
        crate::view::shown::visible(&args.call_id),
        args.id
    );
    Ok(Exit::Success)
}

/// `golato cancel`, `golato steer`, `golato follow-up`.
#[cfg(feature = "durable")]
pub(crate) async fn control(args: ControlArgs, what: Control) -> Result<Exit, CliError> {
    let id = args.id.as_str();
    golato_restate::check_run_id(id).map_err(|error| CliError::usage(error.to_string()))?;
    let mut client = golato_restate::Client::new(&args.restate)
        .map_err(|error| CliError::usage(format!("--restate: {error}")))?;
    let failed = |error: golato_restate::Error| CliError::Failed(error.to_string());
    match what {
        Control::Cancel => {
            let Some(admin) = &args.restate_admin else {
                return Err(CliError::usage(
                    "cancelling needs the server's admin API: give --restate-admin URL (Restate's port 9070)",
                ));
            };
            if args.text.is_some() {
                return Err(CliError::usage("golato cancel takes the run's ID only"));
            }
            client = client
                .with_admin(admin)
                .map_err(|error| CliError::usage(format!("--restate-admin: {error}")))?;
            match client.cancel(id).await.map_err(failed)? {
                true => eprintln!("golato: run {id} cancelled; its transcript so far is kept"),
                false => eprintln!("golato: run {id} is not running (it ended, or never started); nothing was cancelled"),
            }
        }
        Control::Steer | Control::FollowUp => {
            let text = crate::setup::prompt::user_message(args.text.clone(), &[])?.text();
            match what {
                Control::Steer => client.steer(id, &text).await.map_err(failed)?,
                _ => client.follow_up(id, &text).await.map_err(failed)?,
            }
            let how = match what {
                Control::Steer => "joins after the tool calls that are running",
                _ => "waits until the run would end",
            };
            eprintln!("golato: delivered to run {id}; it {how}");
        }
    }
    Ok(Exit::Success)
}

/// Serves the `GolatoRun` object until SIGINT or SIGTERM; registers it first when asked.
#[cfg(feature = "durable")]
pub(crate) async fn serve(
    args: ServeArgs,
    settings: crate::settings::Settings,
) -> Result<Exit, CliError> {
    use golato_restate::Worker;
    log_to_stderr();
    let shared_lock = match &args.restate {
        Some(ingress) => Some(std::sync::Arc::new(
            golato_restate::SharedPathLock::new(ingress)
                .map_err(|error| CliError::usage(format!("--restate: {error}")))?
                .with_ttl(args.lock_ttl),
        ) as std::sync::Arc<dyn golato::builtin::SharedLock>),
        None => None,
    };
    let children = match crate::setup::tools::wanted(&settings) {
        true => Some(durable_children(&args)?),
        false => None,
    };
    // A question waits on the server (answered with `golato approve`), never in the worker.
    let approver = match &args.restate {
        Some(ingress) => Some(durable_questions(ingress, &settings, args.answer_within)?),
        None if matches!(
            settings.approve,
            Some(crate::args::Approve::Ask | crate::args::Approve::Edits)
        ) =>
        {
            return Err(CliError::usage(
                "--approve in golato serve asks its questions through the Restate server (nobody is at a worker's terminal): give --restate URL, the server's ingress",
            ))
        }
        None => None,
    };
    let crate::setup::agent::Built {
        agent,
        header,
        subagents,
        ..
    } = crate::setup::agent::build_agent(
        &settings,
        Some(crate::setup::agent::WorkerParts {
            shared_lock,
            children,
            approver,
        }),
        false,
    )
    .await?;
    eprintln!("{header}");
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|error| {
            CliError::usage(format!(
                "--listen {}: could not listen there ({error}); give a free port, or another address",
                args.listen
            ))
        })?;
    let address = listener.local_addr().map_err(|error| {
        CliError::Failed(format!("the listening socket has no address: {error}"))
    })?;
    let advertised = args
        .advertise
        .clone()
        .unwrap_or_else(|| format!("http://{address}"));
    let stop = tokio_util::sync::CancellationToken::new();
    let mut worker = Worker::new(agent);
    if let Some(subagents) = subagents {
        worker = worker.with_subagents(std::sync::Arc::new(subagents));
    }
    if let Some(ingress) = &args.restate {
        worker = worker
            .publish_events(ingress)
            .map_err(|error| CliError::usage(format!("--restate: {error}")))?;
    }
    let server = tokio::spawn(worker.serve(listener, stop.clone().cancelled_owned()));
    // Listening already (Restate calls the worker while registering it), but said to serve
    // only once registered: a registration that fails ends the worker, bounded in time.
    if let Some(admin) = &args.restate_admin {
        if let Err(error) = golato_restate::register(admin, &advertised).await {
            stop.cancel();
            return Err(CliError::Failed(format!("--restate-admin: {error}")));
        }
        eprintln!("golato: registered {advertised} with {admin}");
    }
    eprintln!("golato: serving durable runs on {address}");
    crate::interrupt::interrupted().await;
    eprintln!("golato: stopping; runs in flight go on where Restate retries them");
    stop.cancel();
    let _ = server.await;
    Ok(Exit::Success)
}

/// What makes the worker's approver ask through the server at `ingress`: each question a
/// durable workflow, refused after `within`.
#[cfg(feature = "durable")]
fn durable_questions(
    ingress: &str,
    settings: &crate::settings::Settings,
    within: std::time::Duration,
) -> Result<crate::setup::agent::WrapApprover, CliError> {
    // Checked now: a bad address is a usage error, not a refusal at the first question.
    golato_restate::Client::new(ingress)
        .map_err(|error| CliError::usage(format!("--restate: {error}")))?;
    let (ingress, cwd) = (ingress.to_owned(), settings.cwd.clone());
    Ok(Box::new(move |inner| {
        let describe = move |ctx: &golato::hook::HookContext| {
            (
                crate::setup::approve::detail(&ctx.call, &ctx.arguments),
                crate::view::preview::change(&cwd, &ctx.call.name, &ctx.arguments),
            )
        };
        match golato_restate::DurableApprover::new(&ingress, Arc::clone(&inner)) {
            Ok(durable) => Arc::new(
                durable
                    .with_deadline(within)
                    .with_describe(Arc::new(describe)),
            ),
            Err(_) => inner,
        }
    }))
}

/// A worker's subagents are durable runs of their own, submitted through the ingress and
/// cancelled through the admin API: both are needed.
#[cfg(feature = "durable")]
fn durable_children(
    args: &ServeArgs,
) -> Result<std::sync::Arc<dyn golato::subagent::Runner>, CliError> {
    let (Some(ingress), Some(admin)) = (&args.restate, &args.restate_admin) else {
        return Err(CliError::usage(
            "--tools …,task in golato serve runs each subagent as a durable run of its own: give --restate (the ingress, to submit it) and --restate-admin (the admin API, to cancel it with its task call)",
        ));
    };
    let client = golato_restate::Client::new(ingress)
        .and_then(|client| client.with_admin(admin))
        .map_err(|error| CliError::usage(error.to_string()))?;
    let children = golato_restate::DurableChildren::new(client)
        .map_err(|error| CliError::usage(error.to_string()))?;
    Ok(std::sync::Arc::new(children))
}

/// The worker's log on stderr: each run's start, end and model requests (RUST_LOG filters
/// it; default `golato=info`).
#[cfg(feature = "durable")]
fn log_to_stderr() {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("golato=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
