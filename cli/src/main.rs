//! The `golato` command line; see the `golato_cli` library for what it does.

fn main() -> std::process::ExitCode {
    golato_cli::main()
}
