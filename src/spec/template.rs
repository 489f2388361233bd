//! Templates (minijinja): rendering with strict undefined, confined includes, and the
//! static analysis `runner validate` does before any model is called.
//!
//! A template sees only what the agent file declares: its inputs, the env vars listed under
//! `env:`, and the built-ins. Includes resolve relative to the agent file and cannot leave
//! its directory tree, so a template cannot read arbitrary files either.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use serde_json::Value;

use super::diagnostic::{Code, did_you_mean};

/// Variables every template may read.
pub const BUILTIN_VARIABLES: &[&str] = &["agent", "now", "input", "run"];

/// minijinja's global functions, which look like variables to the analysis.
const TEMPLATE_GLOBALS: &[&str] = &[
    "range",
    "dict",
    "namespace",
    "debug",
    "loop",
    "self",
    "super",
    "caller",
    "varargs",
    "kwargs",
];

/// Nested includes deeper than this are refused (and stop include cycles).
const MAX_INCLUDE_DEPTH: usize = 16;

/// What a template may read.
#[derive(Debug, Clone)]
pub struct TemplateScope {
    /// Names the template may read besides `env` and the built-ins.
    pub variables: BTreeSet<String>,
    /// Names listed under `env:`.
    pub env: BTreeSet<String>,
    /// What to tell the user when a variable is missing.
    pub declare_hint: &'static str,
}

/// A problem in a template. `offset` is a byte offset into the template text, or into the
/// included file named by `include`.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateIssue {
    pub code: Code,
    pub message: String,
    pub hint: Option<String>,
    pub offset: usize,
    pub include: Option<IncludedFile>,
}

/// An included file a problem was found in, with the problem's position in it.
#[derive(Debug, Clone, PartialEq)]
pub struct IncludedFile {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
}

/// A minijinja environment configured the way `runner` renders: an undefined value fails
/// when printed or iterated but is false in `{% if %}` (so an optional input or parameter
/// left out can be tested without `is defined`; `validate` catches misspelled names), trailing
/// newlines kept, includes confined to `base_dir`.
pub fn environment(base_dir: &Path) -> Environment<'static> {
    environment_from(base_dir, Arc::new(Disk))
}

/// Where the text of an included file comes from: the disk (`runner validate`), or the
/// templates a run read when it started ([`crate::spec::tree::AgentTree`]).
pub trait IncludeSource: Send + Sync {
    /// The text at `path` (already confined to the agent file's directory); `None` when
    /// there is no such file.
    fn read(&self, path: &Path) -> Result<Option<String>, String>;
}

/// Includes read from the disk as they are rendered.
struct Disk;

impl IncludeSource for Disk {
    fn read(&self, path: &Path) -> Result<Option<String>, String> {
        match super::read::read_text_bounded(path) {
            Ok(text) => Ok(Some(text)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// [`environment`] with includes taken from `source`.
pub fn environment_from(base_dir: &Path, source: Arc<dyn IncludeSource>) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.set_fuel(Some(MAX_RENDER_FUEL));
    env.add_test("divisibleby", divisible_by);
    if let Ok(syntax) = SyntaxConfig::builder().keep_trailing_newline(true).build() {
        env.set_syntax(syntax);
    }
    let base = base_dir.to_path_buf();
    env.set_loader(move |name| {
        let path = resolve_include(&base, name)
            .map_err(|message| minijinja::Error::new(ErrorKind::TemplateNotFound, message))?;
        // Not `TemplateNotFound`: `include` would replace the reason with "non-existing".
        source.read(&path).map_err(|error| {
            minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!("cannot read include `{name}`: {error}"),
            )
        })
    });
    env
}

/// minijinja's `divisibleby`, with division by zero an error (minijinja's own panics).
fn divisible_by(
    value: &minijinja::Value,
    divisor: &minijinja::Value,
) -> Result<bool, minijinja::Error> {
    if divisor.is_number() && f64::try_from(divisor.clone()).is_ok_and(|d| d == 0.0) {
        return Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            "divisibleby(0): cannot divide by zero",
        ));
    }
    Ok(minijinja::tests::is_divisibleby(value, divisor))
}

