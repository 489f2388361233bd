//! The `runner` binary: parse the command line and hand over to `runner::cli`.

fn main() -> std::process::ExitCode {
    runner::cli::main()
}
