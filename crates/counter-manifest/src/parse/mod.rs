//! Reading and validating the manifest. Every check reports the position of the element or attribute
//! at fault, so the first error of a manifest reads `file:line:column: reason`.
//!
//! This module holds the entry point, the error positions and the attribute readers (each refuses a
//! value the schema does not allow); [`strings`] reads the `<localization>` string table that
//! `$(string.ID)` references resolve against, [`elements`] and [`counter`] read the elements into the
//! model, and [`validate`] checks what involves more than one element (uniqueness, bases, references,
//! layout, string ids).

mod counter;
mod elements;
mod strings;
mod validate;

use roxmltree::{Attribute, Document, Node};

use crate::error::ManifestError;
use crate::model::Manifest;
use crate::names::is_c_identifier;

pub use strings::DEFAULT_CULTURE;

/// The namespace of the `<counters>` element and everything inside it.
pub const COUNTERS_NAMESPACE: &str = "http://schemas.microsoft.com/win/2005/12/counters";

/// PCW's counter mask (`PcwCallbackAddCounter`'s `CounterMask`) has one bit per counter id.
pub const MAX_COUNTER_ID: u32 = 63;

/// The schema's limit on `name` (xs:maxLength 1023).
const MAX_NAME_CHARS: usize = 1023;

type Result<T> = std::result::Result<T, ManifestError>;

/// Parses and validates `text`, the contents of the manifest `file` (used only in error messages).
pub fn parse(file: &str, text: &str) -> Result<Manifest> {
    let options = roxmltree::ParsingOptions { allow_dtd: false, ..Default::default() };
    let doc = match Document::parse_with_options(text, options) {
        Ok(doc) => doc,
        Err(error) => return Err(xml_error(file, text, &error)),
    };
    let mut cx = Cx { file, doc: &doc, strings: None };
    cx.strings = cx.string_table()?;
    cx.manifest()
}

fn xml_error(file: &str, text: &str, error: &roxmltree::Error) -> ManifestError {
    use roxmltree::Error as E;
    let mut pos = error.pos();
    if matches!(error, E::UnexpectedEndOfStream | E::UnclosedRootNode | E::NoRootNode) {
        // roxmltree reports these at 1:1; the end of the text is where something is missing.
        let line = text.split('\n').count() as u32;
        let column = text.rsplit('\n').next().map_or(0, |last| last.chars().count()) as u32 + 1;
        pos = roxmltree::TextPos::new(line, column);
    }
    // roxmltree's messages embed " at LINE:COL"; the prefix carries the position instead.
    let message = error.to_string().replace(&format!(" at {}", error.pos()), "");
    ManifestError {
        file: file.to_owned(),
        line: pos.row,
        column: pos.col,
        reason: format!("malformed XML: {message}"),
    }
}

/// Everything a check needs to report an error, and the string table references resolve against.
struct Cx<'a, 'input> {
    file: &'a str,
    doc: &'a Document<'input>,
    strings: Option<strings::StringTable>,
}

/// Where a value came from, for errors found after reading it.
#[derive(Clone, Copy)]
struct Pos(usize);

/// What the parser keeps about one counter beyond the model: positions for later checks.
struct CounterPositions {
    element: Pos,
    id: Pos,
    uri: Pos,
    name: Option<Pos>,
    symbol: Option<Pos>,
    /// Where the Rust constant comes from: the symbol, else the name, else the field.
    constant: Pos,
    ty: Pos,
    field: Pos,
    base_id: Option<(u32, Pos)>,
    name_id: Option<Pos>,
    description_id: Option<Pos>,
    other_ids: Vec<(&'static str, u32, Pos)>,
}

struct SetPositions {
    element: Pos,
    name_id: Option<Pos>,
    description_id: Option<Pos>,
    counters: Vec<CounterPositions>,
}

impl<'a, 'input> Cx<'a, 'input> {
    fn error(&self, pos: Pos, reason: impl Into<String>) -> ManifestError {
        let text_pos = self.doc.text_pos_at(pos.0);
        ManifestError {
            file: self.file.to_owned(),
            line: text_pos.row,
            column: text_pos.col,
            reason: reason.into(),
        }
    }

