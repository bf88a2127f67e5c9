//! Network by domain: which hosts a sandboxed command may reach through golato's proxy, and
//! the judgement the proxy makes of each request: the host it was asked for (a CONNECT's, a
//! SOCKS name, a plain request's `Host`) before anything is resolved, the address the name
//! resolved to (so that a name pointed at a private address, or rebound to one, is refused),
//! and, in `read` mode, the method.
//!
//! This is the proxy's policy alone (issue 45, the first part): the proxy that applies it and
//! the namespace that leaves the proxy as the only way out come next.
//!
//! ```
//! use golato_sandbox::network::{Methods, NetworkPolicy};
//!
//! let policy = NetworkPolicy::new(&["@crates", "*.example.com"], &["bad.example.com"], Methods::All)?;
//! assert!(policy.judge_host("index.crates.io", 443).is_ok());
//! assert!(policy.judge_host("docs.example.com", 443).is_ok());
//! let refused = policy.judge_host("bad.example.com", 443).unwrap_err();
//! assert_eq!(refused.to_string(), "golato: bad.example.com is denied (--deny-domain bad.example.com)");
//! assert!(policy.judge_host("example.org", 443).is_err());
//! # Ok::<(), golato_sandbox::network::PatternError>(())
//! ```

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The hosts each preset allows (`--allow-domain @crates`): those the tool contacts to fetch.
pub const PRESETS: &[(&str, &[&str])] = &[
    (
        "crates",
        &["crates.io", "index.crates.io", "static.crates.io"],
    ),
    ("npm", &["registry.npmjs.org", "registry.yarnpkg.com"]),
    ("pypi", &["pypi.org", "files.pythonhosted.org"]),
    (
        "go",
        &[
            "proxy.golang.org",
            "sum.golang.org",
            "storage.googleapis.com",
        ],
    ),
    (
        "github",
        &[
            "github.com",
            "api.github.com",
            "codeload.github.com",
            "objects.githubusercontent.com",
            "raw.githubusercontent.com",
        ],
    ),
];

/// The ports a preset's hosts are allowed on: https and http.
pub const PRESET_PORTS: [u16; 2] = [443, 80];

/// Which methods a plain HTTP request may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Methods {
    /// Any.
    #[default]
    All,
    /// `GET`, `HEAD` and `OPTIONS` only: reading, never sending.
    Read,
}

/// A pattern that is not one: what was given, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pattern:?} is not a domain pattern: {why}; give a host (example.com), *.example.com, host:port, an address, or a preset (@crates, @npm, @pypi, @go, @github)")]
pub struct PatternError {
    /// The pattern as given.
    pub pattern: String,
    /// What is wrong with it.
    pub why: String,
}

/// A request the policy refuses, and why: its text is what the proxy answers (a 403's body)
/// and what the call's result tells the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The host asked for.
    pub host: String,
    /// Why it is refused.
    pub why: Why,
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// No allow pattern matches the host.
    NotAllowed,
    /// A deny pattern matches it.
    Denied,
    /// It resolved to an address a deny pattern names.
    DeniedAddress(IpAddr),
    /// The name resolved to a loopback, private, link-local (the cloud metadata address
    /// among them) or otherwise local address, which only a pattern naming it exactly allows.
    LocalAddress(IpAddr),
    /// `read` mode and a method that sends (or a tunnel, whose requests cannot be seen).
    Method(String),
    /// A TLS tunnel whose ClientHello names (SNI) another host than the one it was opened for
    /// (the name as sent, control bytes escaped).
    TlsName(String),
    /// A TLS tunnel whose ClientHello could not be read whole (too long, cut short, two
    /// names…): a name that cannot be checked is refused. Why, in a few words.
    TlsHello(String),
}

