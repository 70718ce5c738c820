//! Rust text laid out as rustfmt would lay it out (max_width 110): lines, doc comments word-wrapped,
//! calls, struct literals and arrays on one line when they fit and vertically when not, and the small
//! spellings the generated code uses (integer and atomic types, hex masks, "a, b and c", escaped doc
//! text). `super` decides what code to generate; this module only how it reads.

use std::fmt::Write as _;

/// The project's rustfmt max_width.
pub(super) const MAX_WIDTH: usize = 110;

pub(super) fn int_type(size: u32) -> &'static str {
    if size == 8 { "u64" } else { "u32" }
}

pub(super) fn atomic_type(size: u32) -> &'static str {
    if size == 8 { "AtomicU64" } else { "AtomicU32" }
}

/// `0x0000_0000_0000_0081`.
pub(super) fn hex_mask(mask: u64) -> String {
    let hex = format!("{mask:016x}");
    let groups: Vec<&str> = (0..4).map(|i| &hex[i * 4..i * 4 + 4]).collect();
    format!("0x{}", groups.join("_"))
}

/// "a", "a and b", "a, b and c".
pub(super) fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Manifest text in a doc comment: escapes what rustdoc would read as links or HTML.
pub(super) fn escape_doc(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '[' | ']' | '<' | '>' | '\\' | '`') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// How [`Out::array`] lays out items that do not fit on one line.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Packing {
    /// As many items per line as fit, below max_width (rustfmt's "mixed" layout of short items).
    Mixed,
    /// One item per line (rustfmt's layout of items too long to pack).
    OnePerLine,
}

/// The generated text, with helpers that lay lines out as rustfmt would.
#[derive(Default)]
pub(super) struct Out {
    pub(super) text: String,
}

impl Out {
    pub(super) fn line(&mut self, indent: usize, line: &str) {
        let _ = writeln!(self.text, "{:indent$}{line}", "");
    }

    pub(super) fn blank(&mut self) {
        self.text.push('\n');
    }

    pub(super) fn doc_blank(&mut self, indent: usize) {
        self.line(indent, "///");
    }

    /// A doc comment, word-wrapped to MAX_WIDTH; a line break in `text` starts a new paragraph line.
    pub(super) fn doc(&mut self, indent: usize, text: &str) {
        let width = MAX_WIDTH - indent - 4;
        for paragraph in text.split('\n') {
            let mut line = String::new();
            for word in paragraph.split_whitespace() {
                if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
                    self.line(indent, &format!("/// {line}"));
                    line.clear();
                }
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(word);
            }
            if line.is_empty() {
                self.doc_blank(indent);
            } else {
                self.line(indent, &format!("/// {line}"));
            }
        }
    }

    /// `open item, item, ... close` on one line if it fits, else rustfmt's vertical layout (one item per
    /// line, trailing comma).
    pub(super) fn call(&mut self, indent: usize, open: &str, items: &[String], close: &str) {
        let one_line = format!("{open}{}{close}", items.join(", "));
        if indent + one_line.chars().count() <= MAX_WIDTH {
            self.line(indent, &one_line);
            return;
        }
        self.line(indent, open);
        for item in items {
            self.line(indent + 4, &format!("{item},"));
        }
        self.line(indent, close);
    }

    /// `Name { a: 1, b: 2 }` followed by `tail`, on one line if it fits, else vertically.
    pub(super) fn struct_literal(&mut self, indent: usize, name: &str, fields: &[String], tail: &str) {
        let one_line = format!("{name} {{ {} }}{tail}", fields.join(", "));
        if indent + one_line.chars().count() <= MAX_WIDTH {
            self.line(indent, &one_line);
            return;
        }
        self.line(indent, &format!("{name} {{"));
        for field in fields {
            self.line(indent + 4, &format!("{field},"));
        }
        self.line(indent, &format!("}}{tail}"));
    }

    /// `head[item, item, ...]tail` as rustfmt lays it out: on one line if it fits, else on the next
    /// line (after `head`'s `=`) if it fits there, else as [`Packing`] says.
    pub(super) fn array(
        &mut self,
        indent: usize,
        head: &str,
        items: &[String],
        tail: &str,
        packing: Packing,
    ) {
        let list = format!("&[{}]{tail}", items.join(", "));
        if indent + head.len() + 1 + list.chars().count() <= MAX_WIDTH {
            self.line(indent, &format!("{head} {list}"));
            return;
        }
        if indent + 4 + list.chars().count() <= MAX_WIDTH {
            self.line(indent, head);
            self.line(indent + 4, &list);
            return;
        }
        if packing == Packing::OnePerLine {
            self.line(indent, &format!("{head} &["));
            for item in items {
                self.line(indent + 4, &format!("{item},"));
            }
            self.line(indent, &format!("]{tail}"));
            return;
        }
        self.line(indent, &format!("{head} &["));
        let inner = indent + 4;
        let mut line = String::new();
        for item in items {
            let piece = format!("{item},");
            if !line.is_empty() && inner + line.len() + 1 + piece.len() >= MAX_WIDTH {
                self.line(inner, &line);
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&piece);
        }
        if !line.is_empty() {
            self.line(inner, &line);
        }
        self.line(indent, &format!("]{tail}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(hex_mask(0x81), "0x0000_0000_0000_0081");
        assert_eq!(hex_mask(u64::MAX), "0xffff_ffff_ffff_ffff");
    }

    #[test]
    fn lists() {
        assert_eq!(join_and(&["a".into()]), "a");
        assert_eq!(join_and(&["a".into(), "b".into()]), "a and b");
        assert_eq!(join_and(&["a".into(), "b".into(), "c".into()]), "a, b and c");
    }
}
