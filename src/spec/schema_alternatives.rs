//! Which branch of a failed `anyOf`/`oneOf` the user meant: tool entries, the model
//! shorthand, middleware entries and enums all fail as "matches no alternative"; these
//! heuristics find the alternative to report, so the message names the real mistake.

use jsonschema::error::{ValidationError, ValidationErrorKind};

/// Lower is a better guess of the branch the user meant.
pub fn branch_score(errors: &[ValidationError<'_>], node: &str) -> u32 {
    errors
        .iter()
        .map(|error| {
            let path = error.instance_path().as_str();
            let at_node = path == node;
            let child_of_node = path
                .strip_prefix(node)
                .is_some_and(|rest| rest.starts_with('/') && !rest[1..].contains('/'));
            match error.kind() {
                ValidationErrorKind::Type { .. } if at_node => 1000,
                // A wrong discriminator (`builtin: shell` against the read_file branch).
                ValidationErrorKind::Constant { .. } | ValidationErrorKind::Enum { .. }
                    if child_of_node =>
                {
                    100
                }
                ValidationErrorKind::Required { .. } if at_node => 10,
                // A branch that knows none of the keys written (an MCP import, all
                // `config`, against `{type: sse, url: …}`) fits as badly as a wrong type.
                ValidationErrorKind::AdditionalProperties { unexpected }
                    if at_node && knows_no_key(unexpected.len(), error) =>
                {
                    1000
                }
                ValidationErrorKind::AdditionalProperties { unexpected } if at_node => {
                    10 * unexpected.len() as u32
                }
                // Every branch disagrees on the same tag key: the user chose this family
                // (`builtin: read_fil`) and mistyped the tag.
                ValidationErrorKind::AnyOf { context }
                | ValidationErrorKind::OneOfNotValid { context }
                    if discriminator_mismatch(context, path).is_some() =>
                {
                    5
                }
                ValidationErrorKind::AnyOf { context }
                | ValidationErrorKind::OneOfNotValid { context } => {
                    let inner = context
                        .iter()
                        .map(|branch| branch_score(branch, path))
                        .min()
                        .unwrap_or(1);
                    // A mistake below the node (`mcp: {comand: …}`) means the node's own
                    // keys fit this branch: it beats branches whose keys do not fit.
                    if at_node { inner } else { inner.min(3) }
                }
                _ => 1,
            }
        })
        .sum()
}

/// Whether all of the node's keys are the `unexpected` ones.
fn knows_no_key(unexpected: usize, error: &ValidationError<'_>) -> bool {
    error
        .instance()
        .as_object()
        .is_some_and(|keys| keys.len() == unexpected)
}

/// When every branch is a constant (an enum written as `oneOf` of documented constants),
/// the constants.
pub fn constants_at_node(
    branches: &[Vec<ValidationError<'static>>],
    node: &str,
) -> Option<Vec<String>> {
    let mut allowed = Vec::new();
    for branch in branches {
        let [error] = branch.as_slice() else {
            return None;
        };
        match error.kind() {
            ValidationErrorKind::Constant { expected_value }
                if error.instance_path().as_str() == node =>
            {
                allowed.push(
                    expected_value
                        .as_str()
                        .map_or_else(|| expected_value.to_string(), String::from),
                );
            }
            ValidationErrorKind::Enum { options } if error.instance_path().as_str() == node => {
                for option in options.as_array().into_iter().flatten() {
                    allowed.push(
                        option
                            .as_str()
                            .map_or_else(|| option.to_string(), String::from),
                    );
                }
            }
            _ => return None,
        }
    }
    (!allowed.is_empty()).then_some(allowed)
}

/// When every branch misses a different required key at the node (single-key mappings such
/// as middleware entries, or `command` vs `url`), those keys.
pub fn required_key_per_branch(
    branches: &[Vec<ValidationError<'static>>],
    node: &str,
) -> Option<Vec<String>> {
    let mut keys = Vec::new();
    for branch in branches {
        let key = branch.iter().find_map(|error| match error.kind() {
            ValidationErrorKind::Required { property }
                if error.instance_path().as_str() == node =>
            {
                property.as_str().map(String::from)
            }
            _ => None,
        })?;
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    (keys.len() > 1).then_some(keys)
}

/// When every branch fails only on a constant at the same child key (a tag such as
/// `builtin`), returns that key's instance path and the constants the branches expect.
pub fn discriminator_mismatch(
    branches: &[Vec<ValidationError<'static>>],
    node: &str,
) -> Option<(String, Vec<String>)> {
    let mut tag_path: Option<String> = None;
    let mut allowed = Vec::new();
    for branch in branches {
        let constant = branch.iter().find_map(|error| match error.kind() {
            ValidationErrorKind::Constant { expected_value } => {
                let path = error.instance_path().as_str();
                let child = path
                    .strip_prefix(node)
                    .filter(|rest| rest.starts_with('/') && !rest[1..].contains('/'));
                child.map(|_| (path.to_string(), expected_value.clone()))
            }
            _ => None,
        });
        let (path, expected) = constant?;
        if tag_path.as_ref().is_some_and(|known| *known != path) {
            return None;
        }
        tag_path = Some(path);
        allowed.push(
            expected
                .as_str()
                .map_or_else(|| expected.to_string(), String::from),
        );
    }
    tag_path
        .filter(|_| branches.len() > 1)
        .map(|path| (path, allowed))
}

pub fn is_type_error_at(error: &ValidationError<'_>, node: &str) -> bool {
    matches!(error.kind(), ValidationErrorKind::Type { .. })
        && error.instance_path().as_str() == node
}