impl Refusal {
    /// Why, in a few words, for the line a call's result gives the model
    /// ("network: blocked HOST (WHY)").
    ///
    /// ```
    /// use golato_sandbox::network::{Methods, NetworkPolicy};
    ///
    /// let refused = NetworkPolicy::new(&[], &[], Methods::All)?.judge_host("example.org", 443).unwrap_err();
    /// assert_eq!(refused.reason(), "not in the allowed domains");
    /// # Ok::<(), golato_sandbox::network::PatternError>(())
    /// ```
    pub fn reason(&self) -> String {
        match &self.why {
            Why::NotAllowed => "not in the allowed domains".to_owned(),
            Why::Denied => "in the denied domains".to_owned(),
            Why::DeniedAddress(address) => format!("it resolves to the denied address {address}"),
            Why::LocalAddress(address) => format!("it resolves to the local address {address}"),
            Why::Method(method) => format!("{method} refused: the network is read-only"),
            Why::TlsName(named) => format!("its TLS name (SNI) was {named}"),
            Why::TlsHello(why) => format!("its TLS hello could not be checked: {why}"),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = &self.host;
        match &self.why {
            Why::NotAllowed => write!(f, "golato: {host} is not allowed; --allow-domain {host}"),
            Why::Denied => write!(f, "golato: {host} is denied (--deny-domain {host})"),
            Why::DeniedAddress(address) => write!(
                f,
                "golato: {host} resolves to {address}, which is denied (--deny-domain {address})"
            ),
            Why::LocalAddress(address) => write!(
                f,
                "golato: {host} resolves to {address}, a local address; only --allow-domain {host} (the exact name) allows it"
            ),
            Why::Method(method) if method == "CONNECT" => write!(
                f,
                "golato: a tunnel (CONNECT) to {host} is refused: the network is read-only (--network-methods read) and a tunnel's requests cannot be seen; use plain http:// or --network-methods all"
            ),
            Why::Method(method) => write!(
                f,
                "golato: {method} to {host} is refused: the network is read-only (--network-methods read)"
            ),
            Why::TlsName(named) => write!(
                f,
                "golato: the TLS name (SNI) {named} is not the tunnel's host {host}; refused"
            ),
            Why::TlsHello(why) => write!(
                f,
                "golato: the tunnel to {host} was closed: its TLS ClientHello could not be checked ({why}); a client sends one hello naming the host it connected to"
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// A host, or every host under a domain, and the port when one is named.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    host: String,
    /// `*.example.com`: the hosts under it (not example.com itself).
    under: bool,
    port: Option<u16>,
}

impl Pattern {
    fn parse(text: &str) -> Result<Pattern, PatternError> {
        let invalid = |why: &str| PatternError {
            pattern: text.to_owned(),
            why: why.to_owned(),
        };
        let trimmed = text.trim();
        // An IPv6 address: in brackets when a port follows.
        let (host, port) = match trimmed.strip_prefix('[') {
            Some(rest) => {
                let (address, after) = rest
                    .split_once(']')
                    .ok_or_else(|| invalid("no closing ]"))?;
                let port = match after.strip_prefix(':') {
                    Some(port) => Some(port),
                    None if after.is_empty() => None,
                    None => return Err(invalid("text after the ]")),
                };
                (address, port)
            }
            None if trimmed.matches(':').count() > 1 => (trimmed, None),
            None => match trimmed.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (trimmed, None),
            },
        };
        let port = port
            .map(|port| {
                port.parse::<u16>()
                    .map_err(|_| invalid("the port is not a number from 0 to 65535"))
            })
            .transpose()?;
        let (under, host) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        let host = normal(host).ok_or_else(|| {
            invalid("a host is letters, digits, '-' and '.' (an internationalised name in its xn-- form), or an address")
        })?;
        if host.contains('*') {
            return Err(invalid("'*' stands only first, as *.example.com"));
        }
        Ok(Pattern { host, under, port })
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|wanted| wanted != port) {
            return false;
        }
        match self.under {
            true => host
                .strip_suffix(self.host.as_str())
                .is_some_and(|before| before.ends_with('.') && before.len() > 1),
            false => host == self.host,
        }
    }
}

/// A host name or address as patterns compare it: lower case, no trailing dot; `None` when it
/// is neither a name nor an address.
fn normal(host: &str) -> Option<String> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() || host.len() > 253 {
        return None;
    }
    if host.parse::<IpAddr>().is_ok() {
        return Some(host);
    }
    let plain = host.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '*')
    });
    plain.then_some(host)
}

/// What a sandboxed command may reach: hosts allowed, hosts denied (deny wins), and which
/// methods plain HTTP may use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkPolicy {
    allow: Vec<Pattern>,
    deny: Vec<Pattern>,
    methods: Methods,
}

impl NetworkPolicy {
    /// The policy of `allow` and `deny` patterns (a host, `*.example.com`, `host:port`, an
    /// address, `[v6]:port`, or a preset `@crates`, `@npm`, `@pypi`, `@go`, `@github`).
    ///
    /// # Errors
    /// A pattern that is none, or an unknown preset, named.
    pub fn new(
        allow: &[&str],
        deny: &[&str],
        methods: Methods,
    ) -> Result<NetworkPolicy, PatternError> {
        Ok(NetworkPolicy {
            allow: patterns(allow)?,
            deny: patterns(deny)?,
            methods,
        })
    }

