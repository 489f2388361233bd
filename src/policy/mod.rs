//! Guardrails around tool execution, usable without YAML: which calls run (`permissions`,
//! deny → allow → ask → default), who approves the ones that ask ([`Approvals`]), which
//! programs see calls and results on the way ([`Hooks`]), and which secrets never leave a
//! result ([`Redactor`]). The engine consults a [`ToolPolicy`] for every call before it
//! runs and passes every result through it; `docs/permissions.md` and `docs/hooks.md` say
//! what an agent file can declare.

mod approval;
pub mod hooks;
mod permissions;
mod redact;

use std::sync::{Arc, OnceLock};

use serde_json::Value;

pub use crate::spec::pattern::Pattern;
pub use approval::{
    Approval, ApprovalRequest, ApprovalRules, Approvals, ApproveAll, Approver, Decider,
    TerminalApprover,
};
pub use hooks::{HookOutcome, HookPoint, Hooks};
pub use permissions::{Permissions, Verdict};
pub use redact::Redactor;

/// One agent's guardrails.
#[derive(Clone, Default)]
pub struct ToolPolicy {
    /// `None`: every call runs, and no decision is reported.
    pub permissions: Option<Permissions>,
    pub redactor: Redactor,
    /// Who settles the calls that ask (shared by every agent of a run).
    pub approvals: Arc<Approvals>,
    /// Programs run before and after calls, and at points of the run.
    pub hooks: Hooks,
}

/// What happens to one call, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `Ask` here means nobody could decide: the call waits for `runner resume`.
    pub verdict: Verdict,
    /// The rule that matched, or `default: VERDICT`.
    pub rule: String,
    pub by: Decider,
    /// Why a call was denied, for the model.
    pub reason: Option<String>,
}

impl ToolPolicy {
    /// No rules: every call runs; results still pass the built-in redaction.
    pub fn open() -> Arc<ToolPolicy> {
        static OPEN: OnceLock<Arc<ToolPolicy>> = OnceLock::new();
        OPEN.get_or_init(|| Arc::new(ToolPolicy::default())).clone()
    }

    /// This policy for an agent called by one governed by `caller`: what this one leaves
    /// out (`permissions`, tool hooks) is the caller's.
    pub fn inheriting(self: &Arc<Self>, caller: &ToolPolicy) -> Arc<ToolPolicy> {
        let keeps_rules = self.permissions.is_some();
        let keeps_hooks =
            !self.hooks.pre_tool_use.is_empty() || !self.hooks.post_tool_use.is_empty();
        let redactor = self.redactor.with_callers(&caller.redactor);
        let mut policy = (**self).clone();
        policy.redactor = redactor;
        if keeps_rules && keeps_hooks {
            return Arc::new(policy);
        }
        if !keeps_rules {
            policy.permissions = caller.permissions.clone();
        }
        if !keeps_hooks {
            policy.hooks.pre_tool_use = caller.hooks.pre_tool_use.clone();
            policy.hooks.post_tool_use = caller.hooks.post_tool_use.clone();
            policy.hooks.runner = caller.hooks.runner.clone();
        }
        Arc::new(policy)
    }

    /// What the rules say about a call; `arguments` are normalised for matching (a path
    /// as the workspace resolves it). `None` without rules.
    pub fn rule(&self, tool: &str, arguments: &Value) -> Option<Decision> {
        let ruling = self.permissions.as_ref()?.decide(tool, arguments);
        let rule = ruling.source();
        let reason = (ruling.verdict == Verdict::Deny)
            .then(|| format!("denied by the agent's permissions (`{rule}`)"));
        Some(Decision {
            verdict: ruling.verdict,
            rule,
            by: Decider::Rule,
            reason,
        })
    }

    /// Settles a call the rules sent to `ask`, if anyone can: approved, or denied with a
    /// reason. `None`: nobody could decide, the call waits (`verdict: ask`).
    pub fn approve(&self, request: &ApprovalRequest<'_>) -> Decision {
        let decided = |verdict, by, reason| Decision {
            verdict,
            rule: request.rule.to_string(),
            by,
            reason,
        };
        match self.approvals.decide(request) {
            None => decided(Verdict::Ask, Decider::Rule, None),
            Some(Approval {
                denied: None, by, ..
            }) => decided(Verdict::Allow, by, None),
            Some(Approval {
                denied: Some(reason),
                by,
                ..
            }) => decided(Verdict::Deny, by, Some(reason)),
        }
    }
}
