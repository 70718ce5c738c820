//! The checks that involve more than one element, run on the model once it is read, with the
//! positions the reader kept: unique counterset and counter keys, base counters placed where PDH reads
//! them, cross-references between counters, the data block layout, and the string resource ids.

use std::collections::HashMap;

use roxmltree::Node;

use super::{CounterPositions, Cx, Result, SetPositions};
use crate::model::{Counter, CounterSet, Layout, Manifest};
use crate::names::{screaming_snake_case, snake_case};
use crate::resources::{self, StringKind};
use crate::types;

impl Cx<'_, '_> {
    /// Counterset guids, names, symbols and uris are unique; so are the Rust modules the symbols become.
    pub(super) fn unique_sets(&self, provider: Node, sets: &[CounterSet]) -> Result<()> {
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

    /// Ids, uris and symbols are unique in a counterset, names too ignoring case (PDH looks counters up
    /// by name without regard to case), and the Rust constants the symbols become.
    pub(super) fn unique_counters(&self, counters: &[Counter], positions: &[CounterPositions]) -> Result<()> {
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
    pub(super) fn bases(&self, counters: &[Counter], positions: &[CounterPositions]) -> Result<()> {
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
    pub(super) fn cross_references(
        &self,
        counters: &[Counter],
        positions: &[CounterPositions],
    ) -> Result<()> {
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
    pub(super) fn layout(&self, counters: &[Counter], positions: &[CounterPositions]) -> Result<Layout> {
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
    pub(super) fn check_string_ids(&self, manifest: &Manifest, positions: &[SetPositions]) -> Result<()> {
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
