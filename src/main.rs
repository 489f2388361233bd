//! The `runner` binary: everything it does is the library's (`cli::binary::run`: the
//! process's setup, the panic report, then the command line).

fn main() -> std::process::ExitCode {
    runner::binary_main()
}
