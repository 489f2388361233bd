//! Job summaries read back as a Markdown renderer would (GitHub-flavoured: tables on), so a
//! test sees what a workflow page shows: every table as wide in every row as its header,
//! no HTML, no link and no image, and the text as a reader reads it.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// What a summary shows: its text (blocks and cells separated by newlines) and its tables
/// (rows of cell texts, the header first).
#[derive(Debug, Default)]
pub struct Shown {
    pub text: String,
    pub tables: Vec<Vec<Vec<String>>>,
}

impl Shown {
    /// The rows of the table whose header is `header`, header excluded.
    pub fn table(&self, header: &[&str]) -> Vec<Vec<String>> {
        let table = self
            .tables
            .iter()
            .find(|t| t[0] == header)
            .unwrap_or_else(|| panic!("no table {header:?} in {:?}", self.tables));
        table[1..].to_vec()
    }
}

/// Parses `markdown`, failing the test on HTML, a link, an image, or a table row whose
/// number of cells differs from its header's.
pub fn shown(markdown: &str) -> Shown {
    let mut shown = Shown::default();
    let (mut row, mut cell): (Option<Vec<String>>, Option<String>) = (None, None);
    let mut width = 0;
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Html(html) | Event::InlineHtml(html) => {
                panic!("HTML `{html}` in the summary:\n{markdown}")
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                panic!("a link to `{dest_url}` in the summary:\n{markdown}")
            }
            Event::Start(Tag::Table(alignments)) => {
                width = alignments.len();
                shown.tables.push(Vec::new());
            }
            Event::Start(Tag::TableHead | Tag::TableRow) => row = Some(Vec::new()),
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                let cells = row.take().unwrap();
                assert_eq!(cells.len(), width, "a row of {cells:?}:\n{markdown}");
                shown.text.push_str(&cells.join(" | "));
                shown.text.push('\n');
                shown.tables.last_mut().unwrap().push(cells);
            }
            Event::Start(Tag::TableCell) => cell = Some(String::new()),
            Event::End(TagEnd::TableCell) => row.as_mut().unwrap().push(cell.take().unwrap()),
            Event::Text(text) | Event::Code(text) => match cell.as_mut() {
                Some(cell) => cell.push_str(&text),
                None => shown.text.push_str(&text),
            },
            Event::SoftBreak => shown.text.push(' '),
            Event::HardBreak => shown.text.push('\n'),
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::Item
                | TagEnd::BlockQuote(_)
                | TagEnd::CodeBlock,
            ) => shown.text.push('\n'),
            _ => {}
        }
    }
    shown
}
