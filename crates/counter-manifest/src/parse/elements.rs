//! Reading the elements above a counter into the model: `<counters>`, `<provider>`, `<counterSet>`
//! and its `<structs>`, calling the cross-element checks once a counterset or the provider is read.

use roxmltree::Node;

use super::{COUNTERS_NAMESPACE, Cx, Pos, Result, SetPositions};
use crate::model::{CounterSet, Instances, Manifest, Provider};
use crate::names::{is_c_identifier, rust_name_problem, snake_case};

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
const STRUCT_ATTRIBUTES: &[&str] = &["name", "type"];

/// `providerName` when the manifest has none: the schema's default
/// (learn.microsoft.com/windows/win32/perfctrs/performance-counters-provider-complex-type).
const DEFAULT_PROVIDER_NAME: &str = "Counters";

impl<'a, 'input> Cx<'a, 'input> {
    pub(super) fn manifest(&self) -> Result<Manifest> {
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
        // The schema's default for an absent providerName.
        let name = match node.attribute_node("providerName") {
            Some(_) => self.required_text(node, "providerName")?.0,
            None => DEFAULT_PROVIDER_NAME.to_owned(),
        };
        let provider_type = node.attribute_node("providerType").ok_or_else(|| {
            self.at_node(
                node,
                "<provider> has no providerType, which the schema reads as `userMode`; counter-manifest generates \
                 kernel-mode code (PcwRegister): set providerType=\"kernelMode\"",
            )
        })?;
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
        self.nameless_counters(&manifest, &positions)?;
        Ok(manifest)
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
        let instances = self.instances(node)?;
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
                     (counter-manifest lays out one data block per counterSet)"
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

    /// `instances`, or the schema's default `single` when it is absent.
    fn instances(&self, node: Node) -> Result<Instances> {
        let Some(attr) = node.attribute_node("instances") else { return Ok(Instances::Single) };
        Instances::ALL
            .iter()
            .find(|(name, _)| *name == attr.value())
            .map(|(_, instances)| *instances)
            .ok_or_else(|| {
                let names: Vec<&str> = Instances::ALL.iter().map(|(name, _)| *name).collect();
                self.at_attr(
                    &attr,
                    format!("instances must be one of {}, not `{}`", names.join(", "), attr.value()),
                )
            })
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
                         struct (counter-manifest lays out one data block per counterSet)"
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
                     (counter-manifest lays out one data block per counterSet)"
                ),
            )
        })
    }
}
