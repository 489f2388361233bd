//! Where a run's model answers and a person's input come from: the cassette to record or
//! replay, the answers file, `--yes`, the terminal.

use std::path::Path;
use std::sync::Arc;

use super::RunSettings;
use crate::compile::{BuildOptions, HumanInput};
use crate::policy::{ApprovalRules, Approvals, ApproveAll, Approver, TerminalApprover};
use crate::tools::{AnswerSource, AnswersFile, Terminal};

/// Recording or replaying, as asked.
pub fn build_options(settings: &RunSettings) -> Result<BuildOptions, String> {
    let mut build = BuildOptions::default();
    if let Some(path) = &settings.record {
        build.models.record =
            Some(crate::provider::CassetteRecorder::create(path).map_err(|e| e.to_string())?);
    }
    if let Some(path) = &settings.replay {
        build.models.replay =
            Some(crate::provider::ReplayStore::load(path).map_err(|e| e.to_string())?);
        build.mcp_replay = Some(crate::mcp::McpReplay::load(path)?);
        build.a2a_replay = Some(crate::a2a_client::cassette::A2aReplay::load(path)?);
    }
    Ok(build)
}

/// Where a person's input comes from. `ask_user` answers: the terminal when there is one
/// (and the settings allow it), then the answers file. Approvals: the answers file's
/// `approvals`, then `approve_all`, then the terminal.
pub fn human_input(settings: &RunSettings) -> Result<HumanInput, String> {
    let mut answers: Vec<Arc<dyn AnswerSource>> = Vec::new();
    let mut approvers: Vec<Arc<dyn Approver>> = Vec::new();
    let terminal = settings.terminal && Terminal::available();
    if terminal {
        answers.push(Arc::new(Terminal));
    }
    if let Some(path) = &settings.answers {
        let (file, approvals) = read_answers(path)?;
        answers.push(Arc::new(file));
        approvers.extend(approvals.map(|a| Arc::new(a) as Arc<dyn Approver>));
    }
    if settings.approve_all {
        approvers.push(Arc::new(ApproveAll));
    }
    if terminal {
        approvers.push(Arc::new(TerminalApprover::default()));
    }
    Ok(HumanInput {
        answers,
        approvals: Arc::new(Approvals::new(approvers)),
    })
}

/// The answers file, and its `approvals` when it has them.
fn read_answers(path: &Path) -> Result<(AnswersFile, Option<ApprovalRules>), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read --answers {}: {e}", path.display()))?;
    let document = crate::spec::yaml::load_yaml(&text).map_err(|errors| {
        let first = &errors[0];
        format!(
            "{}:{}:{}: {}",
            path.display(),
            first.position.line,
            first.position.column,
            first.message
        )
    })?;
    let mut value = document.value;
    let approvals = match value
        .as_object_mut()
        .and_then(|map| map.remove("approvals"))
    {
        Some(approvals) => Some(
            ApprovalRules::from_value(&approvals)
                .map_err(|e| format!("--answers {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let answers =
        AnswersFile::from_value(value).map_err(|e| format!("--answers {}: {e}", path.display()))?;
    Ok((answers, approvals))
}
