//! The validated manifest: what [`crate::parse`] read, with the schema's defaults filled in and every
//! `$(string.ID)` reference replaced by its text.

use crate::types::CounterType;

/// A manifest that passed every check of [`crate::parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The one `<provider>` of `<counters>`.
    pub provider: Provider,
    /// The provider's `<counterSet>` elements, in document order.
    pub counter_sets: Vec<CounterSet>,
}

/// The `<provider>` element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provider {
    /// `providerName`, or the schema's default `Counters` when it is absent.
    pub name: String,
    /// `providerGuid`, as written (`{8-4-4-4-12}`).
    pub guid: String,
    /// `applicationIdentity`: the binary whose string resources hold the names (`pmupcw.sys`).
    pub application_identity: String,
    /// `resourceBase`: the first string resource id CTRPP assigns.
    pub resource_base: u32,
}

/// How a counterset's instances are reported (`instances`; the schema's default is `single`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instances {
    /// `single`: one unnamed instance.
    Single,
    /// `multiple`: named instances.
    Multiple,
    /// `globalAggregate`: one instance that consumers see as the aggregate of the provider's.
    GlobalAggregate,
    /// `multipleAggregate`: named instances and a `_Total` aggregating them.
    MultipleAggregate,
    /// `globalAggregateHistory`: like `globalAggregate`, keeping a history.
    GlobalAggregateHistory,
    /// `instanceAggregate`: instances aggregated by name.
    InstanceAggregate,
}

impl Instances {
    /// Every value with its manifest spelling.
    pub const ALL: &'static [(&'static str, Instances)] = &[
        ("single", Instances::Single),
        ("multiple", Instances::Multiple),
        ("globalAggregate", Instances::GlobalAggregate),
        ("multipleAggregate", Instances::MultipleAggregate),
        ("globalAggregateHistory", Instances::GlobalAggregateHistory),
        ("instanceAggregate", Instances::InstanceAggregate),
    ];

    /// The manifest's spelling.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, i)| *i == self).map(|(name, _)| *name).unwrap_or_default()
    }

    /// Whether the provider reports more than one instance (everything but `single`).
    pub fn is_multiple(self) -> bool {
        self != Instances::Single
    }
}

/// A `<counterSet>` element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterSet {
    /// `guid`, as written.
    pub guid: String,
    /// `uri`.
    pub uri: String,
    /// `name` (resolved if it was a `$(string.ID)` reference): the counterset's name in PDH paths.
    pub name: String,
    /// `description` (resolved if it was a `$(string.ID)` reference).
    pub description: String,
    /// `symbol`: a C identifier, whose snake_case names the generated Rust module.
    pub symbol: String,
    /// `instances`, or [`Instances::Single`] when it is absent.
    pub instances: Instances,
    /// `nameID`, if the manifest fixes the name's string resource id.
    pub name_id: Option<u32>,
    /// `descriptionID`, if the manifest fixes the description's string resource id.
    pub description_id: Option<u32>,
    /// The one `<struct>`'s `name` (a counter's `struct`, when given, names it).
    pub struct_name: String,
    /// The one `<struct>`'s `type` (the C type name), if given.
    pub struct_type: Option<String>,
    /// In manifest order.
    pub counters: Vec<Counter>,
    /// The data block's fields, in layout order (computed from the counters).
    pub layout: Layout,
}

/// A `<counter>` element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counter {
    /// 0..=63.
    pub id: u32,
    /// `uri`.
    pub uri: String,
    /// `name` (resolved if it was a `$(string.ID)` reference). `None` only for a `noDisplay` counter
    /// without name and description, which has no strings.
    pub name: Option<String>,
    /// `description` (resolved if it was a `$(string.ID)` reference); `None` exactly when `name` is.
    pub description: Option<String>,
    /// `symbol`, if the manifest gives one (a C identifier).
    pub symbol: Option<String>,
    /// The Rust constant of the counter's id in the generated `id` module, SCREAMING_SNAKE_CASE: from
    /// `symbol`, else from `name`, else from `field` ([`crate::counter_constant`] has the rule).
    pub constant: String,
    /// `type`.
    pub ty: &'static CounterType,
    /// `detailLevel`.
    pub detail_level: DetailLevel,
    /// `aggregate`, as written (sum, avg, min, max, undefined), if present.
    pub aggregate: Option<String>,
    /// `field` as written (a C identifier).
    pub field: String,
    /// `nameID`, if the manifest fixes the name's string resource id.
    pub name_id: Option<u32>,
    /// `descriptionID`, if the manifest fixes the description's string resource id.
    pub description_id: Option<u32>,
    /// Whether `<counterAttributes>` has `noDisplay`: consumers do not show the counter (a base).
    pub no_display: bool,
}

impl Counter {
    /// How messages and generated comments name the counter: its symbol, else its name, else its field.
    pub fn label(&self) -> &str {
        self.symbol.as_deref().or(self.name.as_deref()).unwrap_or(&self.field)
    }
}

/// `detailLevel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetailLevel {
    /// `standard`: for any user.
    Standard,
    /// `advanced`: for users who know the subject.
    Advanced,
}

impl DetailLevel {
    /// The manifest's spelling.
    pub fn name(self) -> &'static str {
        match self {
            DetailLevel::Standard => "standard",
            DetailLevel::Advanced => "advanced",
        }
    }
}

/// A counterset's data block: `#[repr(C)]` with every 8-byte field first, then every 4-byte field, then
/// a 4-byte `reserved` tail if the 4-byte fields are odd in number, so there is no padding anywhere.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// In layout order.
    pub fields: Vec<Field>,
    /// Whether a `reserved: u32` tail follows the fields.
    pub reserved_tail: bool,
    /// Total size in bytes: the sum of the field sizes (and the tail), always a multiple of 8. rustc's
    /// layout of the generated struct has the same size because no field needs padding before it.
    pub size: u32,
}

/// One field of a data block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The manifest's `field`.
    pub manifest_name: String,
    /// Its snake_case Rust name.
    pub rust_name: String,
    /// 4 or 8.
    pub size: u32,
    /// Bytes from the start of the block.
    pub offset: u32,
    /// Bit i set: counter id i reads this field.
    pub readers: u64,
}

impl Layout {
    /// The field the manifest calls `manifest_name`.
    pub fn field(&self, manifest_name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.manifest_name == manifest_name)
    }

    /// Lays out `counters` (already checked: sizes of a shared field agree).
    pub fn compute(counters: &[Counter], rust_name: impl Fn(&str) -> String) -> Layout {
        let mut fields: Vec<Field> = Vec::new();
        for counter in counters {
            let bit = 1u64 << counter.id;
            match fields.iter_mut().find(|f| f.manifest_name == counter.field) {
                Some(field) => field.readers |= bit,
                None => fields.push(Field {
                    manifest_name: counter.field.clone(),
                    rust_name: rust_name(&counter.field),
                    size: counter.ty.size,
                    offset: 0,
                    readers: bit,
                }),
            }
        }
        // Stable sort: 8-byte fields first, each group in order of first appearance.
        fields.sort_by_key(|f| std::cmp::Reverse(f.size));
        let mut offset = 0;
        for field in &mut fields {
            field.offset = offset;
            offset += field.size;
        }
        let four_byte = fields.iter().filter(|f| f.size == 4).count();
        let reserved_tail = four_byte % 2 == 1;
        if reserved_tail {
            offset += 4;
        }
        Layout { fields, reserved_tail, size: offset }
    }
}
