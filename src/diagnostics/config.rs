//! What starts a language server and for which files ([`ServerSpec`]), and what a session's
//! diagnostics are made of ([`Config`]): root, servers, linters, waits, sandbox.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::linter::LinterSpec;

/// A language server golato may start: how, and for which files.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[non_exhaustive]
pub struct ServerSpec {
    /// Its name (`pyright`): in notes and in configuration (`[lsp.pyright]`).
    pub name: String,
    /// The program and its arguments (`["pyright-langserver", "--stdio"]`).
    pub command: Vec<String>,
    /// The file extensions it serves, without the dot (`py`).
    pub extensions: Vec<String>,
    /// Files or folders whose presence says a folder is a project of its language
    /// (`pyproject.toml`); empty: any folder.
    #[serde(default)]
    pub root_markers: Vec<String>,
}

impl ServerSpec {
    /// A server for files with `extensions`, started as `command`.
    pub fn new(
        name: impl Into<String>,
        command: impl IntoIterator<Item = impl Into<String>>,
        extensions: impl IntoIterator<Item = impl Into<String>>,
    ) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            command: command.into_iter().map(Into::into).collect(),
            extensions: extensions.into_iter().map(Into::into).collect(),
            root_markers: Vec::new(),
        }
    }

    /// The servers golato knows, each used when its program is on `PATH` (the first of a
    /// language's found wins: pyright before pylsp).
    pub fn builtin() -> Vec<ServerSpec> {
        let spec =
            |name: &str, command: &[&str], extensions: &[&str], markers: &[&str]| ServerSpec {
                root_markers: markers.iter().map(|m| (*m).to_owned()).collect(),
                ..ServerSpec::new(name, command.iter().copied(), extensions.iter().copied())
            };
        vec![
            spec(
                "pyright",
                &["pyright-langserver", "--stdio"],
                &["py", "pyi"],
                &[],
            ),
            spec("pylsp", &["pylsp"], &["py", "pyi"], &[]),
            spec(
                "typescript",
                &["typescript-language-server", "--stdio"],
                &["ts", "tsx", "js", "jsx", "mjs", "cjs"],
                &["package.json", "tsconfig.json", "jsconfig.json"],
            ),
            spec(
                "rust-analyzer",
                &["rust-analyzer"],
                &["rs"],
                &["Cargo.toml"],
            ),
            spec("gopls", &["gopls"], &["go"], &["go.mod"]),
            spec(
                "clangd",
                &["clangd"],
                &["c", "h", "cc", "cpp", "cxx", "hpp", "hh"],
                &[],
            ),
        ]
    }

    /// Whether its program can be found (on `PATH`, or as the path given).
    pub fn is_installed(&self) -> bool {
        let Some(program) = self.command.first() else {
            return false;
        };
        if program.contains('/') {
            return Path::new(program).is_file();
        }
        std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|folder| folder.join(program).is_file())
        })
    }
}

/// The language ID the protocol names a file's language by, from its extension.
pub(super) fn language_id(extension: &str) -> &str {
    match extension {
        "py" | "pyi" => "python",
        "ts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "rs" => "rust",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "cpp",
        other => other,
    }
}

/// How [`Diagnostics`](super::Diagnostics) runs servers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The workspace: the folder servers start in, and the one relative paths are in.
    pub root: PathBuf,
    /// The servers it may start, in order of preference; default: [`ServerSpec::builtin`]
    /// (only those installed are started).
    pub servers: Vec<ServerSpec>,
    /// How long a call waits for a file's fresh diagnostics (2 s).
    pub wait: Duration,
    /// How long a server may take to start and answer `initialize` (20 s): the first call of a
    /// language waits this much more at most.
    pub start_within: Duration,
    /// Linters run on a changed file's text besides its server (none by default).
    pub linters: Vec<LinterSpec>,
    /// Confines every server read-only (a [`golato_sandbox::Policy::read_only`] prepared for
    /// the root), with the network that policy allows; `None`: servers run unconfined.
    pub sandbox: Option<Arc<golato_sandbox::Prepared>>,
}

impl Config {
    /// The built-in servers for `root`, unconfined, waiting 2 s.
    pub fn new(root: impl Into<PathBuf>) -> Config {
        Config {
            root: root.into(),
            servers: ServerSpec::builtin(),
            wait: Duration::from_secs(2),
            start_within: Duration::from_secs(20),
            linters: Vec::new(),
            sandbox: None,
        }
    }
}
