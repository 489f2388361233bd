//! Step boundaries: a step's number and start, its end (completed, failed or paused),
//! and what happens between steps: `stop_when`, the time bound, the checkpoint, a reload.

use crate::engine::ErrorCode;
use crate::engine::Limit;
use crate::engine::agent::{Agent, Halt, HaltReason, RunContext};
use crate::engine::budget::LimitHit;
use crate::engine::checkpointing::Durability;
use crate::engine::clock::new_id;
pub use crate::engine::events::StepEnd;
use crate::engine::events::{
    CheckpointSaved, Notice, ReloadFailed, Reloaded, StepCompleted, StepCreated, StepDetails,
};
use crate::engine::pending::Pending;
use crate::engine::state::AgentState;

/// Starts the run's next step: gives it the next number (unique in the run, parallel plan
/// branches included), emits its start, and returns the state at that step and its id.
pub fn start_step(ctx: &RunContext, state: AgentState, title: &str) -> (AgentState, String) {
    let step_id = new_id();
    let state = state.with_step(ctx.next_step_number());
    ctx.emitter.emit(StepCreated {
        step_id: step_id.clone(),
        details: StepDetails {
            step: state.step,
            title: title.to_string(),
        },
    });
    (state, step_id)
}

/// Emits the end of a step, which closes its transcript block.
pub fn end_step(ctx: &RunContext, state: &AgentState, step_id: &str, title: &str, end: StepEnd) {
    ctx.emitter.emit(StepCompleted {
        step_id: step_id.to_string(),
        details: StepDetails {
            step: state.step,
            title: title.to_string(),
        },
        status: end,
    });
}

/// Ends the step that a halt stopped (paused for a question, failed otherwise) and passes
/// the halt on.
pub fn fail_step(ctx: &RunContext, halt: Halt, step_id: &str, title: &str) -> Halt {
    let end = match halt.reason {
        HaltReason::InputRequired(_) => StepEnd::Paused,
        _ => StepEnd::Failed,
    };
    end_step(ctx, &halt.state, step_id, title, end);
    halt
}

/// What follows a step that did not halt the run.
pub enum AfterStep {
    /// The next step, from this state.
    Next(AgentState),
    /// A new definition of the root agent was saved (`exec --watch`): it takes over from
    /// this state (the strategy ends with
    /// [`StrategyEnd::Reloaded`](crate::engine::agent::StrategyEnd::Reloaded)).
    Reload(Box<Agent>, AgentState),
}

/// After a step: `stop_when`, then the time bound, the checkpoint, and a reload.
pub fn after_step(agent: &Agent, state: AgentState, ctx: &RunContext) -> Result<AfterStep, Halt> {
    if let Some(stop_when) = &agent.stop_when {
        let totals = ctx.budget.totals();
        match stop_when.check(&state, &totals, ctx.budget.elapsed().as_millis() as u64) {
            Ok(true) => {
                let hit = LimitHit::new(
                    Limit::StopWhen,
                    format!("`{}` became true", stop_when.source()),
                );
                return Err(Halt::new(state, HaltReason::Limit(hit)));
            }
            Ok(false) => {}
            Err(message) => return Err(Halt::failed(state, ErrorCode::StopWhen, message)),
        }
    }
    if let Err(hit) = ctx.budget.check_time() {
        return Err(Halt::new(state, HaltReason::Limit(hit)));
    }
    let state = save_checkpoint(ctx, state, SavePoint::StepEnd)?;
    if let Some(reload) = &ctx.reload
        && ctx.emitter.depth == 0
    {
        match reload.poll() {
            Some(Ok((next, changes))) => {
                ctx.emitter.emit(Reloaded {
                    changes,
                    step: state.step,
                });
                return Ok(AfterStep::Reload(Box::new(next), state));
            }
            Some(Err(diagnostics)) => {
                ctx.emitter
                    .notify(Notice::ReloadRefused(diagnostics.clone()));
                ctx.emitter.emit(ReloadFailed { diagnostics });
            }
            None => {}
        }
    }
    Ok(AfterStep::Next(state))
}

/// Where in a step a checkpoint is taken.
#[derive(Debug, Clone, Copy)]
pub enum SavePoint<'a> {
    /// A step has ended: announced (`agent.checkpoint.saved`), and on disk by the next
    /// `BeforeCalls` save, since nothing irreversible happens before it.
    StepEnd,
    /// A turn's calls are about to run: on disk before they start, unless running every
    /// one of them again does no harm (`rerun_harmless`: idempotent tools), when a power cut
    /// that lost the record would only have the model ask for them again.
    BeforeCalls {
        pending: &'a Pending,
        rerun_harmless: bool,
    },
}

/// Saves the state, with what the tree has spent, when the run keeps checkpoints. A save
/// that fails ends the run (`checkpoint_write`): going on would leave the session at an
/// older state, from which a resume would run finished calls again. What is on disk then is
/// the state before the step's calls, with the calls marked in flight, so a resume says
/// what is uncertain.
pub fn save_checkpoint(
    ctx: &RunContext,
    state: AgentState,
    point: SavePoint<'_>,
) -> Result<AgentState, Halt> {
    let Some(store) = &ctx.checkpoints else {
        return Ok(state);
    };
    let state = state.with_spent(ctx.budget.tree_totals());
    let (pending, durability) = match point {
        SavePoint::StepEnd => (None, Durability::WithNext),
        SavePoint::BeforeCalls {
            pending,
            rerun_harmless,
        } => {
            let durability = match rerun_harmless {
                true => Durability::WithNext,
                false => Durability::Now,
            };
            (Some(pending), durability)
        }
    };
    match store.save(&state, pending, durability) {
        Ok(name) => {
            if matches!(point, SavePoint::StepEnd) {
                let step = state.step;
                ctx.emitter.emit(CheckpointSaved { name, step });
            }
            Ok(state)
        }
        // The worker that carried the store died, or another process took the session
        // over: the run did not fail, it was cut off, and the session goes on elsewhere
        // (the job's next delivery resumes it).
        Err(message) if store.session_lost() => {
            ctx.warn(format!(
                "the checkpoint could not be saved ({message}); the run stops as interrupted, and a resume goes on from its last checkpoint"
            ));
            Err(Halt::new(state, HaltReason::Interrupted))
        }
        Err(message) => {
            let message = format!(
                "the checkpoint could not be saved ({message}); the run stops so that a resume never runs a finished call again"
            );
            Err(Halt::failed(state, ErrorCode::CheckpointWrite, message))
        }
    }
}
