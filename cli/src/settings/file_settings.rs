//! What a configuration file may say: the settings of one layer (named after the flags), its
//! profiles, and how TOML text is read into them with errors that name the key and its line.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// What a layer may set; the names are the flags' (`base_url` for `--base-url`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSettings {
    pub(super) provider: Option<String>,
    pub(super) model: Option<String>,
    pub(super) base_url: Option<String>,
    pub(super) system: Option<String>,
    pub(super) tools: Option<Vec<String>>,
    pub(super) exclude: Option<Vec<String>>,
    pub(super) sequential: Option<bool>,
    pub(super) max_parallel: Option<usize>,
    pub(super) max_background: Option<usize>,
    pub(super) tool_timeout: Option<f64>,
    pub(super) max_turns: Option<usize>,
    pub(super) context_window: Option<u64>,
    pub(super) no_compact: Option<bool>,
    pub(super) max_tokens: Option<u64>,
    pub(super) max_cost: Option<f64>,
    pub(super) mcp: Option<Vec<McpEntry>>,
    pub(super) mcp_url: Option<Vec<String>>,
    pub(super) sandbox: Option<String>,
    pub(super) allow_network: Option<bool>,
    pub(super) allow_domain: Option<Vec<String>>,
    pub(super) deny_domain: Option<Vec<String>>,
    pub(super) network_methods: Option<String>,
    pub(super) network_log: Option<PathBuf>,
    pub(super) writable: Option<Vec<PathBuf>>,
    pub(super) deny_read: Option<Vec<PathBuf>>,
    pub(super) no_bash_checkpoints: Option<bool>,
    pub(super) approve: Option<String>,
    pub(super) temperature: Option<f64>,
    pub(super) max_output_tokens: Option<u32>,
    pub(super) reasoning_effort: Option<String>,
    pub(super) web_search: Option<bool>,
    pub(super) reviewer_policy: Option<String>,
    /// `lsp = false`, or `[lsp.NAME]` tables of language servers.
    pub(super) lsp: Option<LspEntry>,
    /// `[lint.NAME]` tables: linters run on changed files.
    pub(super) lint: Option<BTreeMap<String, LintEntry>>,
}

/// A `[lint.NAME]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LintEntry {
    pub(crate) command: Vec<String>,
    pub(crate) extensions: Vec<String>,
    pub(crate) format: golato::diagnostics::LintFormat,
}

/// `lsp`: off, or language servers by name (each used before golato's own for its files).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum LspEntry {
    On(bool),
    Servers(BTreeMap<String, LspServer>),
}

/// A `[lsp.NAME]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LspServer {
    pub(crate) command: Vec<String>,
    pub(crate) extensions: Vec<String>,
    #[serde(default)]
    pub(crate) root_markers: Vec<String>,
}

/// An MCP server: a command line, or a table with its arguments and environment.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum McpEntry {
    Line(String),
    Table {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
}

/// A file's `[profiles.NAME]` tables, by name.
pub(crate) type Profiles = BTreeMap<String, FileSettings>;

/// A configuration file's text as settings and profiles; when it is not, why (with the line).
pub(crate) fn parse(text: &str) -> Result<(FileSettings, Profiles), String> {
    let mut table: toml::Table = toml::from_str(text).map_err(|error| {
        let line = error.span().map(|span| {
            let before = text.get(..span.start).unwrap_or(text);
            before.lines().count().max(1)
        });
        match line {
            Some(line) => format!("line {line}: {}", error.message().trim()),
            None => error.message().trim().to_owned(),
        }
    })?;
    // The policy's own tables, read by `golato::policy`.
    table.remove("rules");
    table.remove("hooks");
    table.remove("durable");
    let mut profiles = BTreeMap::new();
    if let Some(tables) = table.remove("profiles") {
        let toml::Value::Table(tables) = tables else {
            return Err("`profiles` must be tables: [profiles.NAME]".into());
        };
        for (name, settings) in tables {
            let toml::Value::Table(settings) = settings else {
                return Err(format!(
                    "`profiles.{name}` must be a table: [profiles.{name}]"
                ));
            };
            let section = format!("[profiles.{name}]");
            profiles.insert(name, settings_of(settings, text, Some(&section))?);
        }
    }
    let settings = settings_of(table, text, None)?;
    Ok((settings, profiles))
}