/// Resolves an include name inside `base_dir`, refusing anything that leaves it (`..`,
/// absolute paths, symlinks pointing out).
pub fn resolve_include(base_dir: &Path, name: &str) -> Result<PathBuf, String> {
    let relative = Path::new(name);
    if relative.is_absolute()
        || relative.components().any(|part| {
            matches!(
                part,
                Component::ParentDir | Component::Prefix(_) | Component::RootDir
            )
        })
    {
        return Err(format!(
            "include `{name}` leaves the agent file's directory; includes must stay inside it"
        ));
    }
    let joined = base_dir.join(relative);
    // Symlinks are checked on the resolved path; a missing file is reported by the caller.
    if let (Ok(real), Ok(real_base)) = (joined.canonicalize(), base_dir.canonicalize())
        && !real.starts_with(&real_base)
    {
        return Err(format!(
            "include `{name}` resolves outside the agent file's directory (through a symlink)"
        ));
    }
    Ok(joined)
}

/// The instructions one render may run (minijinja's fuel): loops that would never end in
/// practice stop here. Checked at render time; `runner validate` has no inputs to run with.
pub const MAX_RENDER_FUEL: u64 = 5_000_000;

/// The most text one render may produce.
pub const MAX_RENDER_BYTES: usize = 4 * 1024 * 1024;

/// Renders `source` with `context`, within `MAX_RENDER_FUEL` and `MAX_RENDER_BYTES`. A panic
/// inside the template engine is an error like any other, not a crash.
pub fn render(
    env: &Environment<'_>,
    name: &str,
    source: &str,
    context: &Value,
) -> Result<String, minijinja::Error> {
    let template = env.template_from_named_str(name, source)?;
    let mut output = BoundedOutput::default();
    let rendered =
        catch_panic(|| template.render_captured_to(minijinja::value::Serde(context), &mut output));
    match rendered {
        Ok(Ok(_)) => Ok(String::from_utf8_lossy(&output.bytes).into_owned()),
        Ok(Err(error)) if output.overflowed => Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "the template renders more than {} MiB of text",
                MAX_RENDER_BYTES / (1024 * 1024)
            ),
        )
        .with_source(error)),
        Ok(Err(error)) if error.kind() == ErrorKind::OutOfFuel => Err(minijinja::Error::new(
            ErrorKind::OutOfFuel,
            format!(
                "the template runs more than {MAX_RENDER_FUEL} instructions (a loop too long?)"
            ),
        )),
        Ok(Err(error)) => Err(error),
        Err(panic) => Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("the template engine failed: {panic}"),
        )),
    }
}

/// Render output that refuses to grow past `MAX_RENDER_BYTES`.
#[derive(Default)]
struct BoundedOutput {
    bytes: Vec<u8>,
    overflowed: bool,
}