    /// Whether a request for `host` on `port` may go on, before anything is resolved.
    ///
    /// # Errors
    /// The [`Refusal`]: denied, or not allowed.
    pub fn judge_host(&self, host: &str, port: u16) -> Result<(), Refusal> {
        let refuse = |why| Refusal {
            host: host.to_owned(),
            why,
        };
        let Some(host) = normal(host) else {
            return Err(refuse(Why::NotAllowed));
        };
        if self.deny.iter().any(|pattern| pattern.matches(&host, port)) {
            return Err(refuse(Why::Denied));
        }
        match self
            .allow
            .iter()
            .any(|pattern| pattern.matches(&host, port))
        {
            true => Ok(()),
            false => Err(refuse(Why::NotAllowed)),
        }
    }

    /// Whether `host` may be reached at `address` on `port`, the address it resolved to
    /// (checked again for every address connected to, so that a name rebound to a local
    /// address is refused): never an address a deny pattern names; a local address only when
    /// an allow pattern names the host, or the address, exactly, and its port when it names one.
    ///
    /// # Errors
    /// The [`Refusal`] naming the address.
    pub fn judge_address(&self, host: &str, address: IpAddr, port: u16) -> Result<(), Refusal> {
        let names_address = |pattern: &Pattern| {
            pattern.port.is_none_or(|wanted| wanted == port)
                && pattern
                    .host
                    .parse::<IpAddr>()
                    .is_ok_and(|named| same(named, address))
        };
        if self.deny.iter().any(names_address) {
            return Err(Refusal {
                host: host.to_owned(),
                why: Why::DeniedAddress(address),
            });
        }
        if !is_local(address) {
            return Ok(());
        }
        let named = normal(host);
        let exactly = |pattern: &Pattern| {
            !pattern.under
                && pattern.port.is_none_or(|wanted| wanted == port)
                && (Some(&pattern.host) == named.as_ref() || names_address(pattern))
        };
        match self.allow.iter().any(exactly) {
            true => Ok(()),
            false => Err(Refusal {
                host: host.to_owned(),
                why: Why::LocalAddress(address),
            }),
        }
    }

    /// Whether plain HTTP is read-only here (`--network-methods read`): requests that send
    /// (a body, a method override) are refused whatever their method.
    pub fn read_only(&self) -> bool {
        self.methods == Methods::Read
    }

    /// Whether a plain HTTP request may use `method` (`read` mode allows GET, HEAD, OPTIONS).
    ///
    /// # Errors
    /// The [`Refusal`] naming the method.
    pub fn judge_method(&self, host: &str, method: &str) -> Result<(), Refusal> {
        let reading = matches!(method, "GET" | "HEAD" | "OPTIONS");
        match (self.methods, reading) {
            (Methods::All, _) | (Methods::Read, true) => Ok(()),
            (Methods::Read, false) => Err(Refusal {
                host: host.to_owned(),
                why: Why::Method(method.to_owned()),
            }),
        }
    }
}

fn patterns(texts: &[&str]) -> Result<Vec<Pattern>, PatternError> {
    let mut patterns = Vec::new();
    for text in texts {
        match text.trim().strip_prefix('@') {
            Some(name) => {
                let (_, hosts) = PRESETS
                    .iter()
                    .find(|(preset, _)| *preset == name)
                    .ok_or_else(|| PatternError {
                        pattern: (*text).to_owned(),
                        why: format!(
                            "no preset is named {name}; the presets are {}",
                            PRESETS
                                .iter()
                                .map(|(preset, _)| *preset)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    })?;
                // A preset names public registries, reached over https and http only.
                for host in *hosts {
                    for port in PRESET_PORTS {
                        patterns.push(Pattern::parse(&format!("{host}:{port}"))?);
                    }
                }
            }
            None => patterns.push(Pattern::parse(text)?),
        }
    }
    Ok(patterns)
}

/// Two addresses that are one (an IPv4 address and its IPv6-mapped form).
fn same(a: IpAddr, b: IpAddr) -> bool {
    canonical(a) == canonical(b)
}

fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether `address` is not on the public internet: loopback, private, link-local (the
/// cloud metadata address 169.254.169.254 among them), shared (100.64/10), unspecified,
/// broadcast, multicast, documentation and benchmark ranges, IPv6 unique-local and site-local.
pub fn is_local(address: IpAddr) -> bool {
    match canonical(address) {
        IpAddr::V4(v4) => is_local_v4(v4),
        IpAddr::V6(v6) => is_local_v6(v6),
    }
}

fn is_local_v4(v4: Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (b == 18 || b == 19))
        || (a == 192 && b == 0 && c == 0)
        || a >= 240
}

fn is_local_v6(v6: Ipv6Addr) -> bool {
    let first = v6.segments()[0];
    v6.is_loopback()
        || v6.is_unspecified()
        || v6.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        || first == 0x2001 && v6.segments()[1] == 0x0db8
        || v6
            .to_ipv4()
            .is_some_and(|v4| v6.segments()[..6] == [0; 6] && is_local_v4(v4))
}

#[cfg(test)]
mod tests;
