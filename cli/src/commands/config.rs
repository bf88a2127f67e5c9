//! `golato config` and `golato hooks`: what the configuration files in effect say, and where
//! each setting, rule and hook comes from.

use std::collections::BTreeMap;

use golato::policy::CallPolicy;

use crate::args::ConfigArgs;
use crate::error::CliError;
use crate::settings::config;

/// `golato hooks`: the command hooks in effect, each with where it is configured.
pub(crate) fn hooks(args: ConfigArgs) -> Result<crate::error::Exit, CliError> {
    let layers = crate::settings::resolved::shown_layers(&args)?;
    let mut policy = CallPolicy::new();
    for layer in layers {
        // What was left out is said here too: "no hooks here" of a file whose every hook was
        // left out would be untrue.
        for text in [config::ignored_text(&layer), config::left_out_text(&layer)]
            .into_iter()
            .flatten()
        {
            eprintln!("golato: {}", crate::view::shown::visible(&text));
        }
        policy.extend(layer.policy);
    }
    let described = policy.describe_hooks();
    if described.is_empty() {
        eprintln!("golato: no hooks here (configure them as [[hooks.EVENT]] in a configuration file; README \"CallPolicy\")");
    }
    for line in described {
        println!("{}", crate::view::shown::visible(&line));
    }
    Ok(crate::error::Exit::Success)
}

/// `golato config`: every setting in effect, and where it comes from.
pub(crate) fn show(args: ConfigArgs) -> Result<crate::error::Exit, CliError> {
    use std::io::Write as _;
    let layers = crate::settings::resolved::shown_layers(&args)?;
    let mut out = std::io::stdout().lock();
    // Every line as a terminal shows it safely: paths, sources and values come from files a
    // repository brings (a folder named with an escape sequence would drive the terminal).
    macro_rules! say {
        ($($arg:tt)*) => {
            let _ = writeln!(out, "{}", crate::view::shown::visible(&format!($($arg)*)));
        };
    }
    let files = [config::user_file(), Some(config::project_file(&args.cwd))];
    for path in files.into_iter().flatten() {
        let state = if path.exists() { "read" } else { "none" };
        say!("# {}: {state}", path.display());
    }
    let mut effective: BTreeMap<&'static str, (String, String)> = BTreeMap::new();
    for layer in &layers {
        for (key, value) in crate::settings::file_settings::entries(&layer.settings) {
            effective.insert(key, (value, layer.source.clone()));
        }
        if let Some(text) = config::ignored_text(layer) {
            say!("# {text}");
        }
        if let Some(text) = config::left_out_text(layer) {
            say!("# {text}");
        }
    }
    if effective.is_empty() {
        say!("# nothing set: every flag has its default (golato run --help)");
    }
    for (key, (value, source)) in effective {
        say!("{key} = {value}    # {source}");
    }
    let mut policy = CallPolicy::new();
    for layer in layers {
        policy.extend(layer.policy);
    }
    if !policy.rules.is_empty() {
        say!("# rules (a deny beats an ask beats an allow):");
    }
    for rule in policy.rules.iter() {
        say!("{} {}    # {}", rule.decision, rule.text, rule.source);
    }
    for hook in policy.describe_hooks() {
        say!("hook {hook}");
    }
    for rule in policy.replay_safe.iter() {
        say!("durable safe {}    # {}", rule.text, rule.source);
    }
    let instructions = crate::setup::instructions::for_config(&args.cwd, args.settings.trust);
    if instructions.files.is_empty() {
        say!("# instructions: no AGENTS.md or CLAUDE.md read");
    }
    for file in &instructions.files {
        say!("# instructions: {}", file.display());
    }
    if let Some(why) = &instructions.skipped {
        say!("# instructions: {}", crate::view::shown::visible(why));
    }
    Ok(crate::error::Exit::Success)
}
