//! `runner validate`'s checks of models: the `model` key of each agent (a reference, a
//! mapping, or a name the project file declares), its fallback chain, and the project file
//! (`runner.yaml`) itself, read once however many agent files name its models.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::super::diagnostic::{Code, Diagnostic};
use super::super::model::ModelRef;
use super::super::project::{
    FLAT_CHAIN_HINT, NameError, Project, find_project, load_project, names_in, one_model,
    resolve_name,
};
use super::super::yaml::pointer_push;
use super::{FileContext, Validator, canonical};

impl Validator {
    /// Checks a project file (`runner.yaml`, met in a directory or given by name), once.
    pub fn validate_project(&mut self, path: &Path) {
        let key = canonical(path);
        if self.projects.contains_key(&key) {
            return;
        }
        let project = match load_project(path) {
            Ok(project) => Some(Arc::new(project)),
            Err(problems) => {
                self.diagnostics.extend(problems);
                None
            }
        };
        self.projects.insert(key, project);
    }

    /// The project the names of the agent file at `path` were checked against, if the file
    /// names a model: what loading it resolves them through, without reading it again.
    pub fn project_used(&self, path: &Path) -> Option<Arc<Project>> {
        let found = find_project(path)?;
        self.projects.get(&canonical(&found)).cloned().flatten()
    }

    /// The project of the agent file at `path`, read once per validator; `None` when there
    /// is no project file or it is invalid (then its problems are among the diagnostics).
    fn project_for(&mut self, path: &Path) -> Option<Arc<Project>> {
        let found = find_project(path)?;
        self.validate_project(&found);
        self.projects.get(&canonical(&found)).cloned().flatten()
    }

    /// Every bare model name of the file resolves through its project file; the project
    /// file is read only when the file names a model.
    pub(super) fn check_model_names(&mut self, file: &FileContext<'_>) {
        let mut names = Vec::new();
        names_in(&file.doc.value, "", &mut names);
        if names.is_empty() {
            return;
        }
        let project = self.project_for(file.path);
        if project.is_none() && find_project(file.path).is_some() {
            return; // the project file's own problems are reported
        }
        for (pointer, name) in names {
            let resolved = resolve_name(&name, project.as_deref(), file.path);
            let is_fallback = pointer.rsplit('/').nth(1) == Some("fallback");
            let resolved = resolved.and_then(|model| match (is_fallback, model) {
                (true, ModelRef::Config(config)) => {
                    one_model(&name, &config).map_err(|message| NameError {
                        message,
                        hint: FLAT_CHAIN_HINT.into(),
                    })
                }
                _ => Ok(()),
            });
            if let Err(error) = resolved {
                self.diagnostics.push(
                    Diagnostic::error(
                        file.path,
                        file.doc.value_position(&pointer),
                        Code::Model,
                        &pointer,
                        error.message,
                    )
                    .with_hint(error.hint),
                );
            }
        }
    }

    pub(super) fn check_model(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        agent: &Map<String, Value>,
    ) {
        let model_at = pointer_push(at, "model");
        let has_pricing = match agent.get("model") {
            Some(Value::Object(model)) => {
                self.check_model_mapping(file, &model_at, model);
                let fallbacks = model.get("fallback").and_then(Value::as_array);
                for (index, fallback) in fallbacks.into_iter().flatten().enumerate() {
                    let fallback_at = format!("{model_at}/fallback/{index}");
                    if let Value::Object(fallback) = fallback {
                        self.check_model_mapping(file, &fallback_at, fallback);
                        self.check_no_chain_of_its_own(file, &fallback_at, fallback);
                    }
                }
                model.contains_key("pricing")
            }
            _ => false,
        };
        let cost_at = pointer_push(&pointer_push(at, "limits"), "max_cost_usd");
        let has_cost_limit = agent
            .get("limits")
            .and_then(|l| l.get("max_cost_usd"))
            .is_some();
        if has_cost_limit && !has_pricing && agent.get("model").is_some() {
            self.diagnostics.push(
                Diagnostic::warning(
                    file.path,
                    file.doc.key_position(&cost_at),
                    Code::NoEffect,
                    &cost_at,
                    "`max_cost_usd` needs `model.pricing`; without it cost is unknown and never counted".into(),
                )
                .with_hint("add `pricing: {input_per_mtok: ..., output_per_mtok: ...}` to the model mapping"),
            );
        }
    }

    /// A fallback is one model: its own fallbacks and cooldown would be a second chain the
    /// runner never walks.
    fn check_no_chain_of_its_own(
        &mut self,
        file: &FileContext<'_>,
        at: &str,
        model: &Map<String, Value>,
    ) {
        for key in ["fallback", "cooldown"] {
            if model.contains_key(key) {
                let pointer = pointer_push(at, key);
                self.diagnostics.push(
                    Diagnostic::error(
                        file.path,
                        file.doc.key_position(&pointer),
                        Code::Model,
                        &pointer,
                        format!("a fallback model has no `{key}` of its own"),
                    )
                    .with_hint(
                        "list every fallback, in order, in the first model's `fallback`, and set `cooldown` there",
                    ),
                );
            }
        }
    }

    /// The checks of one model mapping (the agent's, or one of its fallbacks).
    fn check_model_mapping(
        &mut self,
        file: &FileContext<'_>,
        model_at: &str,
        model: &Map<String, Value>,
    ) {
        let model_at = model_at.to_string();
        let provider = model.get("provider").and_then(Value::as_str);
        let has_script = model.contains_key("script");
        if provider == Some("scripted") && !has_script {
            self.diagnostics.push(
                Diagnostic::error(
                    file.path,
                    file.doc.key_position(&model_at),
                    Code::Model,
                    &model_at,
                    "`provider: scripted` needs a `script` of responses".into(),
                )
                .with_hint("add `script: [{text: ...}]`"),
            );
        }
        if has_script && provider.is_some_and(|p| p != "scripted") {
            let pointer = pointer_push(&model_at, "script");
            self.diagnostics.push(Diagnostic::error(
                file.path,
                file.doc.key_position(&pointer),
                Code::Model,
                &pointer,
                "`script` is only read by `provider: scripted`".into(),
            ));
        }
        if model.contains_key("api") && provider.is_some_and(|p| p != "openai") {
            let pointer = pointer_push(&model_at, "api");
            self.diagnostics.push(
                Diagnostic::error(
                    file.path,
                    file.doc.key_position(&pointer),
                    Code::Model,
                    &pointer,
                    "`api` is only read by `provider: openai`".into(),
                )
                .with_hint(
                    "remove `api`; `provider: openai_responses` is `provider: openai` with `api: responses`",
                ),
            );
        }
        if provider.is_some_and(|p| p != "scripted")
            && model
                .get("name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            self.diagnostics.push(Diagnostic::error(
                file.path,
                file.doc.key_position(&model_at),
                Code::Model,
                &model_at,
                "the model mapping has no `name`".into(),
            ));
        }
    }
}
