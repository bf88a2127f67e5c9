//! The `golato` command line; see the `golato_cli` library for what it does.

// The allocator is the application's to choose, and golato's own binary chose by measurement
// (BENCHMARKS.md, "The allocator").
#[cfg(not(any(feature = "alloc-glibc", feature = "alloc-mimalloc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(all(feature = "alloc-mimalloc", not(feature = "alloc-glibc")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    golato_cli::main()
}
