//! Tagged text → tree, strictly.
//!
//! `runner render` and `runner resume` must not guess: a transcript that does not follow
//! the grammar written by [`serialize`](super::serialize) is rejected with the line and
//! column where it goes wrong and what was expected there. The parser reads line by line
//! (tags are whole lines, content never contains `<<`), keeps the open steps and tool
//! calls on an explicit stack, and touches every byte a bounded number of times, so it
//! runs in linear time whatever the nesting depth.
//!
//! Nesting is bounded ([`MAX_NESTING`]): the tree it builds is walked recursively by the
//! renderers (and freed so), so a transcript nested tens of thousands of levels deep would
//! overflow the stack; past the bound the parser stops with a located error instead.
//!
//! [`parse_partial`] is for transcripts cut short by a crash: it returns every complete
//! top-level block and says where the incomplete tail starts, instead of failing.
//!
//! [`parse_tolerant`] reads what other producers of the reference format write (every
//! example of the reference itself): the same tags, but any JSON as a tool result, error
//! details with keys of their own or none at all, blank lines between blocks, the single-step
//! flag anywhere in its step, no newline after the last line (see [`tolerant`](super::tolerant)).

use super::error::{ParseError, quote};
use super::escape::{EscapeError, split_attr, unescape_field, unescape_text};
use super::model::{Item, Step, StepStatus, ToolResult, ToolStep, Transcript};
use super::tags::*;
use super::tolerant;

mod blocks;

/// The most steps and tool calls open at once: a sub-agent adds a tool call and its own
/// step, so this is some 127 levels of sub-agents, far more than any run nests.
pub const MAX_NESTING: usize = 256;

/// Parses a whole transcript; any deviation from the grammar is an error.
pub fn parse(input: &str) -> Result<Transcript, ParseError> {
    let mut parser = Parser::new(input);
    parser.run()?;
    Ok(Transcript { items: parser.root })
}

/// Parses a transcript written by any producer of the reference format: the tags must
/// still be right (a located error otherwise), the payloads and spacing need not be ours.
pub fn parse_tolerant(input: &str) -> Result<Transcript, ParseError> {
    let mut parser = Parser::new(input);
    parser.tolerant = true;
    parser.run()?;
    Ok(Transcript { items: parser.root })
}

#[cfg(any(test, feature = "testing"))]
/// The result of [`parse_partial`].
#[derive(Debug, Clone, PartialEq)]
pub struct PartialTranscript {
    /// Every top-level block that was complete and valid, in order.
    pub transcript: Transcript,
    /// `None` when the whole input parsed.
    pub tail: Option<IncompleteTail>,
}

#[cfg(any(test, feature = "testing"))]
/// Where the unusable rest of a transcript begins, and why it is unusable.
#[derive(Debug, Clone, PartialEq)]
pub struct IncompleteTail {
    /// First line of the top-level block that could not be completed.
    pub line: usize,
    /// The error the strict parser reports for the same input.
    pub error: ParseError,
}

#[cfg(any(test, feature = "testing"))]
/// Parses as much as possible: the top-level blocks before the first error, and the
/// position of the incomplete tail. Meant for transcripts of crashed runs, whose last
/// block may be torn; [`parse`] rejects those.
pub fn parse_partial(input: &str) -> PartialTranscript {
    let mut parser = Parser::new(input);
    let tail = parser.run().err().map(|error| IncompleteTail {
        line: parser.block_line,
        error,
    });
    PartialTranscript {
        transcript: Transcript { items: parser.root },
        tail,
    }
}

#[derive(Clone, Copy)]
struct Line<'a> {
    text: &'a str,
    start: usize,
    no: usize,
}

impl Line<'_> {
    fn end(&self) -> usize {
        self.start + self.text.len()
    }
}

enum Frame {
    Step { step: Step, line: usize },
    Tool { tool: Box<ToolStep>, line: usize },
}

