//! Exit codes (SPEC §3.1): the contract CI pipelines rely on.

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the agent finished, or the files are valid.
    Completed,
    /// 1: provider error after retries, structured output never valid, internal error (a
    /// panic, which prints `error[internal]` instead of ending the process with 101).
    Failed,
    /// 2: bad command line, invalid agent file, missing API key.
    Invalid,
    /// 3: an execution or limits bound, or stop_when, ended the run.
    LimitReached,
    /// 4: the agent asked the user and no answer was available.
    InputRequired,
    /// 130: SIGINT/SIGTERM.
    Interrupted,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Completed => 0,
            Exit::Failed => 1,
            Exit::Invalid => 2,
            Exit::LimitReached => 3,
            Exit::InputRequired => 4,
            Exit::Interrupted => 130,
        }
    }
}

impl From<crate::output::result::Status> for Exit {
    fn from(status: crate::output::result::Status) -> Self {
        use crate::output::result::Status;
        match status {
            Status::Completed => Exit::Completed,
            Status::Failed => Exit::Failed,
            Status::Invalid => Exit::Invalid,
            Status::LimitReached => Exit::LimitReached,
            Status::InputRequired => Exit::InputRequired,
            Status::Interrupted => Exit::Interrupted,
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}
