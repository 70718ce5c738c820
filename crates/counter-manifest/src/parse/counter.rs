//! Reading one `<counter>` element, and its `<counterAttributes>`, into the model.

use roxmltree::Node;

use super::{CounterPositions, Cx, MAX_COUNTER_ID, Pos, Result};
use crate::model::{Counter, DetailLevel};
use crate::names::{
    constant_problem, counter_constant, is_c_identifier, rust_name_problem, screaming_snake_case, snake_case,
};
use crate::types::{self, CounterType};

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
const AGGREGATES: &[&str] = &["sum", "avg", "min", "max", "undefined"];
const COUNTER_ATTRIBUTE_NAMES: &[&str] =
    &["reference", "noDisplay", "noDigitGrouping", "displayAsHex", "displayAsReal"];

/// A counter's `name` and `description`, resolved, with the name's position.
type Strings = Option<((String, Pos), String)>;

impl<'a, 'input> Cx<'a, 'input> {
    pub(super) fn counter(
        &self,
        node: Node<'a, 'input>,
        struct_name: &str,
    ) -> Result<(Counter, CounterPositions)> {
        self.known_attributes(node, COUNTER_ATTRIBUTES)?;
        let (id, id_pos) = self.counter_id(node)?;
        let (uri, uri_pos) = self.required_text(node, "uri")?;
        let no_display = self.counter_attributes(node)?;
        let symbol = self.optional_symbol(node)?;
        let strings = self.counter_strings(node, no_display)?;
        let (ty, ty_pos) = self.counter_type(node)?;
        let detail_level = self.detail_level(node)?;
        let aggregate = self.aggregate(node)?;
        self.default_scale(node)?;
        let (field, field_pos) = self.field(node, struct_name)?;
        let (constant, constant_pos) = self.constant(node, &symbol, &strings, (&field, field_pos))?;

        let mut other_ids = Vec::new();
        for name in ["perfTimeID", "perfFreqID", "multiCounterID"] {
            if let Some((value, pos)) = self.optional_number(node, name)? {
                other_ids.push((name, value, pos));
            }
        }

        let name_id = self.optional_number(node, "nameID")?;
        let description_id = self.optional_number(node, "descriptionID")?;
        let (name, name_pos, description) = match strings {
            Some(((name, pos), description)) => (Some(name), Some(pos), Some(description)),
            None => (None, None, None),
        };
        let counter = Counter {
            id,
            uri,
            name,
            description,
            symbol: symbol.as_ref().map(|(symbol, _)| symbol.clone()),
            constant,
            ty,
            detail_level,
            aggregate,
            field,
            name_id: name_id.map(|(id, _)| id),
            description_id: description_id.map(|(id, _)| id),
            no_display,
        };
        let positions = CounterPositions {
            element: Pos(node.range().start),
            id: id_pos,
            uri: uri_pos,
            name: name_pos,
            symbol: symbol.map(|(_, pos)| pos),
            constant: constant_pos,
            ty: ty_pos,
            field: field_pos,
            base_id: self.optional_number(node, "baseID")?,
            name_id: name_id.map(|(_, pos)| pos),
            description_id: description_id.map(|(_, pos)| pos),
            other_ids,
        };
        Ok((counter, positions))
    }

    /// `name` and `description`: both required, except that a `noDisplay` counter may omit both, and
    /// then has no strings (the counter complex type's page: "You do not have to specify this attribute
    /// if the counter includes the noDisplay attribute",
    /// learn.microsoft.com/windows/win32/perfctrs/performance-counters-counter-complex-type). One of
    /// the two alone is refused: what CTRPP writes for it is not known.
    fn counter_strings(&self, node: Node, no_display: bool) -> Result<Strings> {
        let label =
            || ["symbol", "name", "field", "uri"].iter().find_map(|a| node.attribute(*a)).unwrap_or_default();
        match (node.attribute_node("name"), node.attribute_node("description")) {
            (Some(name), Some(description)) => Ok(Some((
                (self.name_text(&name)?, Pos(name.range().start)),
                self.description_text(&description)?,
            ))),
            (None, None) if no_display => Ok(None),
            (None, None) => Err(self.at_node(
                node,
                "<counter> has no `name` and no `description`: only a counter with the noDisplay attribute \
                 may omit them",
            )),
            (name, _) if no_display => {
                let (has, lacks) =
                    if name.is_some() { ("name", "description") } else { ("description", "name") };
                Err(self.at_node(
                    node,
                    format!(
                        "counter `{}` has a {has} but no {lacks}: a noDisplay counter may omit both or neither \
                         (what CTRPP writes for one of them alone is not known)",
                        label()
                    ),
                ))
            }
            (Some(_), None) => Err(self.required(node, "description").expect_err("absent")),
            (None, Some(_)) => Err(self.required(node, "name").expect_err("absent")),
        }
    }