    fn at_node(&self, node: Node, reason: impl Into<String>) -> ManifestError {
        self.error(Pos(node.range().start), reason)
    }

    fn at_attr(&self, attr: &Attribute, reason: impl Into<String>) -> ManifestError {
        self.error(Pos(attr.range().start), reason)
    }

    fn line_of(&self, pos: Pos) -> u32 {
        self.doc.text_pos_at(pos.0).row
    }

    /// Refuses attributes the schema does not define for this element (typos would otherwise be
    /// silently ignored). Attributes of other namespaces are left alone.
    fn known_attributes(&self, node: Node, known: &[&str]) -> Result<()> {
        for attr in node.attributes() {
            if attr.namespace().is_none() && !known.contains(&attr.name()) {
                return Err(self.at_attr(
                    &attr,
                    format!("unknown attribute `{}` on <{}>", attr.name(), node.tag_name().name()),
                ));
            }
        }
        Ok(())
    }

    fn required<'n>(&self, node: Node<'n, 'input>, name: &str) -> Result<Attribute<'n, 'input>> {
        node.attribute_node(name).ok_or_else(|| {
            self.at_node(
                node,
                format!("<{}> is missing the required attribute `{name}`", node.tag_name().name()),
            )
        })
    }

    /// A required attribute with a non-empty value free of control characters, taken literally.
    fn required_text<'n>(&self, node: Node<'n, 'input>, name: &str) -> Result<(String, Pos)> {
        let attr = self.required(node, name)?;
        let value = attr.value().to_owned();
        self.checked_text(&attr, &value, false)?;
        Ok((value, Pos(attr.range().start)))
    }

    /// `value` (the text of `attr`, resolved if it was a reference) is not blank, and free of control
    /// characters: names become single-line strings; descriptions (`multi_line`) may hold line breaks
    /// and tabs (written as character references), which the string table escapes. Anything else
    /// would be mangled.
    fn checked_text(&self, attr: &Attribute, value: &str, multi_line: bool) -> Result<()> {
        if value.trim().is_empty() {
            return Err(self.at_attr(attr, format!("`{}` must not be empty", attr.name())));
        }
        if let Some(c) = value.chars().find(|&c| c.is_control() && !(multi_line && (c == '\n' || c == '\t')))
        {
            return Err(self.at_attr(
                attr,
                format!("`{}` contains the control character U+{:04X}", attr.name(), u32::from(c)),
            ));
        }
        Ok(())
    }

    /// A required `symbol`: a C identifier.
    fn symbol(&self, node: Node<'_, 'input>) -> Result<(String, Pos)> {
        self.required(node, "symbol")?;
        Ok(self.optional_symbol(node)?.expect("present"))
    }

    /// `symbol`, if present: a C identifier.
    fn optional_symbol(&self, node: Node<'_, 'input>) -> Result<Option<(String, Pos)>> {
        let Some(attr) = node.attribute_node("symbol") else { return Ok(None) };
        if !is_c_identifier(attr.value()) {
            return Err(self.at_attr(&attr, format!("symbol `{}` is not a C identifier", attr.value())));
        }
        Ok(Some((attr.value().to_owned(), Pos(attr.range().start))))
    }

    fn guid(&self, node: Node<'_, 'input>, name: &str) -> Result<(String, Pos)> {
        let attr = self.required(node, name)?;
        if !is_guid(attr.value()) {
            return Err(self.at_attr(
                &attr,
                format!(
                    "{name} `{}` is not a GUID of the form {{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}}",
                    attr.value()
                ),
            ));
        }
        Ok((attr.value().to_owned(), Pos(attr.range().start)))
    }

    fn number(&self, attr: &Attribute) -> Result<u32> {
        parse_u32(attr.value()).ok_or_else(|| {
            self.at_attr(
                attr,
                format!("`{}` must be an unsigned 32-bit number, not `{}`", attr.name(), attr.value()),
            )
        })
    }

    fn optional_number(&self, node: Node, name: &str) -> Result<Option<(u32, Pos)>> {
        match node.attribute_node(name) {
            None => Ok(None),
            Some(attr) => Ok(Some((self.number(&attr)?, Pos(attr.range().start)))),
        }
    }

    /// The element children of `node`; text other than whitespace, and elements outside the counters
    /// namespace, are errors (the schema allows neither).
    fn children(&self, node: Node<'a, 'input>) -> Result<Vec<Node<'a, 'input>>> {
        let mut children = Vec::new();
        for child in node.children() {
            if child.is_element() {
                if child.tag_name().namespace() != Some(COUNTERS_NAMESPACE) {
                    return Err(self.at_node(
                        child,
                        format!(
                            "unexpected element <{}> in <{}> (not in the counters namespace)",
                            child.tag_name().name(),
                            node.tag_name().name()
                        ),
                    ));
                }
                children.push(child);
            } else if child.is_text() && !child.text().unwrap_or_default().trim().is_empty() {
                return Err(self.at_node(child, format!("unexpected text in <{}>", node.tag_name().name())));
            }
        }
        Ok(children)
    }

    fn unexpected(&self, child: Node, parent: Node) -> ManifestError {
        self.at_node(
            child,
            format!("unexpected element <{}> in <{}>", child.tag_name().name(), parent.tag_name().name()),
        )
    }

    /// A required `name`, resolved.
    fn name(&self, node: Node<'_, 'input>) -> Result<(String, Pos)> {
        let attr = self.required(node, "name")?;
        Ok((self.name_text(&attr)?, Pos(attr.range().start)))
    }

    /// A required `description`, resolved.
    fn description(&self, node: Node<'_, 'input>) -> Result<(String, Pos)> {
        let attr = self.required(node, "description")?;
        Ok((self.description_text(&attr)?, Pos(attr.range().start)))
    }

    /// The text of the `name` attribute `attr`: resolved, one line, at most the schema's length.
    fn name_text(&self, attr: &Attribute) -> Result<String> {
        let name = self.resolve(attr)?;
        self.checked_text(attr, &name, false)?;
        if name.chars().count() > MAX_NAME_CHARS {
            return Err(
                self.at_attr(attr, format!("`name` is longer than the schema's {MAX_NAME_CHARS} characters"))
            );
        }
        Ok(name)
    }

    /// The text of the `description` attribute `attr`: resolved, line breaks and tabs allowed.
    fn description_text(&self, attr: &Attribute) -> Result<String> {
        let description = self.resolve(attr)?;
        self.checked_text(attr, &description, true)?;
        Ok(description)
    }
}

