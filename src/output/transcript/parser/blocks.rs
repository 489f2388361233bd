//! The blocks a tag opens, read up to their closing tag: text, JSON, a checkpoint, an
//! error, a request for input. Each checks its own lines and reports where one breaks the
//! grammar.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::super::error::{ParseError, quote};
use super::super::escape::{unescape_field, unescape_text};
use super::super::model::{Checkpoint, ErrorBlock, ErrorJson, InputRequired, Item, UserInput};
use super::super::tags::*;
use super::super::tolerant;
use super::{Line, Parser, line_error};

impl<'a> Parser<'a> {
    /// Lines up to the line `end_tag` (consumed); at least one. Returns the byte span of
    /// the content and the number of its first line.
    fn block_lines(&mut self, end_tag: &str) -> Result<(usize, usize, usize), ParseError> {
        let expected_end = || format!("`{end_tag}`");
        let first = self.require_line(|| "a content line".into())?;
        if first.text.starts_with(INTRODUCER) {
            return Err(line_error(
                &first,
                1,
                "a content line (empty content is one empty line)",
            ));
        }
        let mut end = first.end();
        loop {
            let line = self.require_line(expected_end)?;
            if line.text == end_tag {
                return Ok((first.start, end, first.no));
            }
            if line.text.starts_with(INTRODUCER) {
                return Err(line_error(&line, 1, &expected_end()));
            }
            end = line.end();
        }
    }

    pub(super) fn text_block(&mut self, end_tag: &str) -> Result<String, ParseError> {
        let (start, end, no) = self.block_lines(end_tag)?;
        self.free_text(start, end, no, "text")
    }

    /// A USER_INPUT_PROVIDED block's payload, after its start tag.
    pub(super) fn user_input(&mut self) -> Result<UserInput, ParseError> {
        if self.tolerant {
            let value: Value = self.json_block(USER_INPUT_END)?;
            return Ok(tolerant::user_input(value));
        }
        self.json_block(USER_INPUT_END)
    }

    pub(super) fn json_block<T: DeserializeOwned>(
        &mut self,
        end_tag: &str,
    ) -> Result<T, ParseError> {
        let (start, end, no) = self.block_lines(end_tag)?;
        let raw = &self.src[start..end];
        serde_json::from_str(raw).map_err(|e| json_error(raw, no, &e))
    }

    pub(super) fn checkpoint(&mut self) -> Result<(), ParseError> {
        let line = self.require_line(|| "`Checkpoint: name`".into())?;
        let Some(name) = line.text.strip_prefix(CHECKPOINT_PREFIX) else {
            return Err(line_error(&line, 1, "`Checkpoint: name`"));
        };
        let name_start = line.start + CHECKPOINT_PREFIX.len();
        let name = unescape_field(name)
            .map_err(|e| self.escape_error(name_start, line.no, e, "a checkpoint name"))?;
        self.expect_tag(CHECKPOINT_END)?;
        self.push(Item::Checkpoint(Checkpoint { name }));
        Ok(())
    }

    pub(super) fn error_block(&mut self) -> Result<(), ParseError> {
        if self.tolerant {
            return self.foreign_error_block();
        }
        let (start, end, no) = self.block_lines(ERROR_END)?;
        let raw = &self.src[start..end];
        let Some(message) = raw.strip_prefix(ERROR_PREFIX) else {
            let first = Line {
                text: raw.split('\n').next().unwrap_or(""),
                start,
                no,
            };
            return Err(line_error(&first, 1, "`Error: message`"));
        };
        let msg_start = start + ERROR_PREFIX.len();
        let message = unescape_text(message)
            .map_err(|e| self.escape_error(msg_start, no, e, "an error message"))?;
        self.expect_tag(ERROR_JSON_START)?;
        let json: ErrorJson = self.json_block(ERROR_JSON_END)?;
        self.push(Item::Error(ErrorBlock { message, json }));
        Ok(())
    }