struct Parser<'a> {
    src: &'a str,
    /// Byte offset of the next line.
    pos: usize,
    /// Number of the next line.
    line_no: usize,
    stack: Vec<Frame>,
    root: Vec<Item>,
    /// First line of the top-level block being read.
    block_line: usize,
    /// Reading another producer's transcript ([`parse_tolerant`]).
    tolerant: bool,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        Parser {
            src,
            pos: 0,
            line_no: 1,
            stack: Vec::new(),
            root: Vec::new(),
            block_line: 1,
            tolerant: false,
        }
    }

    fn run(&mut self) -> Result<(), ParseError> {
        loop {
            if self.stack.is_empty() {
                self.block_line = self.line_no;
            }
            let Some(line) = self.next_line()? else {
                break;
            };
            if line.text.starts_with(INTRODUCER) {
                self.tag(line)?;
            } else {
                self.text_run(line)?;
            }
        }
        match self.stack.last() {
            None => Ok(()),
            Some(frame) => Err(self.eof_error(&frame_expectation(frame))),
        }
    }

    // ---- lines -------------------------------------------------------------------------

    fn next_line(&mut self) -> Result<Option<Line<'a>>, ParseError> {
        let rest = &self.src[self.pos..];
        if rest.is_empty() {
            return Ok(None);
        }
        let Some(len) = rest.find('\n') else {
            if self.tolerant {
                let line = Line {
                    text: rest,
                    start: self.pos,
                    no: self.line_no,
                };
                self.pos = self.src.len();
                self.line_no += 1;
                return Ok(Some(line));
            }
            return Err(ParseError {
                line: self.line_no,
                col: rest.chars().count() + 1,
                expected: "a newline at the end of the line".into(),
                found: "end of input".into(),
            });
        };
        let line = Line {
            text: &rest[..len],
            start: self.pos,
            no: self.line_no,
        };
        self.pos += len + 1;
        self.line_no += 1;
        Ok(Some(line))
    }

    /// The next line, which must exist; `expected` describes it for the error (made only
    /// then: formatting it for every block cost a few percent of a large render).
    fn require_line(&mut self, expected: impl FnOnce() -> String) -> Result<Line<'a>, ParseError> {
        match self.next_line()? {
            Some(line) => Ok(line),
            None => Err(self.eof_error(&expected())),
        }
    }

    /// The next line, which must be exactly `tag`.
    fn expect_tag(&mut self, tag: &str) -> Result<(), ParseError> {
        let expected = || format!("`{tag}`");
        let line = self.require_line(expected)?;
        if line.text == tag {
            Ok(())
        } else {
            Err(line_error(&line, 1, &expected()))
        }
    }

    fn next_is_content(&self) -> bool {
        self.pos < self.src.len() && !self.src[self.pos..].starts_with(INTRODUCER)
    }

    fn next_is_tag(&self, tag: &str) -> bool {
        let rest = &self.src[self.pos..];
        rest.starts_with(tag)
            && match rest.as_bytes().get(tag.len()) {
                Some(&b'\n') => true,
                None => self.tolerant,
                _ => false,
            }
    }

    /// Tolerant mode: skips the lines that hold only white space (the reference puts a
    /// blank line between an error and its details).
    fn skip_blank_lines(&mut self) {
        while self.next_is_content() {
            let rest = &self.src[self.pos..];
            let len = rest.find('\n').map_or(rest.len(), |i| i + 1);
            if !rest[..len].trim().is_empty() {
                return;
            }
            self.pos += len;
            self.line_no += 1;
        }
    }

    /// Unescapes free text; in tolerant mode text that is not escaped our way is kept as
    /// it is.
    fn free_text(
        &self,
        start: usize,
        end: usize,
        no: usize,
        what: &str,
    ) -> Result<String, ParseError> {
        let raw = &self.src[start..end];
        match unescape_text(raw) {
            Ok(text) => Ok(text),
            Err(_) if self.tolerant => Ok(raw.to_owned()),
            Err(e) => Err(self.escape_error(start, no, e, what)),
        }
    }

    fn eof_error(&self, expected: &str) -> ParseError {
        ParseError {
            line: self.line_no,
            col: 1,
            expected: expected.to_owned(),
            found: "end of input".into(),
        }
    }

    /// Line and column of byte `offset`, counting from line `from` which starts at byte
    /// `from_start`. Only used to report errors.
    fn position(&self, from_start: usize, from: usize, offset: usize) -> (usize, usize) {
        let span = &self.src[from_start..offset];
        let newlines = span.bytes().filter(|&b| b == b'\n').count();
        let line_start = self.src[..offset].rfind('\n').map_or(0, |i| i + 1);
        (
            from + newlines,
            self.src[line_start..offset].chars().count() + 1,
        )
    }

    fn escape_error(&self, start: usize, line: usize, e: EscapeError, what: &str) -> ParseError {
        let (line, col) = self.position(start, line, start + e.offset);
        let rest = &self.src[start + e.offset..];
        let found: String = rest.chars().take(3).collect();
        ParseError {
            line,
            col,
            expected: format!("{what} ({})", e.message),
            found: quote(&found),
        }
    }

    // ---- containers --------------------------------------------------------------------

    fn push(&mut self, item: Item) {
        match self.stack.last_mut() {
            Some(Frame::Step { step, .. }) => step.items.push(item),
            Some(Frame::Tool { tool, .. }) => tool.nested.push(item),
            None => self.root.push(item),
        }
    }

    fn unexpected(&self, line: &Line) -> ParseError {
        let expected = match self.stack.last() {
            Some(frame) => format!("{}, a block or text", frame_expectation(frame)),
            None => "a block or text".to_owned(),
        };
        line_error(line, 1, &expected)
    }

    fn tag(&mut self, line: Line<'a>) -> Result<(), ParseError> {
        match line.text {
            STEP_START => self.step_start(line),
            STEP_END => self.step_end(line),
            THINKING_START => {
                let text = self.text_block(THINKING_END)?;
                self.push(Item::Thinking { text });
                Ok(())
            }
            TOOL_RESULT_START => self.tool_result(line),
            CHECKPOINT_START => self.checkpoint(),
            ERROR_START => self.error_block(),
            INPUT_REQUIRED_START => self.input_required(),
            USER_INPUT_START => {
                let input = self.user_input()?;
                self.push(Item::UserInputProvided(input));
                Ok(())
            }
            SINGLE_STEP_FLAG if self.tolerant => match self.stack.last_mut() {
                Some(Frame::Step { step, .. }) => {
                    step.single_step = true;
                    Ok(())
                }
                _ => Err(self.unexpected(&line)),
            },
            t if is_tool_tag(t, TOOL_START_PREFIX) => self.tool_start(line),
            t if is_tool_tag(t, TOOL_END_PREFIX) => self.tool_end(line),
            _ => Err(self.unexpected(&line)),
        }
    }

    fn text_run(&mut self, first: Line<'a>) -> Result<(), ParseError> {
        let mut end = first.end();
        while self.next_is_content() {
            if let Some(line) = self.next_line()? {
                end = line.end();
            }
        }
        if self.tolerant && self.src[first.start..end].trim().is_empty() {
            return Ok(()); // blank lines between blocks
        }
        let text = self.free_text(first.start, end, first.no, "text")?;
        self.push(Item::Text { text });
        Ok(())
    }

    /// `line` opens a step or a tool call: one more than [`MAX_NESTING`] is refused.
    fn check_nesting(&self, line: &Line<'a>) -> Result<(), ParseError> {
        if self.stack.len() < MAX_NESTING {
            return Ok(());
        }
        Err(ParseError {
            line: line.no,
            col: 1,
            expected: format!(
                "at most {MAX_NESTING} steps and tool calls open at once (a transcript nests no deeper)"
            ),
            found: format!("{} opened inside {MAX_NESTING}", quote(line.text)),
        })
    }

    // ---- steps -------------------------------------------------------------------------

    fn step_start(&mut self, line: Line<'a>) -> Result<(), ParseError> {
        if let Some(Frame::Step { step, line: at }) = self.stack.last() {
            let expected = format!("`{STEP_END}` (step {} opened at line {at})", step.number);
            return Err(line_error(&line, 1, &expected));
        }
        self.check_nesting(&line)?;
        let header = self.require_line(|| "`Step N: title`".into())?;
        let (number, title, status) = self.step_header(&header)?;
        let single_step = self.next_is_tag(SINGLE_STEP_FLAG);
        if single_step {
            self.next_line()?;
        }
        self.stack.push(Frame::Step {
            step: Step {
                number,
                title,
                status,
                single_step,
                items: Vec::new(),
            },
            line: line.no,
        });
        Ok(())
    }

    fn step_header(&self, header: &Line<'a>) -> Result<(u32, String, StepStatus), ParseError> {
        let expected = "`Step N: title` with an optional ` ✓` or ` ✗`";
        let Some(rest) = header.text.strip_prefix(STEP_HEADER_PREFIX) else {
            return Err(line_error(header, 1, expected));
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let number_col = STEP_HEADER_PREFIX.len() + 1;
        let number = rest[..digits]
            .parse::<u32>()
            .map_err(|_| line_error(header, number_col, "a step number (0 to 4294967295)"))?;
        let Some(rest) = rest[digits..].strip_prefix(": ") else {
            return Err(line_error(
                header,
                number_col + digits,
                "`: ` after the number",
            ));
        };
        let (title, status) = if let Some(t) = rest.strip_suffix(DONE_MARK) {
            (t, StepStatus::Done)
        } else if let Some(t) = rest.strip_suffix(FAILED_MARK) {
            (t, StepStatus::Failed)
        } else {
            (rest, StepStatus::Open)
        };
        let title_start = header.end() - rest.len();
        let title = unescape_field(title)
            .map_err(|e| self.escape_error(title_start, header.no, e, "a step title"))?;
        Ok((number, title, status))
    }

    fn step_end(&mut self, line: Line<'a>) -> Result<(), ParseError> {
        match self.stack.pop() {
            Some(Frame::Step { step, .. }) => {
                self.push(Item::Step(step));
                Ok(())
            }
            other => {
                if let Some(frame) = other {
                    self.stack.push(frame);
                }
                Err(self.unexpected(&line))
            }
        }
    }

    // ---- tools -------------------------------------------------------------------------

    fn tool_attr(&self, line: &Line<'a>, prefix: &str) -> Result<(String, String), ParseError> {
        let attr = &line.text[prefix.len()..line.text.len() - TAG_CLOSE.len()];
        let attr_start = line.start + prefix.len();
        let col = prefix.chars().count() + 1;
        let Some((name, id)) = split_attr(attr) else {
            return Err(line_error(line, col, "`name:id`"));
        };
        let name = unescape_field(name)
            .map_err(|e| self.escape_error(attr_start, line.no, e, "a tool name"))?;
        let id_start = attr_start + attr.len() - id.len();
        let id =
            unescape_field(id).map_err(|e| self.escape_error(id_start, line.no, e, "a tool id"))?;
        Ok((name, id))
    }

    fn tool_start(&mut self, line: Line<'a>) -> Result<(), ParseError> {
        self.check_nesting(&line)?;
        let (name, id) = self.tool_attr(&line, TOOL_START_PREFIX)?;
        self.expect_tag(TOOL_INPUT_START)?;
        let input = self.json_block(TOOL_INPUT_END)?;
        self.stack.push(Frame::Tool {
            tool: Box::new(ToolStep {
                name,
                id,
                input,
                nested: Vec::new(),
                result: None,
            }),
            line: line.no,
        });
        Ok(())
    }

    fn tool_result(&mut self, line: Line<'a>) -> Result<(), ParseError> {
        if !matches!(self.stack.last(), Some(Frame::Tool { .. })) {
            return Err(self.unexpected(&line));
        }
        let result: ToolResult = if self.tolerant {
            tolerant::tool_result(self.json_block(TOOL_RESULT_END)?)
        } else {
            self.json_block(TOOL_RESULT_END)?
        };
        let Some(end) = self.next_line()? else {
            return Err(self.eof_error(&self.tool_end_expected()));
        };
        if !is_tool_tag(end.text, TOOL_END_PREFIX) {
            return Err(line_error(&end, 1, &self.tool_end_expected()));
        }
        self.close_tool(end, Some(result))
    }

    /// What the line closing the open tool call must be, for an error.
    fn tool_end_expected(&self) -> String {
        match self.stack.last() {
            Some(Frame::Tool { tool, line }) => tool_end_expectation(tool, *line),
            _ => String::new(),
        }
    }

    fn tool_end(&mut self, line: Line<'a>) -> Result<(), ParseError> {
        if !matches!(self.stack.last(), Some(Frame::Tool { .. })) {
            return Err(self.unexpected(&line));
        }
        self.close_tool(line, None)
    }

    /// `end` is a `<<TOOL_STEP_END/…>>` line; it must name the open tool call.
    fn close_tool(&mut self, end: Line<'a>, result: Option<ToolResult>) -> Result<(), ParseError> {
        let (name, id) = self.tool_attr(&end, TOOL_END_PREFIX)?;
        match self.stack.pop() {
            Some(Frame::Tool { mut tool, line }) => {
                if tool.name != name || tool.id != id {
                    let expected = tool_end_expectation(&tool, line);
                    return Err(line_error(&end, 1, &expected));
                }
                tool.result = result;
                self.push(Item::Tool(*tool));
                Ok(())
            }
            other => {
                if let Some(frame) = other {
                    self.stack.push(frame);
                }
                Err(self.unexpected(&end))
            }
        }
    }
}

fn is_tool_tag(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len() + TAG_CLOSE.len()
        && text.starts_with(prefix)
        && text.ends_with(TAG_CLOSE)
}

fn line_error(line: &Line, col: usize, expected: &str) -> ParseError {
    ParseError {
        line: line.no,
        col,
        expected: expected.to_owned(),
        found: quote(line.text),
    }
}

fn tool_end_expectation(tool: &ToolStep, line: usize) -> String {
    let mut tag = String::from(TOOL_END_PREFIX);
    super::escape::escape_field_into(&tool.name, super::escape::ATTR_SPECIALS, &mut tag);
    tag.push(':');
    super::escape::escape_field_into(&tool.id, super::escape::ATTR_SPECIALS, &mut tag);
    tag.push_str(TAG_CLOSE);
    format!("`{tag}` (tool call opened at line {line})")
}

fn frame_expectation(frame: &Frame) -> String {
    match frame {
        Frame::Step { step, line } => {
            format!("`{STEP_END}` (step {} opened at line {line})", step.number)
        }
        Frame::Tool { tool, line } => format!(
            "`{TOOL_RESULT_START}` or {}",
            tool_end_expectation(tool, *line)
        ),
    }
}
