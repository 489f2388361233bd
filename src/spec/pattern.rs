//! A permission pattern: a glob over tool names, optionally narrowed by a glob over one
//! argument's value — `shell`, `mcp_github_*`, `shell:command=git push*`,
//! `write_file:path=src/**`. In both globs `*` matches any run of characters, `/` included
//! (a command or a URL has no path separators to respect), `?` one character, `[..]` a
//! class; `**` is the same as `*`.

use std::fmt;

use globset::{Glob, GlobMatcher};
use serde_json::Value;

/// One parsed pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    tool: GlobMatcher,
    argument: Option<(String, GlobMatcher)>,
}

impl Pattern {
    /// Parses `TOOL[:ARGUMENT=VALUE]`; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let (tool, argument) = match text.split_once(':') {
            Some((tool, condition)) => (tool, Some(condition)),
            None => (text, None),
        };
        if tool.is_empty() {
            return Err("the tool name is empty (write `TOOL` or `TOOL:ARGUMENT=VALUE`)".into());
        }
        let argument = argument
            .map(|condition| {
                let Some((name, value)) = condition.split_once('=') else {
                    return Err(format!(
                        "`{condition}` is not a condition: write `ARGUMENT=VALUE`, e.g. `shell:command=git push*`"
                    ));
                };
                if name.is_empty() {
                    return Err("the argument name before `=` is empty".to_string());
                }
                Ok((name.to_string(), glob(value)?))
            })
            .transpose()?;
        Ok(Pattern {
            text: text.to_string(),
            tool: glob(tool)?,
            argument,
        })
    }

    /// Whether a call of `tool` with `arguments` matches. An argument the condition names
    /// that the call lacks does not match; a value that is not a string is matched as JSON.
    pub fn matches(&self, tool: &str, arguments: &Value) -> bool {
        if !self.tool.is_match(tool) {
            return false;
        }
        let Some((name, value)) = &self.argument else {
            return true;
        };
        match arguments.get(name) {
            Some(Value::String(text)) => value.is_match(text),
            Some(other) => value.is_match(other.to_string()),
            None => false,
        }
    }

    /// The tool-name part, when it names one tool (no wildcard): for did-you-mean checks.
    pub fn literal_tool(&self) -> Option<&str> {
        let tool = self.text.split(':').next().unwrap_or_default();
        (!tool.contains(['*', '?', '[', '{'])).then_some(tool)
    }

    /// The argument the condition looks at, if any.
    pub fn argument(&self) -> Option<&str> {
        self.argument.as_ref().map(|(name, _)| name.as_str())
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn glob(text: &str) -> Result<GlobMatcher, String> {
    Glob::new(text)
        .map(|glob| glob.compile_matcher())
        .map_err(|error| format!("`{text}` is not a valid glob: {}", error.kind()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn matches(pattern: &str, tool: &str, arguments: Value) -> bool {
        Pattern::parse(pattern).unwrap().matches(tool, &arguments)
    }

    #[test]
    fn a_tool_glob_alone_matches_every_call_of_the_tool() {
        assert!(matches("shell", "shell", json!({"command": "ls"})));
        assert!(matches("mcp_*", "mcp_search", json!({})));
        assert!(!matches("shell", "read_file", json!({})));
    }

    #[test]
    fn a_condition_matches_the_arguments_value_across_slashes() {
        let push = "shell:command=git push*";
        assert!(matches(
            push,
            "shell",
            json!({"command": "git push origin main"})
        ));
        assert!(!matches(push, "shell", json!({"command": "git status"})));
        assert!(matches(
            "write_file:path=src/**",
            "write_file",
            json!({"path": "src/a/b.rs"})
        ));
        assert!(matches(
            "http_get:url=https://api.github.com/*",
            "http_get",
            json!({"url": "https://api.github.com/repos/x"})
        ));
        assert!(!matches(
            "write_file:path=src/*",
            "write_file",
            json!({"content": "x"})
        ));
        assert!(matches("t:n=4*", "t", json!({"n": 42})));
    }

    #[test]
    fn bad_patterns_say_what_to_write() {
        assert!(
            Pattern::parse("shell:command")
                .unwrap_err()
                .contains("ARGUMENT=VALUE")
        );
        assert!(
            Pattern::parse(":x=y")
                .unwrap_err()
                .contains("tool name is empty")
        );
        assert!(
            Pattern::parse("shell:command=[")
                .unwrap_err()
                .contains("not a valid glob")
        );
        assert_eq!(
            Pattern::parse("shell:command=x").unwrap().literal_tool(),
            Some("shell")
        );
        assert_eq!(Pattern::parse("mcp_*").unwrap().literal_tool(), None);
    }
}
