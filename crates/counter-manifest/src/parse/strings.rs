//! The manifest's string table, and `$(string.ID)` references to it.
//!
//! An instrumentation manifest keeps localized strings under
//! `<localization><resources culture="..."><stringTable><string id="..." value="..."/>` (the event
//! manifest schema's LocalizationType and StringTableType,
//! learn.microsoft.com/windows/win32/wes/eventmanifestschema-localizationtype-complextype and
//! eventmanifestschema-stringtabletype-complextype), and an attribute refers to one as
//! `$(string.ID)` ("use $(string.Printer.Connection) as the value of the message attribute"). The
//! counters schema page advises against this for counter strings
//! (learn.microsoft.com/windows/win32/perfctrs/performance-counters-schema: "Do not use the
//! localization or stringTable sections of the instrumentation manifest for performance data
//! strings"), yet manifests that share a string table with their events use references in counterSet
//! and counter names and descriptions, and CTRPP resolves them. The strings come from one culture, as
//! CTRPP takes them: `en-US` if the manifest has it (compared ignoring case), else the first
//! `<resources>` element. (That choice is CTRPP's behaviour as reported, not compared with its output
//! here.) The generated string table holds that culture's texts.

use std::collections::HashMap;

use roxmltree::{Attribute, Node};

use super::{Cx, Pos, Result};

/// The culture whose strings a `$(string.ID)` reference takes when the manifest has it.
pub const DEFAULT_CULTURE: &str = "en-US";

/// How a reference starts; it ends with `)`.
const REFERENCE_START: &str = "$(string.";

/// The strings of the chosen culture.
pub(super) struct StringTable {
    culture: String,
    /// The `<resources>` element the strings come from, for messages.
    element: Pos,
    strings: HashMap<String, String>,
}

impl<'a, 'input> Cx<'a, 'input> {
    /// The string table of [`DEFAULT_CULTURE`], else of the first culture; `None` if the manifest has
    /// no `<localization>` resources. Only the chosen culture's strings are read and checked.
    pub(super) fn string_table(&self) -> Result<Option<StringTable>> {
        let root = self.doc.root_element();
        let namespace = root.tag_name().namespace();
        let in_root_namespace = |node: &Node, name: &str| {
            node.is_element() && node.tag_name().name() == name && node.tag_name().namespace() == namespace
        };
        let resources: Vec<Node<'a, 'input>> = root
            .children()
            .filter(|n| in_root_namespace(n, "localization"))
            .flat_map(|localization| localization.children().filter(|n| in_root_namespace(n, "resources")))
            .collect();
        let culture_of = |node: &Node| node.attribute("culture").unwrap_or_default().to_owned();
        let Some(chosen) = resources
            .iter()
            .find(|n| culture_of(n).eq_ignore_ascii_case(DEFAULT_CULTURE))
            .or(resources.first())
        else {
            return Ok(None);
        };
        let mut strings = HashMap::new();
        let tables = chosen.children().filter(|n| in_root_namespace(n, "stringTable"));
        for string in tables.flat_map(|table| table.children().filter(|n| in_root_namespace(n, "string"))) {
            let id = self.required(string, "id")?;
            let value = self.required(string, "value")?;
            if strings.insert(id.value().to_owned(), value.value().to_owned()).is_some() {
                return Err(self.at_node(
                    string,
                    format!("string `{}` is defined twice in this string table", id.value()),
                ));
            }
        }
        Ok(Some(StringTable { culture: culture_of(chosen), element: Pos(chosen.range().start), strings }))
    }

    /// The value of `attr`, or the string it refers to if it is a `$(string.ID)` reference. A value
    /// that holds `$(string.` anywhere else is refused rather than copied into the string table.
    pub(super) fn resolve(&self, attr: &Attribute) -> Result<String> {
        let value = attr.value();
        if !value.contains(REFERENCE_START) {
            return Ok(value.to_owned());
        }
        let id = value
            .strip_prefix(REFERENCE_START)
            .and_then(|rest| rest.strip_suffix(')'))
            .filter(|id| !id.is_empty() && !id.contains(')') && !id.contains(REFERENCE_START))
            .ok_or_else(|| {
                self.at_attr(
                    attr,
                    format!(
                        "`{}` is `{value}`, not a string reference: a reference is the whole value, \
                         `$(string.ID)`",
                        attr.name()
                    ),
                )
            })?;
        let Some(table) = &self.strings else {
            return Err(self.at_attr(
                attr,
                format!(
                    "`{}` refers to string `{id}`, but the manifest has no <localization> string table",
                    attr.name()
                ),
            ));
        };
        table.strings.get(id).cloned().ok_or_else(|| {
            self.at_attr(
                attr,
                format!(
                    "`{}` refers to string `{id}`, which the {} string table (<resources> at line {}) does not \
                     define",
                    attr.name(),
                    table.culture,
                    self.line_of(table.element)
                ),
            )
        })
    }
}