/// `table` as settings; when it is not, which key is wrong, on which line of `text` (in
/// `section`, or before any section), and why.
pub(super) fn settings_of(
    table: toml::Table,
    text: &str,
    section: Option<&str>,
) -> Result<FileSettings, String> {
    let whole = toml::Value::Table(table.clone()).try_into::<FileSettings>();
    let Err(error) = whole else {
        return whole.map_err(|error| error.message().to_owned());
    };
    for (key, value) in table {
        let mut alone = toml::Table::new();
        alone.insert(key.clone(), value);
        if let Err(wrong) = toml::Value::Table(alone).try_into::<FileSettings>() {
            let at = line_of(text, section, &key)
                .map_or_else(String::new, |line| format!("line {line}: "));
            if !setting_names().contains(&key.as_str()) {
                return Err(format!("{at}{}", unknown_key(&key, section.is_none())));
            }
            let why = match key.as_str() {
                "mcp" => "each entry must be a command line (a string) or a table with command, args and env".to_owned(),
                _ => plain_types(wrong.message().trim()),
            };
            return Err(format!("{at}`{key}`: {why}"));
        }
    }
    Err(error.message().trim().to_owned())
}

/// What to say of `key`, which is no setting: the nearest one when it looks like a typo, else
/// every one there is.
pub(super) fn unknown_key(key: &str, top: bool) -> String {
    let mut names: Vec<&str> = setting_names().to_vec();
    if top {
        names.extend(["rules", "hooks", "profiles"]);
    }
    let nearest = names
        .iter()
        .map(|name| (strsim::damerau_levenshtein(key, name), *name))
        .min()
        .filter(|(distance, name)| *distance <= (name.len() / 3).max(1));
    match nearest {
        Some((_, name)) => format!("`{key}` is not a setting (did you mean `{name}`?)"),
        None => format!(
            "`{key}` is not a setting; the settings are {}",
            names.join(", ")
        ),
    }
}

/// The keys a configuration file may set, as `FileSettings`'s derived `Deserialize` names
/// them (so the list cannot drift from the struct).
pub(crate) fn setting_names() -> &'static [&'static str] {
    use serde::de::{self, Deserialize, Visitor};
    struct Names(std::cell::Cell<&'static [&'static str]>);
    impl<'de> de::Deserializer<'de> for &Names {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only structs"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.set(fields);
            Err(de::Error::custom("names taken"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let names = Names(std::cell::Cell::new(&[]));
    let _ = FileSettings::deserialize(&names);
    names.0.get()
}

/// serde's type names in a person's words.
pub(super) fn plain_types(message: &str) -> String {
    [
        ("expected f64", "expected a number"),
        ("expected usize", "expected a whole number, 0 or more"),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected u32", "expected a whole number, 0 or more"),
        (
            "expected a sequence",
            "expected a list, such as [\"a\", \"b\"]",
        ),
        ("expected a boolean", "expected true or false"),
    ]
    .iter()
    .fold(message.to_owned(), |message, (rust, plain)| {
        message.replace(rust, plain)
    })
}

/// The line (1-based) where `key` is set in `text`, within `section` (`[profiles.NAME]`) or
/// before the first section.
pub(super) fn line_of(text: &str, section: Option<&str>, key: &str) -> Option<usize> {
    let mut inside = section.is_none();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            inside = section.is_some_and(|section| trimmed.starts_with(section));
            continue;
        }
        let named = trimmed
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='));
        if inside && named {
            return Some(index + 1);
        }
    }
    None
}

/// What `settings` sets, as TOML-like text.
pub(crate) fn entries(settings: &FileSettings) -> Vec<(&'static str, String)> {
    let mut entries = Vec::new();
    let text = |value: &dyn std::fmt::Debug| format!("{value:?}");
    macro_rules! entry {
        ($field:ident) => {
            if let Some(value) = &settings.$field {
                entries.push((stringify!($field), text(value)));
            }
        };
    }
    entry!(provider);
    entry!(model);
    entry!(base_url);
    entry!(system);
    entry!(tools);
    entry!(exclude);
    entry!(sequential);
    entry!(max_parallel);
    entry!(max_background);
    entry!(tool_timeout);
    entry!(max_turns);
    entry!(context_window);
    entry!(no_compact);
    entry!(max_tokens);
    entry!(max_cost);
    entry!(mcp);
    entry!(mcp_url);
    entry!(sandbox);
    entry!(allow_network);
    entry!(allow_domain);
    entry!(deny_domain);
    entry!(network_methods);
    entry!(network_log);
    entry!(writable);
    entry!(deny_read);
    entry!(no_bash_checkpoints);
    entry!(approve);
    entry!(temperature);
    entry!(max_output_tokens);
    entry!(reasoning_effort);
    entry!(web_search);
    entry!(reviewer_policy);
    entry!(lsp);
    entry!(lint);
    entries
}
