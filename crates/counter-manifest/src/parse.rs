//! Reading and validating the manifest. Every check reports the position of the element or attribute
//! at fault, so the first error of a manifest reads `file:line:column: reason`.

use std::collections::HashMap;

use roxmltree::{Attribute, Document, Node};

use crate::model::{Counter, CounterSet, DetailLevel, Instances, Layout, Manifest, Provider};
use crate::names::{is_c_identifier, rust_name_problem, screaming_snake_case, snake_case};
use crate::resources::{self, StringKind};
use crate::{ManifestError, types};

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
    let cx = Cx { file, doc: &doc };
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

/// Everything a check needs to report an error.
struct Cx<'a, 'input> {
    file: &'a str,
    doc: &'a Document<'input>,
}

/// Where a value came from, for errors found after reading it.
#[derive(Clone, Copy)]
struct Pos(usize);

/// What the parser keeps about one counter beyond the model: positions for later checks.
struct CounterPositions {
    element: Pos,
    id: Pos,
    uri: Pos,
    name: Pos,
    symbol: Pos,
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

const COUNTERS_ATTRIBUTES: &[&str] = &["schemaVersion"];
const PROVIDER_ATTRIBUTES: &[&str] = &[
    "symbol",
    "callback",
    "providerGuid",
    "applicationIdentity",
    "providerType",
    "providerName",
    "resourceBase",
];
const COUNTER_SET_ATTRIBUTES: &[&str] =
    &["symbol", "guid", "uri", "name", "nameID", "description", "descriptionID", "instances"];
const COUNTER_ATTRIBUTES: &[&str] = &[
    "symbol",
    "id",
    "uri",
    "name",
    "nameID",
    "description",
    "descriptionID",
    "type",
    "baseID",
    "detailLevel",
    "defaultScale",
    "aggregate",
    "perfTimeID",
    "perfFreqID",
    "multiCounterID",
    "struct",
    "field",
];
const STRUCT_ATTRIBUTES: &[&str] = &["name", "type"];
const AGGREGATES: &[&str] = &["sum", "avg", "min", "max", "undefined"];
const COUNTER_ATTRIBUTE_NAMES: &[&str] =
    &["reference", "noDisplay", "noDigitGrouping", "displayAsHex", "displayAsReal"];

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

