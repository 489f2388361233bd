//! Markdown that text from outside cannot forge: job summaries (`GITHUB_STEP_SUMMARY`,
//! `--summary FILE`) show a model's answer, a test's failure message and an agent file's
//! path on a page other people open, so none of it may become a link, an image, HTML, a
//! heading or an extra table cell.
//!
//! The types carry the guarantee: a [`Text`] is made only by escaping (after redaction), a
//! [`Table`] only of `Text` cells (every row as wide as the header), and a [`Document`]
//! only of those and of fenced blocks whose fence the content cannot close.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;

use crate::secrets::TextRedactor;

/// The most characters of free text a summary shows of one value; the rest is in the run
/// directory. GitHub keeps at most 1 MiB of summary per step.
const MAX_TEXT_CHARS: usize = 4000;

/// The most lines of a quoted or fenced block.
const MAX_BLOCK_LINES: usize = 80;

/// One line of inline Markdown that shows exactly the text it was made of (redacted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text(String);

impl Text {
    /// `text` shown as itself: secrets redacted, line breaks made spaces, every character
    /// with a meaning inside a line backslash-escaped, and what could start a block at the
    /// start of a line (`-`, `+`, `1.`, indentation) made plain.
    pub fn plain(text: &str) -> Text {
        Text(escape_line(&truncated(&redacted(text))))
    }

    /// `text` in bold.
    pub fn strong(text: &str) -> Text {
        let inner = Text::plain(text);
        match inner.0.is_empty() {
            true => inner,
            false => Text(format!("**{}**", inner.0)),
        }
    }

    /// These pieces one after another.
    pub fn join(parts: &[Text], separator: &str) -> Text {
        let separator = escape_chars(separator);
        let joined: Vec<&str> = parts.iter().map(|t| t.0.as_str()).collect();
        Text(joined.join(&separator))
    }

    #[cfg(test)]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        Text::plain(text)
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        Text::plain(&text)
    }
}

/// A GitHub-flavoured table: a header row and rows of the same width.
#[derive(Debug, Clone)]
pub struct Table {
    header: Vec<Text>,
    rows: Vec<Vec<Text>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| Text::plain(h)).collect(),
            rows: Vec::new(),
        }
    }

    /// A row: cells past the header's width are dropped, missing ones are empty.
    pub fn row(&mut self, cells: Vec<Text>) {
        let mut cells = cells;
        cells.resize(self.header.len(), Text::default());
        self.rows.push(cells);
    }

    fn render(&self, out: &mut String) {
        let line = |cells: &[Text], out: &mut String| {
            out.push('|');
            for cell in cells {
                let _ = write!(out, " {} |", cell.0);
            }
            out.push('\n');
        };
        line(&self.header, out);
        out.push('|');
        out.push_str(&" --- |".repeat(self.header.len()));
        out.push('\n');
        for row in &self.rows {
            line(row, out);
        }
        out.push('\n');
    }
}

/// A Markdown document built of safe pieces, each block followed by a blank line.
#[derive(Debug, Default)]
pub struct Document(String);

impl Document {
    pub fn new() -> Document {
        Document::default()
    }

    /// `###` and the text (levels 1 to 6).
    pub fn heading(&mut self, level: usize, text: Text) -> &mut Self {
        let _ = writeln!(self.0, "{} {}\n", "#".repeat(level.clamp(1, 6)), text.0);
        self
    }

    pub fn paragraph(&mut self, text: Text) -> &mut Self {
        if !text.0.is_empty() {
            let _ = writeln!(self.0, "{}\n", text.0);
        }
        self
    }

    /// A bulleted list, an item per text.
    pub fn list(&mut self, items: &[Text]) -> &mut Self {
        for item in items {
            let _ = writeln!(self.0, "- {}", item.0);
        }
        if !items.is_empty() {
            self.0.push('\n');
        }
        self
    }

    pub fn table(&mut self, table: &Table) -> &mut Self {
        table.render(&mut self.0);
        self
    }

    /// Free text of several lines (a model's answer) as a block quote, each line escaped
    /// as [`Text::plain`]: its paragraphs stay, its Markdown does not.
    pub fn quote(&mut self, text: &str) -> &mut Self {
        let text = truncated(&redacted(text)).into_owned();
        let lines: Vec<String> = bounded_lines(&text).map(escape_line).collect();
        for (i, line) in lines.iter().enumerate() {
            // A backslash before the line's end is a hard break (CommonMark §6.7): the
            // answer's lines stay lines, as the model wrote them.
            let more = lines.get(i + 1).is_some_and(|next| !next.is_empty());
            match (line.is_empty(), more) {
                (true, _) => self.0.push_str(">\n"),
                (false, true) => {
                    let _ = writeln!(self.0, "> {line}\\");
                }
                (false, false) => {
                    let _ = writeln!(self.0, "> {line}");
                }
            }
        }
        self.0.push('\n');
        self
    }

