//! The legacy consumer view (PM_COLLECT_PROC, winperf.h): collected data formatted as winperf.h
//! `PERF_OBJECT_TYPE` blocks, and a validator with perflib's `ExtCounterTestLevel` 1 checks.
//!
//! The structures are winperf.h's for x64 (the `LPWSTR` title members are `DWORD`s under `_WIN64`) as
//! `#[repr(C)]` types, their sizes and offsets asserted below. A block is laid out as "Performance
//! Data Format" (learn.microsoft.com/windows/win32/perfctrs/performance-data-format) shows: a
//! `PERF_OBJECT_TYPE`, its `PERF_COUNTER_DEFINITION`s, then one `PERF_COUNTER_BLOCK` (NumInstances =
//! `PERF_NO_INSTANCES`) or, per instance, a `PERF_INSTANCE_DEFINITION` with its UTF-16 name and a
//! `PERF_COUNTER_BLOCK`; TotalByteLength is the offset of the next object. [`super::legacy_reader`]
//! reads the blocks back through the same types.
//!
//! [`validate_collect`], [`validate_objects`] and [`validate_data_block`] make the ExtCounterTestLevel 1
//! checks that PM_COLLECT_PROC's Remarks on Microsoft Learn list (perf_object/validate.rs says which).

use std::mem::{offset_of, size_of};

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const OBJECT_TYPE_SIZE: u32 = 64;
pub const COUNTER_DEFINITION_SIZE: u32 = 40;
pub const INSTANCE_DEFINITION_SIZE: u32 = 24;
pub const DATA_BLOCK_SIZE: u32 = 88;
/// winperf.h: NumInstances of an object without instances.
pub const PERF_NO_INSTANCES: i32 = -1;
/// winperf.h: UniqueID of an instance identified by its name.
pub const PERF_NO_UNIQUE_ID: i32 = -1;
pub const PERF_DETAIL_NOVICE: u32 = 100;
pub const PERF_DETAIL_ADVANCED: u32 = 200;
/// winperf.h: PERF_DATA_VERSION and PERF_DATA_REVISION.
pub const PERF_DATA_VERSION: u32 = 1;
pub const PERF_DATA_REVISION: u32 = 1;
/// PERF_DATA_BLOCK's Signature: L"PERF".
const SIGNATURE: [u16; 4] = [b'P' as u16, b'E' as u16, b'R' as u16, b'F' as u16];

/// winperf.h's PERF_DATA_BLOCK: what RegQueryValueEx(HKEY_PERFORMANCE_DATA) returns ahead of the
/// objects, followed by the system name (HeaderLength is the offset of the first object).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct PerfDataBlock {
    pub signature: [u16; 4],
    pub little_endian: u32,
    pub version: u32,
    pub revision: u32,
    pub total_byte_length: u32,
    pub header_length: u32,
    pub num_object_types: u32,
    pub default_object: i32,
    /// SYSTEMTIME (UTC): see [`system_time`].
    pub system_time: [u16; 8],
    /// The padding before PerfTime, a LARGE_INTEGER aligned to 8.
    pub padding: u32,
    pub perf_time: i64,
    pub perf_freq: i64,
    pub perf_time_100n_sec: i64,
    pub system_name_length: u32,
    pub system_name_offset: u32,
}

/// winperf.h's PERF_OBJECT_TYPE.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct PerfObjectType {
    pub total_byte_length: u32,
    /// HeaderLength plus the PERF_COUNTER_DEFINITIONs.
    pub definition_length: u32,
    pub header_length: u32,
    pub object_name_title_index: u32,
    pub object_name_title: u32,
    pub object_help_title_index: u32,
    pub object_help_title: u32,
    pub detail_level: u32,
    pub num_counters: u32,
    pub default_counter: i32,
    pub num_instances: i32,
    /// 0: the instance names are UTF-16.
    pub code_page: u32,
    pub perf_time: i64,
    pub perf_freq: i64,
}

/// winperf.h's PERF_COUNTER_DEFINITION.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct PerfCounterDefinition {
    pub byte_length: u32,
    pub counter_name_title_index: u32,
    pub counter_name_title: u32,
    pub counter_help_title_index: u32,
    pub counter_help_title: u32,
    pub default_scale: i32,
    pub detail_level: u32,
    pub counter_type: u32,
    pub counter_size: u32,
    /// From the start of the PERF_COUNTER_BLOCK.
    pub counter_offset: u32,
}

/// winperf.h's PERF_INSTANCE_DEFINITION.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct PerfInstanceDefinition {
    /// This structure and the name, padded to 8.
    pub byte_length: u32,
    pub parent_object_title_index: u32,
    pub parent_object_instance: u32,
    pub unique_id: i32,
    pub name_offset: u32,
    /// In bytes, with the terminating NUL.
    pub name_length: u32,
}