impl std::io::Write for BoundedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > MAX_RENDER_BYTES {
            self.overflowed = true;
            return Err(std::io::Error::other("template output too large"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

thread_local! {
    /// Set while `catch_panic` runs on this thread, so the process's panic hook stays quiet
    /// about a panic that is about to become an error.
    static CATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a panic on this thread now will be caught and reported as an error.
pub fn panic_is_caught() -> bool {
    CATCHING.with(std::cell::Cell::get)
}

/// Runs `work`, turning a panic into its message.
fn catch_panic<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    let was = CATCHING.with(|flag| flag.replace(true));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
    CATCHING.with(|flag| flag.set(was));
    outcome.map_err(|payload| panic_message(payload.as_ref()))
}

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Every problem of a template: syntax, undeclared variables, includes.
pub fn check_template(source: &str, base_dir: &Path, scope: &TemplateScope) -> Vec<TemplateIssue> {
    let env = environment(base_dir);
    let mut issues = Vec::new();
    let mut visited = BTreeSet::new();
    check_source(&env, source, base_dir, scope, 0, &mut visited, &mut issues);
    issues
}

/// The variable roots a template reads (with its includes), for the unused-input warning.
pub fn used_variables(source: &str, base_dir: &Path) -> BTreeSet<String> {
    let env = environment(base_dir);
    let mut used = BTreeSet::new();
    let mut pending = vec![(source.to_string(), 0usize)];
    let mut seen = BTreeSet::new();
    while let Some((text, depth)) = pending.pop() {
        if let Ok(template) = env.template_from_named_str("template", &text) {
            for name in template.undeclared_variables(false) {
                used.insert(name);
            }
        }
        if depth >= MAX_INCLUDE_DEPTH {
            continue;
        }
        for reference in find_includes(&text) {
            if let Ok(path) = resolve_include(base_dir, &reference.name)
                && seen.insert(path.clone())
                && let Ok(included) = super::read::read_text_bounded(&path)
            {
                pending.push((included, depth + 1));
            }
        }
    }
    used
}

fn check_source(
    env: &Environment<'_>,
    source: &str,
    base_dir: &Path,
    scope: &TemplateScope,
    depth: usize,
    visited: &mut BTreeSet<PathBuf>,
    issues: &mut Vec<TemplateIssue>,
) {
    let template = match env.template_from_named_str("template", source) {
        Ok(template) => template,
        Err(error) => {
            let offset = error
                .range()
                .map(|range| range.start)
                .or_else(|| error.line().map(|line| line_offset(source, line)))
                .unwrap_or(0);
            issues.push(TemplateIssue {
                code: Code::Template,
                message: format!(
                    "template does not compile: {}",
                    error.detail().unwrap_or("syntax error")
                ),
                hint: None,
                offset,
                include: None,
            });
            return;
        }
    };
    let mut names: Vec<String> = template.undeclared_variables(true).into_iter().collect();
    names.sort();
    for name in names {
        let root = name.split('.').next().unwrap_or(&name).to_string();
        if root == "env" {
            if let Some(var) = name.strip_prefix("env.")
                && !scope.env.contains(var)
            {
                issues.push(TemplateIssue {
                    code: Code::UndeclaredVariable,
                    message: format!("`env.{var}` is not listed under `env:`"),
                    hint: Some(format!(
                        "add `{var}` to the agent's `env:` list; templates can read only the env vars listed there"
                    )),
                    offset: find_word(source, var).unwrap_or(0),
                    include: None,
                });
            }
            continue;
        }
        if scope.variables.contains(&root)
            || BUILTIN_VARIABLES.contains(&root.as_str())
            || TEMPLATE_GLOBALS.contains(&root.as_str())
        {
            continue;
        }
        let candidates = scope
            .variables
            .iter()
            .map(String::as_str)
            .chain(BUILTIN_VARIABLES.iter().copied())
            .chain(["env"]);
        let hint = match did_you_mean(&root, candidates) {
            Some(close) => format!("did you mean `{close}`? otherwise {}", scope.declare_hint),
            None => scope.declare_hint.to_string(),
        };
        issues.push(TemplateIssue {
            code: Code::UndeclaredVariable,
            message: format!("template variable `{root}` is not declared"),
            hint: Some(hint),
            offset: find_word(source, &root).unwrap_or(0),
            include: None,
        });
    }
    for reference in find_includes(source) {
        let path = match resolve_include(base_dir, &reference.name) {
            Ok(path) => path,
            Err(message) => {
                issues.push(TemplateIssue {
                    code: Code::IncludeEscape,
                    message,
                    hint: Some("move the file under the agent file's directory".into()),
                    offset: reference.offset,
                    include: None,
                });
                continue;
            }
        };
        let included = match super::read::read_text_bounded(&path) {
            Ok(text) => text,
            Err(error) => {
                issues.push(TemplateIssue {
                    code: Code::MissingFile,
                    message: format!("included file `{}` cannot be read: {error}", reference.name),
                    hint: Some(format!(
                        "includes resolve relative to {}",
                        base_dir.display()
                    )),
                    offset: reference.offset,
                    include: None,
                });
                continue;
            }
        };
        if depth >= MAX_INCLUDE_DEPTH || !visited.insert(path.clone()) {
            continue;
        }
        let mut inner = Vec::new();
        check_source(
            env,
            &included,
            base_dir,
            scope,
            depth + 1,
            visited,
            &mut inner,
        );
        for mut issue in inner {
            if issue.include.is_none() {
                let (line, column) = line_column(&included, issue.offset);
                issue.include = Some(IncludedFile {
                    path: path.clone(),
                    line,
                    column,
                });
            }
            issues.push(issue);
        }
    }
}

/// A `{% include "name" %}` (or import/extends/from) with a literal name.
struct IncludeReference {
    name: String,
    offset: usize,
}

/// Finds literal template references; dynamic names cannot be checked statically and are
/// left to the confined loader at render time.
fn find_includes(source: &str) -> Vec<IncludeReference> {
    let mut found = Vec::new();
    let mut rest = 0;
    while let Some(start) = source[rest..].find("{%") {
        let tag_start = rest + start + 2;
        let tag_end = source[tag_start..]
            .find("%}")
            .map_or(source.len(), |end| tag_start + end);
        let body = &source[tag_start..tag_end];
        let trimmed = body.trim_start_matches(['-', '+', '~']).trim_start();
        let keyword_len = trimmed
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(trimmed.len());
        if matches!(
            &trimmed[..keyword_len],
            "include" | "import" | "extends" | "from"
        ) {
            let after = trimmed[keyword_len..].trim_start();
            if let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'')
                && let Some(close) = after[1..].find(quote)
            {
                let name = &after[1..1 + close];
                let offset = tag_start + (body.len() - after.len()) + 1;
                found.push(IncludeReference {
                    name: name.to_string(),
                    offset,
                });
            }
        }
        rest = tag_end;
    }
    found
}

/// The byte offset of the first whole-word occurrence of `word` inside a tag of `source`.
fn find_word(source: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(found) = source[from..].find(word) {
        let at = from + found;
        let before = source[..at].chars().next_back();
        let after = source[at + word.len()..].chars().next();
        if !before.is_some_and(is_ident) && !after.is_some_and(is_ident) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

fn line_offset(source: &str, line: usize) -> usize {
    source
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum()
}

/// 1-based line and column of a byte offset.
pub fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |last| last.chars().count())
        + 1;
    (line, column)
}

/// The files a template pulls in (literal includes, recursively), for the reload watcher.
pub fn included_files(source: &str, base_dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![(source.to_string(), 0usize)];
    while let Some((text, depth)) = pending.pop() {
        for reference in find_includes(&text) {
            if let Ok(path) = resolve_include(base_dir, &reference.name)
                && !found.contains(&path)
            {
                if depth < MAX_INCLUDE_DEPTH
                    && let Ok(included) = super::read::read_text_bounded(&path)
                {
                    pending.push((included, depth + 1));
                }
                found.push(path);
            }
        }
    }
    found
}

/// The files a template pulls in (literal includes, recursively) with their text, each
/// read once (at most `MAX_INPUT_BYTES`); a file that cannot be read is left out.
pub fn included_templates(source: &str, base_dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found: Vec<(PathBuf, String)> = Vec::new();
    let mut pending = vec![(source.to_string(), 0usize)];
    while let Some((text, depth)) = pending.pop() {
        for reference in find_includes(&text) {
            let Ok(path) = resolve_include(base_dir, &reference.name) else {
                continue;
            };
            if found.iter().any(|(seen, _)| *seen == path) {
                continue;
            }
            let Ok(included) = super::validate::read_bounded(&path)
                .and_then(|bytes| String::from_utf8(bytes).map_err(std::io::Error::other))
            else {
                continue;
            };
            if depth < MAX_INCLUDE_DEPTH {
                pending.push((included.clone(), depth + 1));
            }
            found.push((path, included));
        }
    }
    found
}

pub fn check_expression(expression: &str, allowed: &[&str]) -> Vec<TemplateIssue> {
    let env = Environment::new();
    let compiled = match env.compile_expression(expression) {
        Ok(compiled) => compiled,
        Err(error) => {
            return vec![TemplateIssue {
                code: Code::StopWhen,
                message: format!(
                    "`stop_when` does not compile: {}",
                    error.detail().unwrap_or("syntax error")
                ),
                hint: Some(
                    "write an expression such as `usage.total_tokens > 50000 or step >= 40`".into(),
                ),
                offset: error.range().map_or(0, |range| range.start),
                include: None,
            }];
        }
    };
    let mut names: Vec<String> = compiled.undeclared_variables(false).into_iter().collect();
    names.sort();
    names
        .into_iter()
        .filter(|name| {
            !allowed.contains(&name.as_str()) && !TEMPLATE_GLOBALS.contains(&name.as_str())
        })
        .map(|name| TemplateIssue {
            code: Code::StopWhen,
            hint: Some(match did_you_mean(&name, allowed.iter().copied()) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!("`stop_when` can read: {}", allowed.join(", ")),
            }),
            message: format!("`stop_when` reads `{name}`, which does not exist"),
            offset: find_word(expression, &name).unwrap_or(0),
            include: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scope(vars: &[&str], env: &[&str]) -> TemplateScope {
        TemplateScope {
            variables: vars.iter().map(|s| s.to_string()).collect(),
            env: env.iter().map(|s| s.to_string()).collect(),
            declare_hint: "declare it under `inputs:`",
        }
    }

    #[test]
    fn accepts_declared_inputs_env_and_builtins() {
        let issues = check_template(
            "{{ diff }} {{ env.REPO }} {{ agent.name }} {% for i in range(2) %}{{ i }}{% endfor %}",
            Path::new("."),
            &scope(&["diff"], &["REPO"]),
        );
        assert_eq!(issues, vec![]);
    }

    #[test]
    fn reports_undeclared_variables_with_offsets() {
        let source = "Hello {{ nmae }}";
        let issues = check_template(source, Path::new("."), &scope(&["name"], &[]));
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].code, Code::UndeclaredVariable);
        assert_eq!(issues[0].offset, 9);
        assert!(
            issues[0]
                .hint
                .as_deref()
                .unwrap()
                .contains("did you mean `name`")
        );
    }

    #[test]
    fn env_names_must_be_listed() {
        let issues = check_template("{{ env.HOME }}", Path::new("."), &scope(&[], &["REPO"]));
        assert_eq!(issues[0].code, Code::UndeclaredVariable);
        assert!(issues[0].message.contains("env.HOME"));
    }

    #[test]
    fn syntax_errors_point_into_the_template() {
        let issues = check_template("line one\n{{ x ", Path::new("."), &scope(&["x"], &[]));
        assert_eq!(issues[0].code, Code::Template);
        assert!(issues[0].offset >= 9);
    }

    #[test]
    fn includes_cannot_leave_the_directory() {
        let issues = check_template(
            "{% include '../secret.txt' %}",
            Path::new("."),
            &scope(&[], &[]),
        );
        assert_eq!(issues[0].code, Code::IncludeEscape);
        assert_eq!(issues[0].offset, 12);
    }

    #[test]
    fn rendering_is_strict() {
        let env = environment(Path::new("."));
        assert_eq!(
            render(&env, "t", "{{ a }}!\n", &json!({"a": 1})).unwrap(),
            "1!\n"
        );
        assert!(render(&env, "t", "{{ missing }}", &json!({})).is_err());
    }

    #[test]
    fn stop_when_reads_only_known_variables() {
        let allowed = ["step", "usage"];
        assert_eq!(
            check_expression("step >= 3 or usage.total_tokens > 10", &allowed),
            vec![]
        );
        let issues = check_expression("stpe > 3", &allowed);
        assert_eq!(issues[0].code, Code::StopWhen);
        assert!(
            check_expression("step >", &allowed)[0]
                .message
                .contains("does not compile")
        );
    }
}
