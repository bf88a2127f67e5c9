//! A real Restate server, `golato serve` workers and a TCP load balancer in front of them, for
//! the durable-run tests. The server binary comes from the npm package
//! `@restatedev/restate-server`, which `.ci/run` installs; its path is in
//! `GOLATO_RESTATE_SERVER`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A loopback port free right now, never handed out before by this process, and below the
/// kernel's ephemeral range (32768 and up here): a port from that range can be taken by any
/// outgoing connection between this check and the server's bind, which once left a cluster's
/// node unable to start.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let seed = std::process::id() as u64
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos() as u64)
            .unwrap_or(0);
    let mut state = seed | 1;
    for _ in 0..10_000 {
        // xorshift: good enough to spread ports over 20000..32000.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let port = 20_000 + (state % 12_000) as u16;
        if given.contains(&port) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!("no free loopback port in 20000..32000")
}

/// The server binary, or a panic saying how to get it.
pub fn server_binary() -> PathBuf {
    let path = std::env::var_os("GOLATO_RESTATE_SERVER")
        .map(PathBuf::from)
        .expect(
            "GOLATO_RESTATE_SERVER must name the restate-server binary (.ci/run installs \
         @restatedev/restate-server from npm and sets it)",
        );
    assert!(path.is_file(), "{} is not a file", path.display());
    path
}

/// A Restate server on loopback ports with its own data directory.
pub struct Server {
    child: Option<Child>,
    pub data: tempfile::TempDir,
    ports: [u16; 3],
    pub ingress: String,
    pub admin: String,
}

