//! The `runner` binary: everything it does is the library's (`cli::binary::run`: the
//! process's setup, the panic report, then the command line).

/// mimalloc rather than the C library's allocator: a step makes and frees thousands of
/// small buffers (events, JSON lines, messages), and glibc's `malloc` and `free` were a
/// fifth of a step's instructions (`docs/benchmarks.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    runner::binary_main()
}