    /// Tolerant mode: `Error: ` is optional, the details block may follow after blank
    /// lines or be missing, and may hold any JSON.
    fn foreign_error_block(&mut self) -> Result<(), ParseError> {
        let (start, end, no) = self.block_lines(ERROR_END)?;
        let prefix = if self.src[start..end].starts_with(ERROR_PREFIX) {
            ERROR_PREFIX.len()
        } else {
            0
        };
        let message = self.free_text(start + prefix, end, no, "an error message")?;
        let rest = self.src[self.pos..].trim_start_matches(['\n', ' ', '\t', '\r']);
        let json = if rest.starts_with(ERROR_JSON_START) {
            self.skip_blank_lines();
            self.expect_tag(ERROR_JSON_START)?;
            tolerant::error_json(self.json_block(ERROR_JSON_END)?, &message)
        } else {
            tolerant::error_without_details(&message)
        };
        self.push(Item::Error(ErrorBlock { message, json }));
        Ok(())
    }

    pub(super) fn input_required(&mut self) -> Result<(), ParseError> {
        let expected_end = format!("`{USER_INPUT_START}` or `{INPUT_REQUIRED_END}`");
        let mut lines: Vec<Line<'a>> = Vec::new();
        let terminator = loop {
            let line = self.require_line(|| expected_end.clone())?;
            if line.text == USER_INPUT_START || line.text == INPUT_REQUIRED_END {
                break line;
            }
            if line.text.starts_with(INTRODUCER) {
                return Err(line_error(&line, 1, &expected_end));
            }
            lines.push(line);
        };
        if self.tolerant {
            while lines.last().is_some_and(|l| l.text.trim().is_empty()) {
                lines.pop();
            }
        }
        let mut meta = lines.len();
        let mut checkpoint_name = None;
        if let Some(last) = lines.last()
            && let Some(name) = last.text.strip_prefix(CHECKPOINT_NAME_PREFIX)
        {
            let name_start = last.start + CHECKPOINT_NAME_PREFIX.len();
            checkpoint_name = Some(
                unescape_field(name)
                    .map_err(|e| self.escape_error(name_start, last.no, e, "a checkpoint name"))?,
            );
            meta -= 1;
        }
        let types_expected = "a prompt line, then `Expected input types: …`";
        let Some(types_idx) = meta.checked_sub(1).filter(|&i| i >= 1) else {
            let at = lines.first().copied().unwrap_or(terminator);
            return Err(line_error(&at, 1, types_expected));
        };
        let types_line = lines[types_idx];
        let Some(types) = types_line.text.strip_prefix(INPUT_TYPES_PREFIX) else {
            return Err(line_error(&types_line, 1, "`Expected input types: …`"));
        };
        let types_start = types_line.start + INPUT_TYPES_PREFIX.len();
        let input_types = unescape_field(types)
            .map_err(|e| self.escape_error(types_start, types_line.no, e, "input types"))?;
        let first = lines[0];
        let prompt = self.free_text(
            first.start,
            lines[types_idx - 1].end(),
            first.no,
            "a prompt",
        )?;
        let provided = if terminator.text == USER_INPUT_START {
            let input = self.user_input()?;
            self.expect_tag(INPUT_REQUIRED_END)?;
            Some(input)
        } else {
            None
        };
        self.push(Item::InputRequired(InputRequired {
            prompt,
            input_types,
            checkpoint_name,
            provided,
        }));
        Ok(())
    }
}

/// Maps a serde_json error (line/byte column inside `raw`) to the transcript's line and
/// character column.
fn json_error(raw: &str, first_line: usize, e: &serde_json::Error) -> ParseError {
    let line_idx = e.line().saturating_sub(1);
    let text = raw.split('\n').nth(line_idx).unwrap_or("");
    let byte_col = e.column().min(text.len());
    let col = text[..text.floor_char_boundary(byte_col)]
        .chars()
        .count()
        .max(1);
    let mut message = e.to_string();
    if let Some(i) = message.find(" at line ") {
        message.truncate(i);
    }
    ParseError {
        line: first_line + line_idx,
        col,
        expected: format!("valid JSON ({message})"),
        found: quote(text),
    }
}