/// winperf.h's PERF_COUNTER_BLOCK, ahead of the counter data.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct PerfCounterBlock {
    /// This structure and the counter data, padded to 8.
    pub byte_length: u32,
}

// The x64 sizes and offsets of winperf.h's structures (Microsoft Learn's pages for each give the
// members; LARGE_INTEGER is 8-byte aligned). The data is little-endian (PERF_DATA_BLOCK.LittleEndian).
const _: () = {
    assert!(cfg!(target_endian = "little"));
    assert!(size_of::<PerfDataBlock>() == DATA_BLOCK_SIZE as usize);
    assert!(offset_of!(PerfDataBlock, system_time) == 36 && offset_of!(PerfDataBlock, perf_time) == 56);
    assert!(offset_of!(PerfDataBlock, system_name_offset) == 84);
    assert!(size_of::<PerfObjectType>() == OBJECT_TYPE_SIZE as usize);
    assert!(offset_of!(PerfObjectType, num_instances) == 40 && offset_of!(PerfObjectType, perf_time) == 48);
    assert!(size_of::<PerfCounterDefinition>() == COUNTER_DEFINITION_SIZE as usize);
    assert!(offset_of!(PerfCounterDefinition, counter_offset) == 36);
    assert!(size_of::<PerfInstanceDefinition>() == INSTANCE_DEFINITION_SIZE as usize);
    assert!(offset_of!(PerfInstanceDefinition, name_length) == 20);
    assert!(size_of::<PerfCounterBlock>() == 4);
};

/// A `T` read from `data` at `at`, if it is all there.
fn read<T: FromBytes>(data: &[u8], at: u64) -> Option<T> {
    T::read_from_prefix(data.get(usize::try_from(at).ok()?..)?).ok().map(|(value, _)| value)
}

/// One counter's definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterDefinition {
    pub name_index: u32,
    pub help_index: u32,
    pub detail_level: u32,
    pub counter_type: u32,
    /// Bytes of data: 4 or 8.
    pub size: u32,
}

/// The instances of an object and their counter data (one value per counter definition).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectInstances {
    /// A single-instance object: one counter block, NumInstances = PERF_NO_INSTANCES.
    Single(Vec<u64>),
    /// Named instances.
    Multiple(Vec<(String, Vec<u64>)>),
}

/// One object (counterset) to format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectData {
    pub name_index: u32,
    pub help_index: u32,
    pub counters: Vec<CounterDefinition>,
    pub instances: ObjectInstances,
    pub perf_time: i64,
    pub perf_freq: i64,
}

fn align8(value: u32) -> u32 {
    value.next_multiple_of(8)
}

/// Each counter's CounterOffset in the counter block (after the block's ByteLength DWORD, each aligned
/// to its size) and the block's ByteLength (padded to 8).
pub fn counter_block_layout(counters: &[CounterDefinition]) -> (Vec<u32>, u32) {
    let mut offset = size_of::<PerfCounterBlock>() as u32;
    let offsets = counters
        .iter()
        .map(|counter| {
            let at = offset.next_multiple_of(counter.size.max(1));
            offset = at + counter.size;
            at
        })
        .collect();
    (offsets, align8(offset))
}

fn counter_block(bytes: &mut Vec<u8>, counters: &[CounterDefinition], values: &[u64]) {
    let (offsets, byte_length) = counter_block_layout(counters);
    let start = bytes.len();
    bytes.extend_from_slice(PerfCounterBlock { byte_length }.as_bytes());
    bytes.resize(start + byte_length as usize, 0);
    for ((counter, &offset), &value) in counters.iter().zip(&offsets).zip(values) {
        let at = start + offset as usize;
        if counter.size == 8 {
            bytes[at..at + 8].copy_from_slice(value.as_bytes());
        } else {
            bytes[at..at + 4].copy_from_slice((value as u32).as_bytes());
        }
    }
}

