//! How `exec` and `resume` show a run's end: the hint to go on, the result on stdout, the
//! exit code; a run that never started reports its problem the same way.

use std::path::Path;

use super::Exit;
use super::job_summary;
use super::run_options::RunOptions;
use crate::output::job_summary::run_summary;
use crate::output::result::{RunResult, Status};
use crate::session::{Ended, Stop};

/// Shows how the run ended and returns the exit code.
pub fn show(ended: Result<Ended, Stop>, options: &RunOptions, ids: (&str, &str)) -> Exit {
    match ended {
        Ok(ended) => {
            if ended.resumable
                && let Some(hint) = how_to_continue(&ended.result, &ended.agent_file)
            {
                eprintln!("{hint}");
            }
            options.print_result(&ended.result);
            ended.result.status
        }
        Err(stop) => report(&stop, options, ids),
    }
}

/// Reports a command that stopped before its run: the problem on stderr, the envelope on
/// stdout when asked, and the exit code of its status.
pub fn report(stop: &Stop, options: &RunOptions, ids: (&str, &str)) -> Exit {
    stop.print();
    let result = RunResult::not_started(
        stop.status,
        &stop.agent,
        ids,
        stop.code,
        stop.message.clone(),
    );
    options.print_result(&result);
    job_summary::write(|| run_summary(&result, None), options.summary.as_deref());
    stop.status
}

/// What to do to go on after an interrupt or a limit: the command, and the key to raise.
/// A raised `limits.` key widens the definition the session started with, which a resume
/// accepts only with `--allow-widening`; the `execution.` bounds are not such limits.
fn how_to_continue(result: &RunResult, agent_file: &Path) -> Option<String> {
    let resume = format!("runner resume {}", result.session_id);
    match result.status {
        Status::Interrupted => Some(format!("to continue: {resume}")),
        Status::LimitReached => Some(
            match result
                .limit
                .and_then(|limit| Some((limit.yaml_key()?, limit)))
            {
                Some((key, limit)) => {
                    let widening = match limit.widens() {
                        true => " --allow-widening",
                        false => "",
                    };
                    format!(
                        "to continue: raise `{key}` in {}, then {resume}{widening}",
                        agent_file.display()
                    )
                }
                None => format!("to continue: {resume}"),
            },
        ),
        _ => None,
    }
}
