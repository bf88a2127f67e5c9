//! What names an MCP server and how golato reaches it: a command (stdio) or a URL (streamable
//! HTTP), its environment and timeouts.

use std::time::Duration;

use golato_actors::Host;

use super::Error;

/// How long a server may take to start and complete MCP's handshake by default: 20 s. Long
/// enough for a server that starts at all (codex waits 10 s), short enough that nobody takes it
/// for a hang; a first `npx -y` of a large package may need more
/// ([`McpServerConfig::with_connect_timeout`]).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a request may go unanswered by default: 120 s, counted again from each progress
/// notification of a tool call.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// How to reach an MCP server.
#[derive(Debug, Clone)]
pub enum McpTransport {
    /// A child process speaking MCP on its standard input and output.
    Stdio {
        /// The program to run.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the environment it inherits.
        env: Vec<(String, String)>,
    },
    /// A streamable HTTP endpoint, such as `http://127.0.0.1:3001/mcp`.
    Http {
        /// The endpoint's URL.
        url: String,
    },
}

/// A leading `NAME=value` word of a command line, as a shell reads it.
pub(super) fn assignment(word: &str) -> Option<(String, String)> {
    let (name, value) = word.split_once('=')?;
    let valid = name
        .chars()
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && name
            .chars()
            .all(|char| char.is_ascii_alphanumeric() || char == '_');
    valid.then(|| (name.to_owned(), value.to_owned()))
}

/// An MCP server to connect to, and how its tools are named.
#[derive(Debug, Clone)]
pub struct McpServerConfig {
    /// How to reach it.
    pub transport: McpTransport,
    /// What its tools' names start with (`{prefix}_{tool}`), so that they cannot take a
    /// built-in's name; `None` uses the server's own name (its last path segment).
    pub prefix: Option<String>,
    /// The host whose runtime the connection lives on; `None` uses [`Host::global`].
    pub host: Option<Host>,
    /// How long starting the server and MCP's handshake may take; past it the server is
    /// stopped and connecting fails. Default [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
    /// How long a request may go unanswered (a tool call: since its last progress
    /// notification); past it the request fails, and a call is cancelled on the server.
    /// Default [`DEFAULT_REQUEST_TIMEOUT`].
    pub request_timeout: Duration,
}

impl McpServerConfig {
    /// A server started as `program args…`.
    pub fn stdio(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        McpServerConfig {
            transport: McpTransport::Stdio {
                program: program.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: Vec::new(),
            },
            prefix: None,
            host: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }

    /// A server started by a command line, split into words as a POSIX shell would (quotes
    /// and backslashes, no expansion), such as `npx -y @modelcontextprotocol/server-everything`
    /// or `node "/opt/my servers/index.js"`. Leading `NAME=value` words set variables of its
    /// environment, as in a shell: `API_TOKEN=x node server.js`.
    ///
    /// ```
    /// use golato::mcp::{McpServerConfig, McpTransport};
    ///
    /// let config = McpServerConfig::command_line(r#"MODE=fast node "/opt/my servers/index.js" -v"#)?;
    /// let McpTransport::Stdio { program, args, env } = config.transport else { unreachable!() };
    /// assert_eq!(program, "node");
    /// assert_eq!(args, ["/opt/my servers/index.js", "-v"]);
    /// assert_eq!(env, [("MODE".to_owned(), "fast".to_owned())]);
    /// # Ok::<(), golato::mcp::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::EmptyCommand`] for a command line with no program, [`Error::Quoting`] for one
    /// whose quotes do not close.
    pub fn command_line(line: &str) -> Result<Self, Error> {
        let words = shlex::split(line).ok_or_else(|| Error::Quoting(line.to_owned()))?;
        let mut words = words.into_iter().peekable();
        let mut env = Vec::new();
        while let Some((name, value)) = words.peek().and_then(|word| assignment(word)) {
            env.push((name, value));
            words.next();
        }
        let program = words.next().ok_or(Error::EmptyCommand)?;
        let mut config = McpServerConfig::stdio(program, words);
        if let McpTransport::Stdio { env: into, .. } = &mut config.transport {
            *into = env;
        }
        Ok(config)
    }

    /// Adds a variable to a stdio server's environment (nothing for an HTTP server).
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.push((name.into(), value.into()));
        }
        self
    }

    /// A server at a streamable HTTP endpoint.
    pub fn http(url: impl Into<String>) -> Self {
        McpServerConfig {
            transport: McpTransport::Http { url: url.into() },
            prefix: None,
            host: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }

    /// Sets how long starting the server and MCP's handshake may take.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets how long a request may go unanswered (a tool call: since its last progress).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Names its tools `{prefix}_{tool}`.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    pub(super) fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { program, args, .. } => std::iter::once(program.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            McpTransport::Http { url } => url.clone(),
        }
    }
}
