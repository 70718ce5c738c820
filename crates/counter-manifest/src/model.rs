//! The validated manifest.

use crate::types::CounterType;

/// A manifest that passed every check of [`crate::parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    pub provider: Provider,
    pub counter_sets: Vec<CounterSet>,
}

/// The `<provider>` element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provider {
    /// `providerName`.
    pub name: String,
    /// `providerGuid`, as written (`{8-4-4-4-12}`).
    pub guid: String,
    /// `applicationIdentity`: the binary whose string resources hold the names (`pmupcw.sys`).
    pub application_identity: String,
    /// `resourceBase`: the first string resource id CTRPP assigns.
    pub resource_base: u32,
}

/// How a counterset's instances are reported (`instances`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instances {
    Single,
    Multiple,
    GlobalAggregate,
    MultipleAggregate,
    GlobalAggregateHistory,
    InstanceAggregate,
}

impl Instances {
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
    pub guid: String,
    pub uri: String,
    pub name: String,
    pub description: String,
    pub symbol: String,
    pub instances: Instances,
    /// `nameID`, if the manifest fixes the name's string resource id.
    pub name_id: Option<u32>,
    /// `descriptionID`, if the manifest fixes the description's string resource id.
    pub description_id: Option<u32>,
    /// The one `<struct>`'s `name`.
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
    pub uri: String,
    pub name: String,
    pub description: String,
    pub symbol: String,
    pub ty: &'static CounterType,
    pub detail_level: DetailLevel,
    /// `aggregate`, as written (sum, avg, min, max, undefined), if present.
    pub aggregate: Option<String>,
    /// `field` as written (a C identifier).
    pub field: String,
    pub name_id: Option<u32>,
    pub description_id: Option<u32>,
}

/// `detailLevel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetailLevel {
    Standard,
    Advanced,
}

impl DetailLevel {
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
