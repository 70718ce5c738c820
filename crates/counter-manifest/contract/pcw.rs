// counter-manifest's contract: the items the generated counter code names as `crate::pcw::...`. A
// driver makes them its crate's `pcw` module (or re-exports them from it); a build script gets this
// text as `counter_manifest::PCW_CONTRACT` and writes it next to the generated code. The file is
// include!d, so it has no inner doc comments.

/// A PCW_COUNTER_DESCRIPTOR (wdm.h): counter `id` is `size` bytes at `offset` in data block
/// `struct_index`. A generated `DESCRIPTORS` table is an array of these, which PcwRegister takes as it
/// is (the same layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterDescriptor {
    /// The manifest's counter `id`: its bit in PCW's counter masks.
    pub id: u16,
    /// Which of an instance's data blocks holds the counter: 0, the counterset's one block.
    pub struct_index: u16,
    /// Bytes from the start of the block.
    pub offset: u16,
    /// Bytes of counter data: 4 or 8.
    pub size: u16,
}

/// A counter data block: a `#[repr(C)]` struct of integers whose bytes PCW copies as the counter
/// descriptors say.
///
/// # Safety
/// Implementors must be `#[repr(C)]` with only integer (or atomic integer) fields and no padding that
/// PCW could read uninitialised. The generated `Values`, `AtomicValues` and `AtomicCells` are (their
/// generated `layout_tests` check rustc's layout against the descriptors).
pub unsafe trait CounterBlock: Sync + 'static {}

/// Whether a counterset has one instance or several.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceKind {
    /// `instances="single"`: one instance, without a name.
    Single,
    /// Any other `instances`: named instances.
    Multiple,
}

/// One counterset of the manifest, as a type (the generated module's `Counterset`): its name, counter
/// descriptors, instance kind and data block come from one place, so code that registers countersets
/// and adds instances through this trait cannot pair one counterset's name with another's descriptors
/// or block.
pub trait Counterset: 'static {
    /// The counterset's name (the manifest's `name`) in UTF-16, without a terminator: what
    /// PcwRegister registers.
    const NAME_UTF16: &'static [u16];
    /// One descriptor per counter, in manifest order.
    const DESCRIPTORS: &'static [CounterDescriptor];
    /// One instance, or several.
    const INSTANCES: InstanceKind;
    /// The data block an instance's counters are read from (the generated `Values`).
    type Values: CountersetBlock<Counterset = Self>;
}

/// A data block generated for one counterset: its `Values`, its `AtomicValues` or its `AtomicCells`
/// (the same layout, for a block updated while PCW reads it). The counterset is known from the block's
/// type.
pub trait CountersetBlock: CounterBlock {
    /// The counterset whose descriptors describe this block.
    type Counterset: Counterset;
    /// The block's values now (each field loaded once, for an atomic block).
    fn values(&self) -> <Self::Counterset as Counterset>::Values;
}

/// Where a field of a counterset's `AtomicCells` is (the generated `CELLS` table): the `i`th 8-byte
/// cell, or the `i`th 4-byte cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// `AtomicCells::wide[i]`.
    Wide(u8),
    /// `AtomicCells::narrow[i]`.
    Narrow(u8),
}