    /// The Rust constant of the counter's id, and where it comes from: the symbol, else the name
    /// ([`crate::counter_constant`]), else the field.
    fn constant(
        &self,
        node: Node,
        symbol: &Option<(String, Pos)>,
        strings: &Strings,
        (field, field_pos): (&str, Pos),
    ) -> Result<(String, Pos)> {
        let (constant, pos, what, text) = match (symbol, strings) {
            (Some((symbol, pos)), _) => (screaming_snake_case(symbol), *pos, "symbol", symbol.as_str()),
            (None, Some(((name, pos), _))) => (counter_constant(name), *pos, "name", name.as_str()),
            (None, None) => (screaming_snake_case(field), field_pos, "field", field),
        };
        let Some(problem) = constant_problem(&constant) else { return Ok((constant, pos)) };
        let reason = match what {
            "symbol" => format!("counter symbol `{text}` gives no Rust constant ({problem})"),
            _ => format!(
                "counter `{text}` has no symbol, and its {what} gives no Rust constant ({problem}): give it a symbol"
            ),
        };
        Err(self.at_node(node, reason))
    }

    /// `id`: a number PCW's 64-bit counter mask can select.
    fn counter_id(&self, node: Node) -> Result<(u32, Pos)> {
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
        Ok((id, Pos(id_attr.range().start)))
    }

    /// `type`: one of the counter types this generator supports.
    fn counter_type(&self, node: Node) -> Result<(&'static CounterType, Pos)> {
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
        Ok((ty, Pos(ty_attr.range().start)))
    }

    /// `detailLevel`: standard or advanced.
    fn detail_level(&self, node: Node) -> Result<DetailLevel> {
        let detail_attr = self.required(node, "detailLevel")?;
        match detail_attr.value() {
            "standard" => Ok(DetailLevel::Standard),
            "advanced" => Ok(DetailLevel::Advanced),
            other => Err(self
                .at_attr(&detail_attr, format!("detailLevel must be standard or advanced, not `{other}`"))),
        }
    }

    /// `aggregate`, if present: one of the schema's aggregation functions.
    fn aggregate(&self, node: Node) -> Result<Option<String>> {
        match node.attribute_node("aggregate") {
            None => Ok(None),
            Some(attr) if AGGREGATES.contains(&attr.value()) => Ok(Some(attr.value().to_owned())),
            Some(attr) => Err(self.at_attr(
                &attr,
                format!("aggregate must be one of {}, not `{}`", AGGREGATES.join(", "), attr.value()),
            )),
        }
    }

    /// `defaultScale`, if present: the schema's range, -10 to 10.
    fn default_scale(&self, node: Node) -> Result<()> {
        if let Some(attr) = node.attribute_node("defaultScale")
            && !matches!(attr.value().parse::<i32>(), Ok(-10..=10))
        {
            return Err(self.at_attr(
                &attr,
                format!("defaultScale must be an integer from -10 to 10, not `{}`", attr.value()),
            ));
        }
        Ok(())
    }

    /// `struct`, if given, names the counterset's one struct (without it the counter reads that one),
    /// and `field` a C identifier that makes a Rust field other than the generated padding.
    fn field(&self, node: Node, struct_name: &str) -> Result<(String, Pos)> {
        if let Some(struct_attr) = node.attribute_node("struct")
            && struct_attr.value() != struct_name
        {
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
        Ok((field.to_owned(), Pos(field_attr.range().start)))
    }

    /// `<counterAttributes>`: only the schema's attribute names, each once. Whether `noDisplay` is one.
    fn counter_attributes(&self, counter: Node<'a, 'input>) -> Result<bool> {
        let mut seen = false;
        let mut no_display = false;
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
            no_display = names.contains(&"noDisplay");
        }
        Ok(no_display)
    }
}
