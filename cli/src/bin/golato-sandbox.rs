//! `golato-sandbox`: the sandbox's helper alone. golato starts it to confine a `bash` call
//! (see `golato::sandbox`); it is the `golato` binary's helper role without the rest, so it
//! starts in a fraction of the time (BENCHMARKS.md, "sandbox"). Run by hand, it says what it is.

fn main() {
    golato::sandbox::run_helper_if_asked();
    eprintln!(
        "golato-sandbox is the sandbox helper golato starts for each confined bash call; it takes no arguments of yours"
    );
    std::process::exit(2);
}
