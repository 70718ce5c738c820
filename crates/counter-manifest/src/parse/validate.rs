//! The checks that involve more than one element, run on the model once it is read, with the
//! positions the reader kept: unique counterset and counter keys, base counters placed where PDH reads
//! them, cross-references between counters, the data block layout, and the string resource ids.

use std::collections::HashMap;

use roxmltree::Node;

use super::{CounterPositions, Cx, Result, SetPositions};
use crate::model::{Counter, CounterSet, Layout, Manifest};
use crate::names::snake_case;
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
    /// by name without regard to case), and the Rust constants the counters become.
    pub(super) fn unique_counters(&self, counters: &[Counter], positions: &[CounterPositions]) -> Result<()> {
        let mut seen: HashMap<(&str, String), usize> = HashMap::new();
        for (i, counter) in counters.iter().enumerate() {
            let pos = &positions[i];
            let keys = [
                Some(("id", counter.id.to_string(), pos.id)),
                Some(("uri", counter.uri.clone(), pos.uri)),
                counter.name.as_ref().zip(pos.name).map(|(name, at)| ("name", name.to_lowercase(), at)),
                counter.symbol.clone().zip(pos.symbol).map(|(symbol, at)| ("symbol", symbol, at)),
                Some(("constant", counter.constant.clone(), pos.constant)),
            ];
            for (kind, key, at) in keys.into_iter().flatten() {
                if let Some(&first) = seen.get(&(kind, key.clone())) {
                    let first_line = self.line_of(positions[first].element);
                    return Err(
                        self.error(at, duplicate_reason(kind, &key, counter, &counters[first], first_line))
                    );
                }
                seen.insert((kind, key), i);
            }
        }
        Ok(())
    }

    /// A base counter is the denominator of the one fraction it serves, and a fraction has exactly one
    /// base, of the type its own type needs. They are linked by position, as readers of the legacy data
    /// layout link them: the base comes right after its fraction ("the base property must immediately
    /// follow the counter property", learn.microsoft.com/windows/win32/wmisdk/base-counter-types), and a
    /// `baseID` on the fraction, if any, names it. A base may also come right before its fraction when the
    /// fraction names it with `baseID`: the counters schema links a fraction to its base by that id
    /// ("the identifier of another counter within the same counter set, whose value is used to calculate
    /// this counter's value", learn.microsoft.com/windows/win32/perfctrs/performance-counters-counter-complex-type),
    /// the version 2 registration carries it (PERF_COUNTER_REG_INFO's BaseCounterId,
    /// learn.microsoft.com/windows/win32/api/perflib/ns-perflib-perf_counter_reg_info), and the Windows
    /// SDK's own user-mode counters sample places its perf_raw_base before the perf_raw_fraction that
    /// names it (Windows-classic-samples, Samples/Win7Samples/winbase/PerfCounters/Basic/CPP/ucs.man).
    /// Without a baseID a base before its fraction is refused: a positional reader would take the counter
    /// after the fraction.
    pub(super) fn bases(&self, counters: &[Counter], positions: &[CounterPositions]) -> Result<()> {
        for (i, counter) in counters.iter().enumerate() {
            if counter.ty.is_base {
                self.base_serves_one(i, counters, positions)?;
            }
            match counter.ty.base {
                Some(base) => self.fraction_has_its_base(i, base, counters, positions)?,
                None => {
                    if let Some((_, pos)) = positions[i].base_id {
                        return Err(self.error(
                            pos,
                            format!(
                                "counter `{}` has a baseID but its type {} takes no base",
                                counter.label(),
                                counter.ty.name
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The base counter `i` serves exactly one fraction: the one before it (unless that one's baseID
    /// names another counter), or the one after it that names it with baseID.
    fn base_serves_one(&self, i: usize, counters: &[Counter], positions: &[CounterPositions]) -> Result<()> {
        let base = &counters[i];
        let needs_this = |j: usize| counters.get(j).is_some_and(|c| c.ty.base == Some(base.ty.name));
        let names_this = |j: usize| positions.get(j).and_then(|p| p.base_id).map(|(id, _)| id == base.id);
        let before = i.checked_sub(1).filter(|&p| needs_this(p) && names_this(p) != Some(false));
        let after = Some(i + 1).filter(|&n| needs_this(n) && names_this(n) == Some(true));
        match (before, after) {
            (Some(p), Some(n)) => Err(self.error(
                positions[n].base_id.expect("names the base").1,
                format!(
                    "base counter `{}` already serves `{}` (line {}): each fraction needs a base of its own",
                    base.label(),
                    counters[p].label(),
                    self.line_of(positions[p].element)
                ),
            )),
            (Some(_), None) | (None, Some(_)) => Ok(()),
            (None, None) => {
                let users = types::users_of_base(base.ty.name).join(" or ");
                let after = match i.checked_sub(1) {
                    None => "it is the first counter of the counterSet".to_owned(),
                    Some(p) => format!("it follows `{}` ({})", counters[p].label(), counters[p].ty.name),
                };
                Err(self.error(
                    positions[i].ty,
                    format!(
                        "base counter `{}` ({}) must come immediately after the counter it serves ({users}), or \
                         immediately before it if that counter names it with baseID; {after}",
                        base.label(),
                        base.ty.name
                    ),
                ))
            }
        }
    }

    /// The fraction `i`, whose type needs a `base` counter, has one: right after it (named by its baseID
    /// if it has one), or right before it and named by its baseID.
    fn fraction_has_its_base(
        &self,
        i: usize,
        base: &str,
        counters: &[Counter],
        positions: &[CounterPositions],
    ) -> Result<()> {
        let counter = &counters[i];
        let next = counters.get(i + 1).filter(|next| next.ty.name == base);
        let previous = i.checked_sub(1).map(|p| &counters[p]).filter(|p| p.ty.name == base);
        match (positions[i].base_id, next) {
            (None, Some(_)) => return Ok(()),
            (Some((id, _)), Some(next)) if next.id == id => return Ok(()),
            (Some((id, _)), _) if previous.is_some_and(|p| p.id == id) => return Ok(()),
            (Some((id, pos)), Some(next)) => {
                return Err(self.error(
                    pos,
                    format!(
                        "baseID {id} is not the id of the next counter `{}` ({}), which PDH uses as the base",
                        next.label(),
                        next.id
                    ),
                ));
            }
            _ => {}
        }
        let found = match counters.get(i + 1) {
            None => "it is the last counter of the counterSet".to_owned(),
            Some(next) => format!("the next counter, `{}`, is {}", next.label(), next.ty.name),
        };
        Err(self.error(
            positions[i].ty,
            format!(
                "counter `{}` ({}) must be immediately followed by its base, a {base} counter; {found}",
                counter.label(),
                counter.ty.name
            ),
        ))
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
                            counter.label(),
                            counter.ty.name,
                            other.ty.size,
                            other.label(),
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

    /// A counter without strings (a `noDisplay` counter without name and description) is accepted only
    /// where its place in CTRPP's numbering cannot matter. CTRPP numbers the strings of the k-th
    /// counterSet or counter element 4k+1, 4k+2, 4k+3 ([`resources::element_string_ids`]); whether an
    /// element without strings still counts as one is not settled: the schema says nothing about
    /// resource ids, and none of the real CTRPP output the numbering was checked against has such a
    /// counter. Every later string with a positional id would move by four if it counts, so the counter
    /// is refused unless no later element has one: it is the provider's last element, or every element
    /// after it fixes its ids with nameID and descriptionID (or has no strings itself).
    pub(super) fn nameless_counters(&self, manifest: &Manifest, positions: &[SetPositions]) -> Result<()> {
        let mut elements: Vec<(usize, Option<usize>)> = Vec::new();
        for (s, set) in manifest.counter_sets.iter().enumerate() {
            elements.push((s, None));
            elements.extend((0..set.counters.len()).map(|c| (s, Some(c))));
        }
        let positional = |&(s, c): &(usize, Option<usize>)| {
            let set = &manifest.counter_sets[s];
            match c {
                None => set.name_id.is_none() || set.description_id.is_none(),
                Some(c) => {
                    let counter = &set.counters[c];
                    counter.name.is_some() && (counter.name_id.is_none() || counter.description_id.is_none())
                }
            }
        };
        for (k, &(s, c)) in elements.iter().enumerate() {
            let Some(c) = c else { continue };
            let counter = &manifest.counter_sets[s].counters[c];
            let moved = elements[k + 1..].iter().filter(|e| positional(e)).count();
            if counter.name.is_none() && moved > 0 {
                return Err(self.error(
                    positions[s].counters[c].element,
                    format!(
                        "counter `{}` has no name and no description, and whether CTRPP still counts such a \
                         counter when it numbers string resources is not known: the strings of the {moved} \
                         element{} after it would move if it does. Give it a name and a description (a noDisplay \
                         counter's strings are never shown), or give every element after it a nameID and a \
                         descriptionID",
                        counter.label(),
                        if moved == 1 { "" } else { "s" }
                    ),
                ));
            }
        }
        Ok(())
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

/// Why counter `counter` repeats the `kind` key `key` of `first` (at line `first_line`).
fn duplicate_reason(kind: &str, key: &str, counter: &Counter, first: &Counter, first_line: u32) -> String {
    let (name, first_name) =
        (counter.name.as_deref().unwrap_or_default(), first.name.as_deref().unwrap_or_default());
    match kind {
        "id" => format!(
            "duplicate counter id {}: counter `{}` at line {first_line} has it too",
            counter.id,
            first.label()
        ),
        "name" if name == first_name => {
            format!(
                "duplicate counter name `{name}`: counter `{}` at line {first_line} has it too",
                first.label()
            )
        }
        "name" => format!(
            "counter name `{name}` differs only in case from `{first_name}` (counter `{}` at line {first_line}); PDH \
             compares counter names ignoring case",
            first.label()
        ),
        "constant" => format!(
            "counter `{}` becomes the Rust constant `{key}`, as does counter `{}` at line {first_line}",
            counter.label(),
            first.label()
        ),
        _ => format!("duplicate counter {kind} `{key}`: counter at line {first_line} has it too"),
    }
}