/// `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}` with hex digits of either case.
pub fn is_guid(s: &str) -> bool {
    let Some(inner) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
        return false;
    };
    let groups: Vec<&str> = inner.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The schema's UInt32Type: decimal, or hexadecimal with a `0x` prefix.
fn parse_u32(s: &str) -> Option<u32> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u32::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids() {
        assert!(is_guid("{5E3B7A4C-1F2D-4C8B-9A61-7D0E2B4F8C13}"));
        assert!(is_guid("{5e3b7a4c-1f2d-4c8b-9a61-7d0e2b4f8c13}"));
        assert!(!is_guid("5E3B7A4C-1F2D-4C8B-9A61-7D0E2B4F8C13"));
        assert!(!is_guid("{5E3B7A4C-1F2D-4C8B-9A61-7D0E2B4F8C1}"));
        assert!(!is_guid("{5E3B7A4C-1F2D-4C8B-9A61-7D0E2B4F8C1G}"));
        assert!(!is_guid("{5E3B7A4C1F2D-4C8B-9A61-7D0E2B4F8C13}"));
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_u32("1000"), Some(1000));
        assert_eq!(parse_u32("0x3E8"), Some(1000));
        assert_eq!(parse_u32("4294967296"), None);
        assert_eq!(parse_u32("-1"), None);
        assert_eq!(parse_u32("+1"), None);
        assert_eq!(parse_u32("0x"), None);
        assert_eq!(parse_u32(""), None);
    }
}