impl Server {
    pub fn start() -> Server {
        let ports = [free_port(), free_port(), free_port()];
        let mut server = Server {
            child: None,
            data: tempfile::tempdir().unwrap(),
            ports,
            ingress: format!("http://127.0.0.1:{}", ports[1]),
            admin: format!("http://127.0.0.1:{}", ports[2]),
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let [node, ingress, admin] = self.ports;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data.path().join("server.log"))
            .unwrap();
        let child = node_command(&self.data.path().join("data"), [node, ingress, admin], log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        self.wait_ready();
    }

    /// Waits until the admin API answers its health check (a readiness handshake).
    fn wait_ready(&self) {
        let health = format!("127.0.0.1:{}", self.ports[2]);
        for _ in 0..600 {
            if http_get_ok(&health, "/health") {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "the Restate server did not become ready; its log:\n{}",
            self.log()
        );
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data.path().join("server.log")).unwrap_or_default()
    }

    /// SIGKILLs the server and starts it again on the same ports and data.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(80).collect();
            eprintln!("--- the Restate server's log, last lines ---");
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

/// A Restate cluster of three nodes on loopback, each with every role (metadata server, admin,
/// worker, log server), data replicated on two of them: one node may die.
pub struct Cluster {
    nodes: Vec<Option<Child>>,
    pub data: tempfile::TempDir,
    /// Each node's ingress and admin URL.
    pub ingress: Vec<String>,
    pub admin: Vec<String>,
}

impl Cluster {
    /// Starts the cluster; a start that does not become ready is told with its nodes' logs and
    /// tried once more on new ports and a new data directory.
    pub fn start() -> Cluster {
        match Cluster::try_start() {
            Ok(cluster) => cluster,
            Err(logs) => {
                eprintln!(
                    "the cluster did not become ready; trying once more. Its nodes' logs:\n{logs}"
                );
                Cluster::try_start().unwrap_or_else(|logs| {
                    panic!("the cluster did not become ready twice; its nodes' logs:\n{logs}")
                })
            }
        }
    }

    fn try_start() -> Result<Cluster, String> {
        let data = tempfile::tempdir().unwrap();
        let node_ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let metadata: Vec<String> = node_ports
            .iter()
            .map(|port| format!("\"http://127.0.0.1:{port}\""))
            .collect();
        let metadata = format!("[{}]", metadata.join(","));
        let mut cluster = Cluster {
            nodes: Vec::new(),
            data,
            ingress: Vec::new(),
            admin: Vec::new(),
        };
        for (index, node) in node_ports.iter().enumerate() {
            let (ingress, admin) = (free_port(), free_port());
            let log =
                std::fs::File::create(cluster.data.path().join(format!("node{}.log", index + 1)))
                    .unwrap();
            let base = cluster.data.path().join(format!("node{}", index + 1));
            let child = node_command(&base, [*node, ingress, admin], log)
                .env("RESTATE_CLUSTER_NAME", "golato-test")
                .env("RESTATE_NODE_NAME", format!("n{}", index + 1))
                .env("RESTATE_FORCE_NODE_ID", (index + 1).to_string())
                .env("RESTATE_DEFAULT_REPLICATION", "2")
                .env("RESTATE_METADATA_CLIENT__ADDRESSES", &metadata)
                .env("RESTATE_AUTO_PROVISION", (index == 0).to_string())
                .spawn()
                .unwrap();
            cluster.nodes.push(Some(child));
            cluster.ingress.push(format!("http://127.0.0.1:{ingress}"));
            cluster.admin.push(format!("http://127.0.0.1:{admin}"));
        }
        // Ready: every node's admin and ingress answer their health checks.
        for (ingress, admin) in cluster.ingress.iter().zip(&cluster.admin) {
            let ready = (0..1200).any(|_| {
                let up = http_get_ok(admin.trim_start_matches("http://"), "/health")
                    && http_get_ok(ingress.trim_start_matches("http://"), "/restate/health");
                if !up {
                    std::thread::sleep(Duration::from_millis(100));
                }
                up
            });
            if !ready {
                let logs = cluster.logs();
                return Err(logs);
            }
        }
        Ok(cluster)
    }

    /// The last lines of each node's log.
    pub fn logs(&self) -> String {
        let mut told = String::new();
        for index in 1..=self.nodes.len() {
            let log = std::fs::read_to_string(self.data.path().join(format!("node{index}.log")))
                .unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            told.push_str(&format!("--- node {index} ---\n"));
            for line in tail.iter().rev() {
                told.push_str(line);
                told.push('\n');
            }
        }
        told
    }

    /// SIGKILLs node `index` (0-based).
    pub fn kill(&mut self, index: usize) {
        if let Some(mut child) = self.nodes[index].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for index in 0..self.nodes.len() {
            self.kill(index);
        }
        if std::thread::panicking() {
            eprintln!("the cluster's nodes' logs:\n{}", self.logs());
        }
    }
}

/// A Restate node on loopback: its data in `base`, its node-to-node, ingress and admin ports,
/// its log in `log`.
fn node_command(base: &Path, [node, ingress, admin]: [u16; 3], log: std::fs::File) -> Command {
    let mut command = Command::new(server_binary());
    command
        .arg("--no-logo")
        .env("RESTATE_BASE_DIR", base)
        .env("RESTATE_LISTEN_MODE", "tcp")
        .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{node}"))
        .env(
            "RESTATE_ADVERTISED_ADDRESS",
            format!("http://127.0.0.1:{node}"),
        )
        .env(
            "RESTATE_INGRESS__BIND_ADDRESS",
            format!("127.0.0.1:{ingress}"),
        )
        .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
        .env(
            "RESTATE_ADMIN__QUERY_ENGINE__PGSQL_BIND_ADDRESS",
            format!("127.0.0.1:{}", free_port()),
        )
        .env("RESTATE_DISABLE_TELEMETRY", "true")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    command
}

/// A minimal HTTP/1.1 GET: whether it answered 200.
fn http_get_ok(address: &str, path: &str) -> bool {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = std::net::TcpStream::connect(address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

/// The `golato` binary: the one cargo built for these tests, else `GOLATO_BIN`, else the
/// release build (`cargo build --release`).
pub fn golato_binary() -> PathBuf {
    if let Some(built) = option_env!("CARGO_BIN_EXE_golato") {
        return PathBuf::from(built);
    }
    let path = std::env::var_os("GOLATO_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/release/golato"));
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build --release` (or set GOLATO_BIN)",
        path.display()
    );
    path
}

/// The variable that marks a worker's processes (their commands inherit it).
const WORKER_VARIABLE: &str = "GOLATO_TEST_WORKER";

/// A `golato serve` process.
pub struct Worker {
    pub child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Worker {
    /// Starts `golato serve` on a free port with `arguments` (agent flags), logging to a file
    /// in `dir`, its user configuration `dir/worker.toml` (none when absent); waits until it
    /// listens.
    pub fn start(dir: &Path, name: &str, arguments: &[&str]) -> Worker {
        Worker::start_on(dir, name, free_port(), arguments)
    }

    /// [`Worker::start`] on `port`: a worker started again where a killed one listened (the
    /// same deployment to Restate).
    pub fn start_on(dir: &Path, name: &str, port: u16, arguments: &[&str]) -> Worker {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        #[allow(clippy::zombie_processes)] // waited for by `Worker::drop`, or below on failure
        let mut child = Command::new(golato_binary())
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            // The tests tell workers apart by the PID of the parent of bash's guard, which a
            // sandboxed command (in a PID namespace of its own) cannot see; the sandbox has
            // tests of its own.
            .args(["--sandbox", "off"])
            .args(arguments)
            .env("RUST_LOG", "golato=info")
            .env(WORKER_VARIABLE, &log)
            // The worker's own configuration (`[durable] safe`), when the test writes one.
            .env("GOLATO_CONFIG", dir.join("worker.toml"))
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        // Listening, and registered when asked to register.
        let ready = if arguments.contains(&"--restate-admin") {
            "registered"
        } else {
            "serving durable runs"
        };
        for _ in 0..600 {
            if std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains(ready)
            {
                return Worker { child, port, log };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "golato serve did not start: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The environment entry every process this worker starts inherits.
    pub fn marker(&self) -> String {
        format!("{WORKER_VARIABLE}={}", self.log.display())
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A TCP load balancer: each new connection goes to the next backend that accepts it (round
/// robin), as an L4 balancer in front of a deployment's replicas does. Runs on its own thread
/// until the process ends.
pub fn balancer(backends: Vec<u16>) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let backends = Arc::new(Mutex::new(backends));
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let next = Arc::new(AtomicUsize::new(0));
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                let backends = Arc::clone(&backends);
                let next = Arc::clone(&next);
                tokio::spawn(async move {
                    let ports = backends.lock().unwrap().clone();
                    for _ in 0..ports.len() {
                        let port = ports[next.fetch_add(1, Ordering::SeqCst) % ports.len()];
                        if let Ok(mut outbound) =
                            tokio::net::TcpStream::connect(("127.0.0.1", port)).await
                        {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
    });
    address
}
