//! `runner test`: agent tests that run in CI with no network.
//!
//! A test file (`agents/x.test.yaml`) names an agent and its cases; each case runs the
//! agent once (or `--repeat` times) in a fresh temporary workspace, as a `runner exec`
//! child process, with its model answered by a cassette, an inline script or the real
//! model, then checks what the run left behind (result, events, workspace) against the
//! case's assertions. `docs/testing-agents.md` is the user's guide.
//!
//! The parts, in the order a test run uses them: [`discover`] finds the files, [`load`]
//! reads and checks them against [`schema`] (the types of [`spec`]) and [`check`], [`suite`]
//! plans and runs the cases on a pool of workers, [`case`] runs one case (in a
//! [`workspace`], its set-up under [`setup_sandbox`], through [`child`]), [`assertions`] and [`judge`] check it, and
//! [`report`] prints the [`outcome`].

pub mod assertions;
mod case;
mod check;
mod child;
pub mod discover;
pub mod judge;
pub mod load;
pub mod outcome;
pub mod report;
pub mod schema;
mod setup_sandbox;
pub mod spec;
pub mod suite;
mod workspace;

pub use load::{LoadedFile, load_test_file};
pub use outcome::Totals;
pub use suite::{Mode, Settings, kept_cases, run_suite};
