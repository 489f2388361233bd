//! `${NAME}` and `${env:NAME}`, the variable references of `mcpServers` files, turned into
//! runner templates so an imported value reaches the server the way an inline one does:
//! rendered from the agent's declared `env:` at start, never written out anywhere.

/// A value of the file's `env` or `headers`, as a template of the agent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueTemplate {
    /// `{{ env.NAME }}` for each reference; the rest is literal text.
    pub source: String,
    /// The environment variables it reads, in order.
    pub variables: Vec<String>,
}

/// One piece of a value: text as written, or a variable reference.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Variable(&'a str),
}

/// The value as a template. A `${…}` that is neither `${NAME}` nor `${env:NAME}` (a
/// default such as `${NAME:-x}`, VS Code's `${input:id}` or `${workspaceFolder}`) is refused:
/// sending it as text would hide the mistake until the server fails.
pub fn value_template(value: &str) -> Result<ValueTemplate, String> {
    let mut source = String::new();
    let mut variables = Vec::new();
    for piece in pieces(value)? {
        match piece {
            Piece::Text(text) => source.push_str(&literal(text)),
            Piece::Variable(name) => {
                source.push_str(&format!("{{{{ env.{name} }}}}"));
                variables.push(name.to_string());
            }
        }
    }
    Ok(ValueTemplate { source, variables })
}

/// The first `${…}` reference in `value`, for values that cannot read variables.
pub fn first_reference(value: &str) -> Option<&str> {
    let start = value.find("${")?;
    let end = value[start..].find('}')?;
    Some(&value[start..start + end + 1])
}

/// VS Code's predefined variables that its `mcp.json` files use: without a word about
/// them, `${workspaceFolder}` would read as an undeclared environment variable.
const EDITOR_VARIABLES: [&str; 6] = [
    "workspaceFolder",
    "workspaceFolderBasename",
    "userHome",
    "cwd",
    "pathSeparator",
    "execPath",
];

fn pieces(value: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut pieces = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        // An unclosed `${` is text: nothing follows that could be a name.
        let Some(length) = rest[start..].find('}') else {
            break;
        };
        let inner = &rest[start + 2..start + length];
        let name = inner.strip_prefix("env:").unwrap_or(inner);
        if EDITOR_VARIABLES.contains(&inner) {
            return Err(format!(
                "`${{{inner}}}` is an editor's variable, which runner does not expand: write the value itself"
            ));
        }
        if !is_env_name(name) {
            return Err(format!(
                "`${{{inner}}}` is not understood: only `${{NAME}}` and `${{env:NAME}}` are (no defaults, inputs or editor variables)"
            ));
        }
        if start > 0 {
            pieces.push(Piece::Text(&rest[..start]));
        }
        pieces.push(Piece::Variable(name));
        rest = &rest[start + length + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest));
    }
    Ok(pieces)
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Text that must render as itself. Text with a `{` could open a tag (`{{`, `{%`, `{#`),
/// alone or with what follows it, so it is printed as a string expression instead; a JSON
/// string is a valid minijinja string literal.
fn literal(text: &str) -> String {
    if text.contains('{') {
        let quoted = serde_json::to_string(text).unwrap_or_default();
        format!("{{{{ {quoted} }}}}")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::template::{environment, render};
    use serde_json::json;

    fn rendered(value: &str) -> String {
        let template = value_template(value).unwrap();
        let env = environment(std::path::Path::new("."));
        let context = json!({"env": {"TOKEN": "t0k", "HOST": "h"}});
        render(&env, "value", &template.source, &context).unwrap()
    }

    #[test]
    fn references_read_declared_env_and_the_rest_is_kept_as_written() {
        assert_eq!(rendered("Bearer ${TOKEN}"), "Bearer t0k");
        assert_eq!(rendered("${env:HOST}:${TOKEN}"), "h:t0k");
        assert_eq!(
            value_template("a${TOKEN}b${env:HOST}").unwrap().variables,
            ["TOKEN", "HOST"]
        );
        let awkward = [
            "plain",
            "",
            "{{ env.TOKEN }}",
            "{% raw %}x{% endraw %}",
            "{# c #}",
            "a{",
            "quote \" backslash \\ tab \t newline \n",
            "ünïcødé {}",
            "$HOME ${ unclosed",
            "{{ '$' }} $$",
        ];
        for text in awkward {
            assert_eq!(rendered(text), text, "{text:?}");
        }
        assert_eq!(rendered("a{${TOKEN}}"), "a{t0k}");
    }

    #[test]
    fn other_references_are_refused() {
        for value in ["${NAME:-x}", "${input:token}", "${}", "${1X}"] {
            let error = value_template(value).unwrap_err();
            assert!(error.contains("is not understood"), "{value}: {error}");
        }
        let error = value_template("${workspaceFolder}/x").unwrap_err();
        assert!(error.contains("an editor's variable"), "{error}");
    }

    #[test]
    fn the_first_reference_is_found() {
        assert_eq!(first_reference("--token=${TOKEN}x"), Some("${TOKEN}"));
        assert_eq!(first_reference("$HOME"), None);
    }
}
