//! Escaping, so that no content can forge a tag.
//!
//! Every tag starts with `<<`, so it is enough that escaped content never contains `<<`;
//! the parser then treats any line that starts with `<<` as a tag and rejects `<<`
//! anywhere else. Three encodings, one per kind of position (docs/transcript.md):
//!
//! * **Free text** (thinking, assistant text, the final answer, error messages, input
//!   prompts) keeps its newlines and is left untouched except right after a `<`: a `<`
//!   followed by `<` or `\` gets a `\` inserted after it (`<<` → `<\<`, `<\` → `<\\`).
//!   Decoding drops the `\` that follows a `<`. Backslashes elsewhere (paths, LaTeX,
//!   regexes) are not doubled, so the text stays readable.
//! * **Fields** (step titles, checkpoint names, input types, tool names and ids) must stay
//!   on one line: `\` → `\\`, LF → `\n`, CR → `\r`, and `<` plus a few characters that
//!   are syntax in that line (`✓`/`✗` in titles; `:`/`>` in tag attributes) get a `\` in
//!   front.
//! * **JSON** payloads are written compact on one line with every `<` as `\u003c`.
//!
//! All three are exact inverses of their decoders, for every string.

use std::fmt;

/// Why an escaped string could not be decoded. `offset` is a byte offset into the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscapeError {
    pub offset: usize,
    pub message: &'static str,
}

impl fmt::Display for EscapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

impl std::error::Error for EscapeError {}

/// Characters escaped in step titles besides `\`, LF, CR and `<`.
pub const TITLE_SPECIALS: &[char] = &['✓', '✗'];
/// Characters escaped in `name:id` tag attributes besides `\`, LF, CR and `<`.
pub const ATTR_SPECIALS: &[char] = &[':', '>'];
/// No extra characters: checkpoint names, input types.
pub const PLAIN_FIELD: &[char] = &[];

/// Appends the free-text encoding of `text` to `out`.
pub fn escape_text_into(text: &str, out: &mut String) {
    let bytes = text.as_bytes();
    let mut last = 0;
    let mut from = 0;
    while let Some(rel) = text[from..].find('<') {
        let i = from + rel;
        if matches!(bytes.get(i + 1), Some(b'<') | Some(b'\\')) {
            out.push_str(&text[last..=i]);
            out.push('\\');
            last = i + 1;
        }
        from = i + 1;
    }
    out.push_str(&text[last..]);
}

#[cfg(any(test, feature = "testing"))]
/// The free-text encoding of `text`.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_text_into(text, &mut out);
    out
}

/// Decodes free text. Rejects `<<` (never produced by the encoder: it would be a tag) and
/// `<\` followed by anything but `<` or `\`.
pub fn unescape_text(escaped: &str) -> Result<String, EscapeError> {
    let bytes = escaped.as_bytes();
    let mut out = String::with_capacity(escaped.len());
    let mut last = 0;
    let mut from = 0;
    while let Some(rel) = escaped[from..].find('<') {
        let i = from + rel;
        match bytes.get(i + 1) {
            Some(b'<') => {
                return Err(EscapeError {
                    offset: i,
                    message: "unescaped `<<` in text",
                });
            }
            Some(b'\\') => match bytes.get(i + 2) {
                Some(b'<') | Some(b'\\') => {
                    // Drop the inserted `\`. Resume the scan at the escaped character:
                    // if it is a `<`, its own successor was escaped relative to it.
                    out.push_str(&escaped[last..=i]);
                    last = i + 2;
                    from = i + 2;
                    continue;
                }
                _ => {
                    return Err(EscapeError {
                        offset: i + 1,
                        message: "`<\\` must be followed by `<` or `\\`",
                    });
                }
            },
            _ => {}
        }
        from = i + 1;
    }
    out.push_str(&escaped[last..]);
    Ok(out)
}

/// Appends the one-line field encoding of `field` to `out`; `specials` are the extra
/// characters that get a `\` in front (see [`TITLE_SPECIALS`], [`ATTR_SPECIALS`]).
pub fn escape_field_into(field: &str, specials: &[char], out: &mut String) {
    for c in field.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '<' => out.push_str("\\<"),
            c if specials.contains(&c) => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

#[cfg(any(test, feature = "testing"))]
/// The one-line field encoding of `field`.
pub fn escape_field(field: &str, specials: &[char]) -> String {
    let mut out = String::with_capacity(field.len());
    escape_field_into(field, specials, &mut out);
    out
}

/// Decodes a field. Any of `\\ \n \r \< \> \: \✓ \✗` is accepted in any field; a lone `\`
/// at the end, another escape, or a raw LF/CR/`<` is an error.
pub fn unescape_field(escaped: &str) -> Result<String, EscapeError> {
    let mut out = String::with_capacity(escaped.len());
    let mut chars = escaped.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, e @ ('\\' | '<' | '>' | ':' | '✓' | '✗'))) => out.push(e),
                _ => {
                    return Err(EscapeError {
                        offset: i,
                        message: "unknown escape in field",
                    });
                }
            },
            '<' | '\n' | '\r' => {
                return Err(EscapeError {
                    offset: i,
                    message: "unescaped `<`, CR or LF in field",
                });
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Splits an escaped `name:id` attribute at its first unescaped `:`.
pub fn split_attr(escaped: &str) -> Option<(&str, &str)> {
    let bytes = escaped.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b':' => return Some((&escaped[..i], &escaped[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

/// Appends `value` as compact one-line JSON with every `<` written as `\u003c`.
pub fn write_json_into<T: serde::Serialize + ?Sized>(value: &T, out: &mut String) {
    let mut buf = Vec::with_capacity(64);
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, LtEscaping);
    // Serialising the transcript's own JSON types (Value, structs of Values and strings)
    // into memory cannot fail; should it ever, `null` keeps the block well-formed.
    if value.serialize(&mut ser).is_err() {
        out.push_str("null");
        return;
    }
    match String::from_utf8(buf) {
        Ok(s) => out.push_str(&s),
        Err(e) => out.push_str(&String::from_utf8_lossy(e.as_bytes())),
    }
}

/// serde_json's compact formatter, except that `<` in strings is written `\u003c`.
struct LtEscaping;

impl serde_json::ser::Formatter for LtEscaping {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some(i) = rest.find('<') {
            writer.write_all(&rest.as_bytes()[..i])?;
            writer.write_all(b"\\u003c")?;
            rest = &rest[i + 1..];
        }
        writer.write_all(rest.as_bytes())
    }
}
