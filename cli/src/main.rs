//! The `golato` command line; see the `golato_cli` library for what it does.

// glibc's allocator, chosen by measurement (BENCHMARKS.md, "The allocator"); these builds
// exist to measure against it.
#[cfg(feature = "alloc-jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(all(feature = "alloc-mimalloc", not(feature = "alloc-jemalloc")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    golato_cli::main()
}