    /// Text shown exactly as written (JSON, say) in a fenced block one backtick longer
    /// than any run of backticks in it, so no line of it can close the fence.
    pub fn fenced(&mut self, language: &str, text: &str) -> &mut Self {
        let text = truncated(&redacted(text)).into_owned();
        let body: Vec<&str> = bounded_lines(&text).collect();
        let body = body.join("\n");
        let fence = "`".repeat(longest_backtick_run(&body).max(2) + 1);
        let language: String = language
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let _ = writeln!(self.0, "{fence}{language}\n{body}\n{fence}\n");
        self
    }

    pub fn finish(&self) -> String {
        self.0.clone()
    }
}

/// `text` without the secrets the redactor knows (this process's key values, common token
/// formats).
fn redacted(text: &str) -> Cow<'_, str> {
    static REDACTOR: LazyLock<TextRedactor> = LazyLock::new(TextRedactor::default);
    match REDACTOR.redact_text(text) {
        Some(clean) => Cow::Owned(clean),
        None => Cow::Borrowed(text),
    }
}

/// At most [`MAX_TEXT_CHARS`] characters, with a note where it was cut.
fn truncated(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((end, _)) => Cow::Owned(format!("{} … (cut)", &text[..end])),
        None => Cow::Borrowed(text),
    }
}

/// The lines of `text` (CR, LF or CRLF ends one: CommonMark counts a lone CR too), at most
/// [`MAX_BLOCK_LINES`] of them.
fn bounded_lines(text: &str) -> impl Iterator<Item = &str> {
    text.trim_end_matches(['\n', '\r'])
        .split(['\n', '\r'])
        .take(MAX_BLOCK_LINES)
}

/// One line of inline Markdown showing `text`: see [`Text::plain`]. A `_` between two
/// letters or digits cannot open or close emphasis (CommonMark §6.2), so identifiers like
/// `read_file` stay readable.
fn escape_line(text: &str) -> String {
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    escape_chars(text.trim())
}

/// `text` with every character that means something inside a line backslash-escaped.
fn escape_chars(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    let mut before: Option<char> = None;
    while let Some(c) = chars.next() {
        let escape = match c {
            '_' => {
                let after = chars.peek().copied();
                !(before.is_some_and(char::is_alphanumeric)
                    && after.is_some_and(char::is_alphanumeric))
            }
            // Parentheses need none: a link or an image cannot open without `[`.
            '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '&' | '!' | '#' | '~' | '|' | '$' => true,
            // What starts a list item or a setext heading's underline at a line's start.
            '-' | '+' | '=' => before.is_none(),
            // `1.` and `1)` start an ordered list item: escaped when the line is digits up
            // to them and a space or the end follows.
            '.' | ')' => {
                out.chars().all(|d| d.is_ascii_digit())
                    && chars.peek().is_none_or(|next| next.is_whitespace())
            }
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
        before = Some(c);
    }
    out
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_is_escaped() {
        assert_eq!(
            Text::plain("<script>x</script> | [a](javascript:alert(1))").as_str(),
            r"\<script\>x\</script\> \| \[a\](javascript:alert(1))"
        );
    }

    #[test]
    fn a_line_cannot_start_a_block() {
        assert_eq!(Text::plain("- item").as_str(), r"\- item");
        assert_eq!(Text::plain("12. item").as_str(), r"12\. item");
        assert_eq!(Text::plain("0.5 s").as_str(), "0.5 s");
        assert_eq!(Text::plain("3) item").as_str(), r"3\) item");
        assert_eq!(Text::plain("    code").as_str(), "code");
        assert_eq!(Text::plain("a\nb").as_str(), "a b");
        assert_eq!(Text::plain("read_file v1.2").as_str(), "read_file v1.2");
    }

    #[test]
    fn the_lines_of_a_quote_stay_lines() {
        let mut doc = Document::new();
        doc.quote("a\\\n# b\n\nc");
        assert_eq!(doc.finish(), "> a\\\\\\\n> \\# b\n>\n> c\n\n");
    }

    #[test]
    fn a_fence_is_longer_than_any_run_inside() {
        let mut doc = Document::new();
        doc.fenced("json", "a ```` b");
        assert!(doc.finish().starts_with("`````json\n"));
    }

    #[test]
    fn rows_are_as_wide_as_the_header() {
        let mut table = Table::new(&["a", "b"]);
        table.row(vec!["1".into()]);
        table.row(vec!["1".into(), "2".into(), "3".into()]);
        let mut doc = Document::new();
        doc.table(&table);
        assert_eq!(
            doc.finish(),
            "| a | b |\n| --- | --- |\n| 1 |  |\n| 1 | 2 |\n\n"
        );
    }

    #[test]
    fn long_text_is_cut() {
        let text = Text::plain(&"a".repeat(MAX_TEXT_CHARS + 10));
        assert!(text.as_str().ends_with("… (cut)"), "{text:?}");
    }
}
