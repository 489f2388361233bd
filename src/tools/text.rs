//! Small text helpers shared by the built-ins: binary detection and capped output.

/// How many leading bytes are inspected to decide whether a file is binary.
pub const SNIFF_LEN: usize = 8192;

/// A file is treated as binary when its first [`SNIFF_LEN`] bytes contain a NUL byte
/// (the heuristic git and grep use).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(SNIFF_LEN)].contains(&0)
}

/// The longest prefix of `text` of at most `max` bytes that ends on a char boundary.
pub fn prefix_at_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Decodes captured bytes (lossily) and, when `total` exceeded what was kept, appends a
/// marker saying how many bytes were dropped.
pub fn capped_text(kept: &[u8], total: u64) -> String {
    let mut text = String::from_utf8_lossy(kept).into_owned();
    if total > kept.len() as u64 {
        let dropped = total - kept.len() as u64;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[… truncated: {dropped} more bytes not shown]"));
    }
    text
}