/// The object as a PERF_OBJECT_TYPE block.
pub fn format_object(object: &ObjectData) -> Vec<u8> {
    let num_counters = object.counters.len() as u32;
    let mut header = PerfObjectType {
        definition_length: OBJECT_TYPE_SIZE + COUNTER_DEFINITION_SIZE * num_counters,
        header_length: OBJECT_TYPE_SIZE,
        object_name_title_index: object.name_index,
        object_help_title_index: object.help_index,
        detail_level: object.counters.iter().map(|c| c.detail_level).min().unwrap_or(PERF_DETAIL_NOVICE),
        num_counters,
        num_instances: match &object.instances {
            ObjectInstances::Single(_) => PERF_NO_INSTANCES,
            ObjectInstances::Multiple(instances) => instances.len() as i32,
        },
        perf_time: object.perf_time,
        perf_freq: object.perf_freq,
        ..PerfObjectType::default()
    };
    let mut bytes = header.as_bytes().to_vec();
    let (offsets, _) = counter_block_layout(&object.counters);
    for (counter, counter_offset) in object.counters.iter().zip(offsets) {
        let definition = PerfCounterDefinition {
            byte_length: COUNTER_DEFINITION_SIZE,
            counter_name_title_index: counter.name_index,
            counter_help_title_index: counter.help_index,
            detail_level: counter.detail_level,
            counter_type: counter.counter_type,
            counter_size: counter.size,
            counter_offset,
            ..PerfCounterDefinition::default()
        };
        bytes.extend_from_slice(definition.as_bytes());
    }
    match &object.instances {
        ObjectInstances::Single(values) => counter_block(&mut bytes, &object.counters, values),
        ObjectInstances::Multiple(instances) => {
            for (name, values) in instances {
                let units: Vec<u16> = name.encode_utf16().chain([0]).collect();
                let name_length = units.as_bytes().len() as u32;
                let instance = PerfInstanceDefinition {
                    byte_length: align8(INSTANCE_DEFINITION_SIZE + name_length),
                    unique_id: PERF_NO_UNIQUE_ID,
                    name_offset: INSTANCE_DEFINITION_SIZE,
                    name_length,
                    ..PerfInstanceDefinition::default()
                };
                let start = bytes.len();
                bytes.extend_from_slice(instance.as_bytes());
                bytes.extend_from_slice(units.as_bytes());
                bytes.resize(start + instance.byte_length as usize, 0);
                counter_block(&mut bytes, &object.counters, values);
            }
        }
    }
    header.total_byte_length = bytes.len() as u32;
    bytes[..size_of::<PerfObjectType>()].copy_from_slice(header.as_bytes());
    bytes
}

/// 100 ns intervals from 1601-01-01 (FILETIME's epoch) to 1970-01-01.
const FILETIME_UNIX_EPOCH: i64 = 116_444_736_000_000_000;

/// What perflib puts in a PERF_DATA_BLOCK around the objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataBlockHeader {
    pub system_name: String,
    /// Wall-clock time of the collect, milliseconds since the Unix epoch (SystemTime, PerfTime100nSec).
    pub unix_millis: i64,
    pub perf_time: i64,
    pub perf_freq: i64,
}

/// SYSTEMTIME (UTC) of a Unix time in milliseconds: year, month, day of week (0 Sunday), day, hour,
/// minute, second, milliseconds.
pub fn system_time(unix_millis: i64) -> [u16; 8] {
    let time = super::csv::utc(unix_millis);
    [
        time.year() as u16,
        u16::from(u8::from(time.month())),
        u16::from(time.weekday().number_days_from_sunday()),
        u16::from(time.day()),
        u16::from(time.hour()),
        u16::from(time.minute()),
        u16::from(time.second()),
        time.millisecond(),
    ]
}

/// A PERF_DATA_BLOCK holding `objects` (formatted PERF_OBJECT_TYPE blocks).
pub fn format_data_block(header: &DataBlockHeader, objects: &[Vec<u8>]) -> Vec<u8> {
    let units: Vec<u16> = header.system_name.encode_utf16().chain([0]).collect();
    let mut name = units.as_bytes().to_vec();
    let system_name_length = name.len() as u32;
    name.resize(align8(system_name_length) as usize, 0);
    let header_length = DATA_BLOCK_SIZE + name.len() as u32;
    let total = header_length as usize + objects.iter().map(Vec::len).sum::<usize>();
    let title = offset_of!(PerfObjectType, object_name_title_index) as u64;
    let block = PerfDataBlock {
        signature: SIGNATURE,
        little_endian: 1,
        version: PERF_DATA_VERSION,
        revision: PERF_DATA_REVISION,
        total_byte_length: total as u32,
        header_length,
        num_object_types: objects.len() as u32,
        default_object: objects.first().and_then(|object| read(object, title)).unwrap_or(0),
        system_time: system_time(header.unix_millis),
        padding: 0,
        perf_time: header.perf_time,
        perf_freq: header.perf_freq,
        perf_time_100n_sec: header.unix_millis * 10_000 + FILETIME_UNIX_EPOCH,
        system_name_length,
        system_name_offset: DATA_BLOCK_SIZE,
    };
    let mut bytes = block.as_bytes().to_vec();
    bytes.extend_from_slice(&name);
    for object in objects {
        bytes.extend_from_slice(object);
    }
    bytes
}

mod validate;
pub use validate::{
    CollectReturn, ERROR_MORE_DATA, ERROR_SUCCESS, Fault, GUARD_SIZE, GuardedBuffer, collect_into,
    validate_collect, validate_data_block, validate_objects,
};

#[cfg(test)]
mod tests;