    /// A required attribute with a non-empty value free of control characters.
    fn required_text<'n>(&self, node: Node<'n, 'input>, name: &str) -> Result<(String, Pos)> {
        let attr = self.required(node, name)?;
        let value = attr.value();
        if value.trim().is_empty() {
            return Err(self.at_attr(&attr, format!("`{name}` must not be empty")));
        }
        self.no_control_characters(&attr, false)?;
        Ok((value.to_owned(), Pos(attr.range().start)))
    }

    /// Names become single-line strings; descriptions may hold line breaks and tabs (written as
    /// character references), which the string table escapes. Anything else would be mangled.
    fn no_control_characters(&self, attr: &Attribute, multi_line: bool) -> Result<()> {
        if let Some(c) =
            attr.value().chars().find(|&c| c.is_control() && !(multi_line && (c == '\n' || c == '\t')))
        {
            return Err(self.at_attr(
                attr,
                format!("`{}` contains the control character U+{:04X}", attr.name(), u32::from(c)),
            ));
        }
        Ok(())
    }

    fn symbol(&self, node: Node<'_, 'input>) -> Result<(String, Pos)> {
        let attr = self.required(node, "symbol")?;
        if !is_c_identifier(attr.value()) {
            return Err(self.at_attr(&attr, format!("symbol `{}` is not a C identifier", attr.value())));
        }
        Ok((attr.value().to_owned(), Pos(attr.range().start)))
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

    fn manifest(&self) -> Result<Manifest> {
        let root = self.doc.root_element();
        let mut counters_elements =
            root.descendants().filter(|n| n.is_element() && n.has_tag_name((COUNTERS_NAMESPACE, "counters")));
        let counters = counters_elements.next().ok_or_else(|| {
            self.at_node(
                root,
                format!("the manifest has no <counters xmlns=\"{COUNTERS_NAMESPACE}\"> element"),
            )
        })?;
        if let Some(second) = counters_elements.next() {
            return Err(self.at_node(second, "a manifest has one <counters> element"));
        }
        self.known_attributes(counters, COUNTERS_ATTRIBUTES)?;
        self.required(counters, "schemaVersion")?;

        let mut provider = None;
        for child in self.children(counters)? {
            match child.tag_name().name() {
                "provider" if provider.is_none() => provider = Some(child),
                "provider" => return Err(self.at_node(child, "<counters> has one <provider>")),
                _ => return Err(self.unexpected(child, counters)),
            }
        }
        let provider = provider.ok_or_else(|| self.at_node(counters, "<counters> has no <provider>"))?;
        self.provider(provider)
    }

    fn provider(&self, node: Node<'a, 'input>) -> Result<Manifest> {
        self.known_attributes(node, PROVIDER_ATTRIBUTES)?;
        let (guid, _) = self.guid(node, "providerGuid")?;
        let (name, _) = self.required_text(node, "providerName")?;
        let provider_type = self.required(node, "providerType")?;
        if provider_type.value() != "kernelMode" {
            return Err(self.at_attr(
                &provider_type,
                format!(
                    "providerType must be `kernelMode` (the generated code registers with PcwRegister), not `{}`",
                    provider_type.value()
                ),
            ));
        }
        let (application_identity, _) = self.required_text(node, "applicationIdentity")?;
        // Optional in the schema. Absent, CTRPP numbers from 0: the only numbering verified against
        // real CTRPP output (see resources.rs).
        let resource_base = self.optional_number(node, "resourceBase")?.map_or(0, |(base, _)| base);
        if let Some(callback) = node.attribute_node("callback")
            && !matches!(callback.value(), "custom" | "default")
        {
            return Err(self.at_attr(
                &callback,
                format!("callback must be custom or default, not `{}`", callback.value()),
            ));
        }

        let mut sets = Vec::new();
        let mut positions = Vec::new();
        for child in self.children(node)? {
            if child.tag_name().name() != "counterSet" {
                return Err(self.unexpected(child, node));
            }
            let (set, pos) = self.counter_set(child)?;
            sets.push(set);
            positions.push(pos);
        }
        self.unique_sets(node, &sets)?;
        let provider = Provider { name, guid, application_identity, resource_base };
        let manifest = Manifest { provider, counter_sets: sets };
        self.check_string_ids(&manifest, &positions)?;
        Ok(manifest)
    }

    /// Counterset guids, names, symbols and uris are unique; so are the Rust modules the symbols become.
    fn unique_sets(&self, provider: Node, sets: &[CounterSet]) -> Result<()> {
        let elements: Vec<Node> = provider.children().filter(|n| n.is_element()).collect();
        let mut seen: HashMap<(&str, String), usize> = HashMap::new();
        for (i, set) in sets.iter().enumerate() {
            let keys = [
                ("guid", set.guid.to_ascii_uppercase(), "guid"),
                ("name", set.name.to_lowercase(), "name"),
                ("symbol", set.symbol.clone(), "symbol"),
                ("uri", set.uri.clone(), "uri"),
                ("module", snake_case(&set.symbol), "symbol"),
            ];
            for (kind, key, attribute) in keys {
                if let Some(&first) = seen.get(&(kind, key.clone())) {
                    let attr = elements[i].attribute_node(attribute).expect("checked");
                    let first_line = self.doc.text_pos_at(elements[first].range().start).row;
                    let reason = match kind {
                        "name" => format!(
                            "counterSet name `{}` is already used by the counterSet at line {first_line} \
                             (names are compared ignoring case)",
                            set.name
                        ),
                        "module" => format!(
                            "counterSet symbol `{}` becomes the Rust module `{key}`, as does the symbol of the \
                             counterSet at line {first_line}",
                            set.symbol
                        ),
                        _ => format!(
                            "counterSet {kind} `{}` is already used by the counterSet at line {first_line}",
                            attr.value()
                        ),
                    };
                    return Err(self.at_attr(&attr, reason));
                }
                seen.insert((kind, key), i);
            }
        }
        Ok(())
    }

    fn counter_set(&self, node: Node<'a, 'input>) -> Result<(CounterSet, SetPositions)> {
        self.known_attributes(node, COUNTER_SET_ATTRIBUTES)?;
        let (guid, _) = self.guid(node, "guid")?;
        let (uri, _) = self.required_text(node, "uri")?;
        let (name, _) = self.name(node)?;
        let (description, _) = self.description(node)?;
        let (symbol, symbol_pos) = self.symbol(node)?;
        if let Some(problem) = rust_name_problem(&snake_case(&symbol)) {
            return Err(
                self.error(symbol_pos, format!("symbol `{symbol}` cannot name a Rust module: {problem}"))
            );
        }
        let instances_attr = self.required(node, "instances")?;
        let instances = Instances::ALL
            .iter()
            .find(|(name, _)| *name == instances_attr.value())
            .map(|(_, instances)| *instances)
            .ok_or_else(|| {
                let names: Vec<&str> = Instances::ALL.iter().map(|(name, _)| *name).collect();
                self.at_attr(
                    &instances_attr,
                    format!(
                        "instances must be one of {}, not `{}`",
                        names.join(", "),
                        instances_attr.value()
                    ),
                )
            })?;
        let name_id = self.optional_number(node, "nameID")?;
        let description_id = self.optional_number(node, "descriptionID")?;

        let mut structs: Option<Node> = None;
        let mut counter_nodes = Vec::new();
        for child in self.children(node)? {
            match child.tag_name().name() {
                "structs" if structs.is_none() && counter_nodes.is_empty() => structs = Some(child),
                "structs" if structs.is_some() => {
                    return Err(self.at_node(child, "a counterSet has one <structs> element"));
                }
                "structs" => return Err(self.at_node(child, "<structs> must come before the counters")),
                "counter" => counter_nodes.push(child),
                _ => return Err(self.unexpected(child, node)),
            }
        }
        let structs = structs.ok_or_else(|| {
            self.at_node(
                node,
                format!(
                    "counterSet `{symbol}` has no <structs>: each counterSet declares exactly one struct \
                     (project rule, see the manifest's header)"
                ),
            )
        })?;
        let (struct_name, struct_type) = self.the_struct(structs, &symbol)?;
        if counter_nodes.is_empty() {
            return Err(self.at_node(node, format!("counterSet `{symbol}` has no counters")));
        }

        let mut counters = Vec::new();
        let mut counter_positions = Vec::new();
        for &counter_node in &counter_nodes {
            let (counter, pos) = self.counter(counter_node, &struct_name)?;
            counters.push(counter);
            counter_positions.push(pos);
        }
        self.unique_counters(&counters, &counter_positions)?;
        self.bases(&counters, &counter_positions)?;
        self.cross_references(&counters, &counter_positions)?;
        let layout = self.layout(&counters, &counter_positions)?;

        let set = CounterSet {
            guid,
            uri,
            name,
            description,
            symbol,
            instances,
            name_id: name_id.map(|(id, _)| id),
            description_id: description_id.map(|(id, _)| id),
            struct_name,
            struct_type,
            counters,
            layout,
        };
        let positions = SetPositions {
            element: Pos(node.range().start),
            name_id: name_id.map(|(_, pos)| pos),
            description_id: description_id.map(|(_, pos)| pos),
            counters: counter_positions,
        };
        Ok((set, positions))
    }

    fn name(&self, node: Node<'_, 'input>) -> Result<(String, Pos)> {
        let (name, pos) = self.required_text(node, "name")?;
        if name.chars().count() > MAX_NAME_CHARS {
            return Err(
                self.error(pos, format!("`name` is longer than the schema's {MAX_NAME_CHARS} characters"))
            );
        }
        Ok((name, pos))
    }

    fn description(&self, node: Node<'_, 'input>) -> Result<(String, Pos)> {
        let attr = self.required(node, "description")?;
        if attr.value().trim().is_empty() {
            return Err(self.at_attr(&attr, "`description` must not be empty"));
        }
        self.no_control_characters(&attr, true)?;
        Ok((attr.value().to_owned(), Pos(attr.range().start)))
    }

    /// The one `<struct>` of `<structs>`: its name and C type.
    fn the_struct(&self, structs: Node<'a, 'input>, set_symbol: &str) -> Result<(String, Option<String>)> {
        self.known_attributes(structs, &[])?;
        let mut found: Option<(String, Option<String>)> = None;
        for child in self.children(structs)? {
            if child.tag_name().name() != "struct" {
                return Err(self.unexpected(child, structs));
            }
            if found.is_some() {
                return Err(self.at_node(
                    child,
                    format!(
                        "counterSet `{set_symbol}` declares a second struct: each counterSet has exactly one \
                         struct (project rule, see the manifest's header)"
                    ),
                ));
            }
            self.known_attributes(child, STRUCT_ATTRIBUTES)?;
            let name = self.required(child, "name")?;
            if !is_c_identifier(name.value()) {
                return Err(
                    self.at_attr(&name, format!("struct name `{}` is not a C identifier", name.value()))
                );
            }
            let ty = child.attribute_node("type");
            if let Some(ty) = &ty
                && !is_c_identifier(ty.value())
            {
                return Err(self.at_attr(ty, format!("struct type `{}` is not a C identifier", ty.value())));
            }
            found = Some((name.value().to_owned(), ty.map(|ty| ty.value().to_owned())));
        }
        found.ok_or_else(|| {
            self.at_node(
                structs,
                format!(
                    "counterSet `{set_symbol}` declares no struct: each counterSet has exactly one struct \
                     (project rule, see the manifest's header)"
                ),
            )
        })
    }

    fn counter(&self, node: Node<'a, 'input>, struct_name: &str) -> Result<(Counter, CounterPositions)> {
        self.known_attributes(node, COUNTER_ATTRIBUTES)?;
        let id_attr = self.required(node, "id")?;
        let id = self.number(&id_attr)?;
        if id > MAX_COUNTER_ID {
            return Err(self.at_attr(
                &id_attr,
                format!(
                    "counter id {id} is out of range: PCW's counter mask has 64 bits, so ids are 0..={MAX_COUNTER_ID}"
                ),
            ));
        }
        let (uri, uri_pos) = self.required_text(node, "uri")?;
        let (name, name_pos) = self.name(node)?;
        let (description, _) = self.description(node)?;
        let (symbol, symbol_pos) = self.symbol(node)?;

        let ty_attr = self.required(node, "type")?;
        let ty = match types::lookup(ty_attr.value()) {
            Some(ty) => ty,
            None if types::UNSUPPORTED_SCHEMA_TYPES.contains(&ty_attr.value()) => {
                return Err(self.at_attr(
                    &ty_attr,
                    format!("counter type `{}` is not supported by counter-manifest", ty_attr.value()),
                ));
            }
            None => {
                return Err(self.at_attr(&ty_attr, format!("unknown counter type `{}`", ty_attr.value())));
            }
        };

        let detail_attr = self.required(node, "detailLevel")?;
        let detail_level = match detail_attr.value() {
            "standard" => DetailLevel::Standard,
            "advanced" => DetailLevel::Advanced,
            other => {
                return Err(self.at_attr(
                    &detail_attr,
                    format!("detailLevel must be standard or advanced, not `{other}`"),
                ));
            }
        };

        let aggregate = match node.attribute_node("aggregate") {
            None => None,
            Some(attr) if AGGREGATES.contains(&attr.value()) => Some(attr.value().to_owned()),
            Some(attr) => {
                return Err(self.at_attr(
                    &attr,
                    format!("aggregate must be one of {}, not `{}`", AGGREGATES.join(", "), attr.value()),
                ));
            }
        };
        if let Some(attr) = node.attribute_node("defaultScale")
            && !matches!(attr.value().parse::<i32>(), Ok(-10..=10))
        {
            return Err(self.at_attr(
                &attr,
                format!("defaultScale must be an integer from -10 to 10, not `{}`", attr.value()),
            ));
        }

        let struct_attr = self.required(node, "struct")?;
        if struct_attr.value() != struct_name {
            return Err(self.at_attr(
                &struct_attr,
                format!(
                    "struct `{}` is not declared in this counterSet's <structs> (it declares `{struct_name}`)",
                    struct_attr.value()
                ),
            ));
        }
        let field_attr = self.required(node, "field")?;
        let field = field_attr.value();
        if !is_c_identifier(field) {
            return Err(self.at_attr(&field_attr, format!("field `{field}` is not a C identifier")));
        }
        let rust_field = snake_case(field);
        if let Some(problem) = rust_name_problem(&rust_field) {
            return Err(
                self.at_attr(&field_attr, format!("field `{field}` cannot name a Rust field: {problem}"))
            );
        }
        if rust_field == "reserved" {
            return Err(self.at_attr(
                &field_attr,
                format!(
                    "field `{field}` would be the Rust field `reserved`, which names the generated padding"
                ),
            ));
        }

        let mut other_ids = Vec::new();
        for name in ["perfTimeID", "perfFreqID", "multiCounterID"] {
            if let Some((value, pos)) = self.optional_number(node, name)? {
                other_ids.push((name, value, pos));
            }
        }
        self.counter_attributes(node)?;

        let name_id = self.optional_number(node, "nameID")?;
        let description_id = self.optional_number(node, "descriptionID")?;
        let counter = Counter {
            id,
            uri,
            name,
            description,
            symbol,
            ty,
            detail_level,
            aggregate,
            field: field.to_owned(),
            name_id: name_id.map(|(id, _)| id),
            description_id: description_id.map(|(id, _)| id),
        };
        let positions = CounterPositions {
            element: Pos(node.range().start),
            id: Pos(id_attr.range().start),
            uri: uri_pos,
            name: name_pos,
            symbol: symbol_pos,
            ty: Pos(ty_attr.range().start),
            field: Pos(field_attr.range().start),
            base_id: self.optional_number(node, "baseID")?,
            name_id: name_id.map(|(_, pos)| pos),
            description_id: description_id.map(|(_, pos)| pos),
            other_ids,
        };
        Ok((counter, positions))
    }

    /// `<counterAttributes>`: only the schema's attribute names, each once.
    fn counter_attributes(&self, counter: Node<'a, 'input>) -> Result<()> {
        let mut seen = false;
        for child in self.children(counter)? {
            if child.tag_name().name() != "counterAttributes" || seen {
                return Err(self.unexpected(child, counter));
            }
            seen = true;
            self.known_attributes(child, &[])?;
            let mut names = Vec::new();
            for attribute in self.children(child)? {
                if attribute.tag_name().name() != "counterAttribute" {
                    return Err(self.unexpected(attribute, child));
                }
                self.known_attributes(attribute, &["name"])?;
                let name = self.required(attribute, "name")?;
                if !COUNTER_ATTRIBUTE_NAMES.contains(&name.value()) {
                    return Err(self.at_attr(
                        &name,
                        format!(
                            "counterAttribute must be one of {}, not `{}`",
                            COUNTER_ATTRIBUTE_NAMES.join(", "),
                            name.value()
                        ),
                    ));
                }
                if names.contains(&name.value()) {
                    return Err(
                        self.at_attr(&name, format!("counterAttribute `{}` is repeated", name.value()))
                    );
                }
                names.push(name.value());
            }
        }
        Ok(())
    }

    /// Ids, uris and symbols are unique in a counterset, names too ignoring case (PDH looks counters up
    /// by name without regard to case), and the Rust constants the symbols become.
    fn unique_counters(&self, counters: &[Counter], positions: &[CounterPositions]) -> Result<()> {
        let mut seen: HashMap<(&str, String), usize> = HashMap::new();
        for (i, counter) in counters.iter().enumerate() {
            let keys = [
                ("id", counter.id.to_string(), positions[i].id),
                ("uri", counter.uri.clone(), positions[i].uri),
                ("name", counter.name.to_lowercase(), positions[i].name),
                ("symbol", counter.symbol.clone(), positions[i].symbol),
                ("constant", screaming_snake_case(&counter.symbol), positions[i].symbol),
            ];
            for (kind, key, pos) in keys {
                if let Some(&first) = seen.get(&(kind, key.clone())) {
                    let first_counter = &counters[first];
                    let first_line = self.line_of(positions[first].element);
                    let reason = match kind {
                        "id" => format!(
                            "duplicate counter id {}: counter `{}` at line {first_line} has it too",
                            counter.id, first_counter.symbol
                        ),
                        "name" if counter.name == first_counter.name => format!(
                            "duplicate counter name `{}`: counter `{}` at line {first_line} has it too",
                            counter.name, first_counter.symbol
                        ),
                        "name" => format!(
                            "counter name `{}` differs only in case from `{}` (counter `{}` at line {first_line}); \
                             PDH compares counter names ignoring case",
                            counter.name, first_counter.name, first_counter.symbol
                        ),
                        "constant" => format!(
                            "counter symbol `{}` becomes the Rust constant `{key}`, as does `{}` at line {first_line}",
                            counter.symbol, first_counter.symbol
                        ),
                        _ => format!(
                            "duplicate counter {kind} `{}`: counter at line {first_line} has it too",
                            if kind == "uri" { &counter.uri } else { &counter.symbol }
                        ),
                    };
                    return Err(self.error(pos, reason));
                }
                seen.insert((kind, key), i);
            }
        }
        Ok(())
    }

    /// PDH reads a fraction's denominator from the counter right after it: a counter whose type needs
    /// a base is immediately followed by a counter of that base type, and a base counter immediately
    /// follows a counter that needs it.
    fn bases(&self, counters: &[Counter], positions: &[CounterPositions]) -> Result<()> {
        for (i, counter) in counters.iter().enumerate() {
            if counter.ty.is_base {
                let serves =
                    i.checked_sub(1).map(|p| &counters[p]).filter(|p| p.ty.base == Some(counter.ty.name));
                if serves.is_none() {
                    let users = types::users_of_base(counter.ty.name).join(" or ");
                    let after = match i.checked_sub(1) {
                        None => "it is the first counter of the counterSet".to_owned(),
                        Some(p) => format!("it follows `{}` ({})", counters[p].symbol, counters[p].ty.name),
                    };
                    return Err(self.error(
                        positions[i].ty,
                        format!(
                            "base counter `{}` ({}) must come immediately after the counter it serves ({users}); \
                             {after}",
                            counter.symbol, counter.ty.name
                        ),
                    ));
                }
            }
            if let Some(base) = counter.ty.base {
                let next = counters.get(i + 1);
                if next.is_none_or(|next| next.ty.name != base) {
                    let found = match next {
                        None => "it is the last counter of the counterSet".to_owned(),
                        Some(next) => format!("the next counter, `{}`, is {}", next.symbol, next.ty.name),
                    };
                    return Err(self.error(
                        positions[i].ty,
                        format!(
                            "counter `{}` ({}) must be immediately followed by its base, a {base} counter; {found}",
                            counter.symbol, counter.ty.name
                        ),
                    ));
                }
                if let Some((base_id, pos)) = positions[i].base_id
                    && base_id != counters[i + 1].id
                {
                    return Err(self.error(
                        pos,
                        format!(
                            "baseID {base_id} is not the id of the next counter `{}` ({}), which PDH uses as the base",
                            counters[i + 1].symbol,
                            counters[i + 1].id
                        ),
                    ));
                }
            } else if let Some((_, pos)) = positions[i].base_id {
                return Err(self.error(
                    pos,
                    format!(
                        "counter `{}` has a baseID but its type {} takes no base",
                        counter.symbol, counter.ty.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// perfTimeID, perfFreqID and multiCounterID name counters of the same counterset.
    fn cross_references(&self, counters: &[Counter], positions: &[CounterPositions]) -> Result<()> {
        for pos in positions {
            for &(name, id, at) in &pos.other_ids {
                if !counters.iter().any(|c| c.id == id) {
                    return Err(
                        self.error(at, format!("{name} {id} is not the id of a counter of this counterSet"))
                    );
                }
            }
        }
        Ok(())
    }

    /// Counters sharing a field agree on its size; distinct fields are distinct Rust fields.
    fn layout(&self, counters: &[Counter], positions: &[CounterPositions]) -> Result<Layout> {
        let mut first_of_field: HashMap<&str, usize> = HashMap::new();
        let mut first_of_rust: HashMap<String, usize> = HashMap::new();
        for (i, counter) in counters.iter().enumerate() {
            if let Some(&first) = first_of_field.get(counter.field.as_str()) {
                let other = &counters[first];
                if other.ty.size != counter.ty.size {
                    return Err(self.error(
                        positions[i].field,
                        format!(
                            "field `{}` is {} bytes for counter `{}` ({}) but {} bytes for counter `{}` ({}, line {}); \
                             counters sharing a field must have the same size",
                            counter.field,
                            counter.ty.size,
                            counter.symbol,
                            counter.ty.name,
                            other.ty.size,
                            other.symbol,
                            other.ty.name,
                            self.line_of(positions[first].element)
                        ),
                    ));
                }
                continue;
            }
            first_of_field.insert(&counter.field, i);
            let rust = snake_case(&counter.field);
            if let Some(&first) = first_of_rust.get(&rust) {
                return Err(self.error(
                    positions[i].field,
                    format!(
                        "field `{}` becomes the Rust field `{rust}`, as does field `{}` (line {})",
                        counter.field,
                        counters[first].field,
                        self.line_of(positions[first].element)
                    ),
                ));
            }
            first_of_rust.insert(rust, i);
        }
        Ok(Layout::compute(counters, snake_case))
    }

    /// The string resource ids (assigned, or fixed by nameID/descriptionID) are distinct and fit a
    /// string table (16 bits).
    fn check_string_ids(&self, manifest: &Manifest, positions: &[SetPositions]) -> Result<()> {
        let strings = resources::string_resources(manifest);
        let mut seen: HashMap<u32, usize> = HashMap::new();
        for (i, string) in strings.iter().enumerate() {
            let set = &positions[string.set];
            let (name_id, description_id, element) = match string.counter {
                None => (set.name_id, set.description_id, set.element),
                Some(c) => {
                    let counter = &set.counters[c];
                    (counter.name_id, counter.description_id, counter.element)
                }
            };
            let explicit = match string.kind {
                StringKind::Name | StringKind::LockedName => name_id,
                StringKind::Description => description_id,
            };
            let pos = explicit.unwrap_or(element);
            if string.id > u32::from(u16::MAX) {
                return Err(self.error(
                    pos,
                    format!(
                        "the {} gets resource id {}, beyond a string table's 65535 (lower resourceBase or the \
                         nameID/descriptionID)",
                        string.what(manifest),
                        string.id
                    ),
                ));
            }
            if let Some(&first) = seen.get(&string.id) {
                return Err(self.error(
                    pos,
                    format!(
                        "the {} gets resource id {}, already used by the {}",
                        string.what(manifest),
                        string.id,
                        strings[first].what(manifest)
                    ),
                ));
            }
            seen.insert(string.id, i);
        }
        Ok(())
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
