//! The legacy consumer view (PM_COLLECT_PROC, winperf.h): collected data formatted as winperf.h
//! `PERF_OBJECT_TYPE` blocks, and a validator with perflib's `ExtCounterTestLevel` 1 checks.
//!
//! Layouts (winperf.h, x64, where the `LPWSTR` title members are `DWORD`s under `_WIN64`):
//! * `PERF_OBJECT_TYPE`, 64 bytes: TotalByteLength 0, DefinitionLength 4, HeaderLength 8,
//!   ObjectNameTitleIndex 12, ObjectNameTitle 16, ObjectHelpTitleIndex 20, ObjectHelpTitle 24,
//!   DetailLevel 28, NumCounters 32, DefaultCounter 36, NumInstances 40, CodePage 44, PerfTime 48,
//!   PerfFreq 56. Then NumCounters `PERF_COUNTER_DEFINITION`s (DefinitionLength = HeaderLength + their
//!   sizes), then either one `PERF_COUNTER_BLOCK` (NumInstances = `PERF_NO_INSTANCES`, -1) or, per
//!   instance, a `PERF_INSTANCE_DEFINITION` and its `PERF_COUNTER_BLOCK`. TotalByteLength is the
//!   offset of the next object.
//! * `PERF_COUNTER_DEFINITION`, 40 bytes: ByteLength 0, CounterNameTitleIndex 4, CounterNameTitle 8,
//!   CounterHelpTitleIndex 12, CounterHelpTitle 16, DefaultScale 20, DetailLevel 24, CounterType 28,
//!   CounterSize 32, CounterOffset 36 (from the start of the PERF_COUNTER_BLOCK).
//! * `PERF_INSTANCE_DEFINITION`, 24 bytes: ByteLength 0 (this structure plus the name, padded to 8),
//!   ParentObjectTitleIndex 4, ParentObjectInstance 8, UniqueID 12, NameOffset 16, NameLength 20 (bytes,
//!   with the terminating NUL); the UTF-16 name follows.
//! * `PERF_COUNTER_BLOCK`: ByteLength (this DWORD plus the counter data, padded to 8).
//! * `PERF_DATA_BLOCK`, 88 bytes, what RegQueryValueEx(HKEY_PERFORMANCE_DATA) returns ahead of the
//!   objects: Signature L"PERF" 0, LittleEndian 8, Version 12, Revision 16, TotalByteLength 20,
//!   HeaderLength 24 (the offset of the first object: this structure and the system name), NumObjectTypes
//!   28, DefaultObject 32, SystemTime 36 (SYSTEMTIME, 16 bytes), PerfTime 56, PerfFreq 64,
//!   PerfTime100nSec 72, SystemNameLength 80, SystemNameOffset 84.
//!
//! The checks ([`validate_collect`], [`validate_objects`]) are those PM_COLLECT_PROC's documentation
//! lists for ExtCounterTestLevel 1 (learn.microsoft.com/windows/win32/api/winperf/
//! nc-winperf-pm_collect_proc, "Remarks"): the returned pointer agrees with `lpcbTotalBytes`; no buffer
//! overrun into (or past) the 1 KB guard areas perflib puts before and after the buffer; the guard
//! patterns are intact; the size is 8-byte aligned (`lpcbTotalBytes`: "The size must be 8-byte
//! aligned"); ERROR_MORE_DATA leaves the pointer unchanged and both counts 0; the objects'
//! TotalByteLengths add up to `lpcbTotalBytes`; the instances' ByteLengths are consistent (the next
//! object or the end of the buffer follows the last instance). The structural checks under them
//! (header and definition lengths, counter sizes against the CounterType size bits, counter offsets
//! inside the counter block, instance names inside their instance and NUL-terminated) follow the
//! structures' own documentation on learn.microsoft.com (PERF_OBJECT_TYPE, PERF_COUNTER_DEFINITION,
//! PERF_INSTANCE_DEFINITION, PERF_COUNTER_BLOCK); what perflib's code does beyond that is not public.

use std::fmt;

pub const OBJECT_TYPE_SIZE: u32 = 64;
pub const COUNTER_DEFINITION_SIZE: u32 = 40;
pub const INSTANCE_DEFINITION_SIZE: u32 = 24;
/// winperf.h: NumInstances of an object without instances.
pub const PERF_NO_INSTANCES: i32 = -1;
/// winperf.h: UniqueID of an instance identified by its name.
pub const PERF_NO_UNIQUE_ID: i32 = -1;
pub const PERF_DETAIL_NOVICE: u32 = 100;
pub const PERF_DETAIL_ADVANCED: u32 = 200;
/// The size of perflib's guard areas before and after the consumer's buffer (PM_COLLECT_PROC's Remarks on Microsoft Learn: 1 KB each).
pub const GUARD_SIZE: usize = 1024;
const GUARD_PATTERN: u8 = 0xEE;
pub const ERROR_SUCCESS: u32 = 0;
pub const ERROR_MORE_DATA: u32 = 234;

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
    let mut offset = 4u32;
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

fn put32(bytes: &mut Vec<u8>, value: u32) {
    bytes.extend_from_slice(&value.to_le_bytes());
}

fn counter_block(bytes: &mut Vec<u8>, counters: &[CounterDefinition], values: &[u64]) {
    let (offsets, length) = counter_block_layout(counters);
    let start = bytes.len();
    bytes.resize(start + length as usize, 0);
    bytes[start..start + 4].copy_from_slice(&length.to_le_bytes());
    for ((counter, &offset), &value) in counters.iter().zip(&offsets).zip(values) {
        let at = start + offset as usize;
        if counter.size == 8 {
            bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        } else {
            bytes[at..at + 4].copy_from_slice(&(value as u32).to_le_bytes());
        }
    }
}

/// The object as a PERF_OBJECT_TYPE block.
pub fn format_object(object: &ObjectData) -> Vec<u8> {
    let definition_length = OBJECT_TYPE_SIZE + COUNTER_DEFINITION_SIZE * object.counters.len() as u32;
    let num_instances = match &object.instances {
        ObjectInstances::Single(_) => PERF_NO_INSTANCES,
        ObjectInstances::Multiple(instances) => instances.len() as i32,
    };
    let detail_level = object.counters.iter().map(|c| c.detail_level).min().unwrap_or(PERF_DETAIL_NOVICE);
    let mut bytes = Vec::new();
    for value in [0, definition_length, OBJECT_TYPE_SIZE, object.name_index, 0, object.help_index, 0] {
        put32(&mut bytes, value);
    }
    put32(&mut bytes, detail_level);
    put32(&mut bytes, object.counters.len() as u32);
    put32(&mut bytes, 0); // DefaultCounter
    put32(&mut bytes, num_instances as u32);
    put32(&mut bytes, 0); // CodePage 0: names are UTF-16
    bytes.extend_from_slice(&object.perf_time.to_le_bytes());
    bytes.extend_from_slice(&object.perf_freq.to_le_bytes());
    let (offsets, _) = counter_block_layout(&object.counters);
    for (counter, offset) in object.counters.iter().zip(offsets) {
        for value in [COUNTER_DEFINITION_SIZE, counter.name_index, 0, counter.help_index, 0, 0] {
            put32(&mut bytes, value);
        }
        for value in [counter.detail_level, counter.counter_type, counter.size, offset] {
            put32(&mut bytes, value);
        }
    }
    match &object.instances {
        ObjectInstances::Single(values) => counter_block(&mut bytes, &object.counters, values),
        ObjectInstances::Multiple(instances) => {
            for (name, values) in instances {
                let mut units: Vec<u16> = name.encode_utf16().collect();
                units.push(0);
                let name_length = 2 * units.len() as u32;
                let byte_length = align8(INSTANCE_DEFINITION_SIZE + name_length);
                let start = bytes.len();
                for value in
                    [byte_length, 0, 0, PERF_NO_UNIQUE_ID as u32, INSTANCE_DEFINITION_SIZE, name_length]
                {
                    put32(&mut bytes, value);
                }
                bytes.extend(units.iter().flat_map(|unit| unit.to_le_bytes()));
                bytes.resize(start + byte_length as usize, 0);
                counter_block(&mut bytes, &object.counters, values);
            }
        }
    }
    let total = bytes.len() as u32;
    bytes[0..4].copy_from_slice(&total.to_le_bytes());
    bytes
}

pub const DATA_BLOCK_SIZE: u32 = 88;
/// winperf.h: PERF_DATA_VERSION and PERF_DATA_REVISION.
pub const PERF_DATA_VERSION: u32 = 1;
pub const PERF_DATA_REVISION: u32 = 1;
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
    let mut name: Vec<u8> = header.system_name.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect();
    let name_length = name.len() as u32;
    name.resize(align8(name_length) as usize, 0);
    let header_length = DATA_BLOCK_SIZE + name.len() as u32;
    let total = header_length as usize + objects.iter().map(Vec::len).sum::<usize>();
    let mut bytes: Vec<u8> = "PERF".encode_utf16().flat_map(u16::to_le_bytes).collect();
    for value in [1, PERF_DATA_VERSION, PERF_DATA_REVISION, total as u32, header_length, objects.len() as u32]
    {
        put32(&mut bytes, value);
    }
    let default_object = objects.first().and_then(|object| read32(object, 12)).unwrap_or(0);
    put32(&mut bytes, default_object);
    bytes.extend(system_time(header.unix_millis).iter().flat_map(|value| value.to_le_bytes()));
    put32(&mut bytes, 0); // padding to PerfTime's 8-byte alignment
    let time_100ns = header.unix_millis * 10_000 + FILETIME_UNIX_EPOCH;
    for value in [header.perf_time, header.perf_freq, time_100ns] {
        bytes.extend_from_slice(&value.to_le_bytes());
    }
    put32(&mut bytes, name_length);
    put32(&mut bytes, DATA_BLOCK_SIZE);
    debug_assert_eq!(bytes.len(), DATA_BLOCK_SIZE as usize);
    bytes.extend_from_slice(&name);
    for object in objects {
        bytes.extend_from_slice(object);
    }
    bytes
}

/// The PERF_DATA_BLOCK's own checks (its documented members), then [`validate_objects`] on the objects
/// it holds.
pub fn validate_data_block(bytes: &[u8]) -> Vec<Fault> {
    let mut faults = Vec::new();
    let field = |at: u64| read32(bytes, at);
    let signature: Vec<u8> = "PERF".encode_utf16().flat_map(u16::to_le_bytes).collect();
    if bytes.len() < DATA_BLOCK_SIZE as usize {
        return vec![Fault::BadDataBlock { what: "shorter than PERF_DATA_BLOCK" }];
    }
    if bytes[..8] != signature[..] {
        faults.push(Fault::BadDataBlock { what: "Signature is not \"PERF\"" });
    }
    if field(8) != Some(1) {
        faults.push(Fault::BadDataBlock { what: "LittleEndian is not 1" });
    }
    if field(12).is_none_or(|version| version < PERF_DATA_VERSION) {
        faults.push(Fault::BadDataBlock { what: "Version below 1" });
    }
    let (total, header, objects) = (field(20).unwrap_or(0), field(24).unwrap_or(0), field(28).unwrap_or(0));
    let (name_length, name_offset) = (field(80).unwrap_or(0), field(84).unwrap_or(0));
    if total as usize != bytes.len() {
        faults.push(Fault::BadDataBlock { what: "TotalByteLength is not the data's length" });
    }
    if header < DATA_BLOCK_SIZE || header > total || !header.is_multiple_of(8) {
        faults.push(Fault::BadDataBlock { what: "HeaderLength out of range or not 8-byte aligned" });
        return faults;
    }
    if name_length > 0
        && (name_offset < DATA_BLOCK_SIZE
            || u64::from(name_offset) + u64::from(name_length) > u64::from(header))
    {
        faults.push(Fault::BadDataBlock { what: "the system name is outside the header" });
    }
    let end = (total as usize).min(bytes.len());
    faults.extend(validate_objects(&bytes[header as usize..end], objects));
    faults
}

/// What a check found wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Level 1/2: the returned pointer minus the original is not `lpcbTotalBytes`.
    PointerMismatch { pointer_advance: usize, total_bytes: u32 },
    /// Level 1/2: the returned pointer is past the buffer's end but inside the guard area.
    BufferOverrun { pointer_advance: usize, buffer_size: usize },
    /// Level 1/2: the returned pointer is past the end of the guard area (heap corruption).
    HeapError { pointer_advance: usize, buffer_size: usize },
    /// Level 1/2: a guard area's pattern changed (`before`: the one ahead of the buffer).
    GuardCorrupted { before: bool, offset: usize },
    /// `lpcbTotalBytes` is not 8-byte aligned.
    SizeNotAligned { total_bytes: u32 },
    /// ERROR_MORE_DATA with a moved pointer or non-zero counts.
    MoreDataNotClean,
    /// Level 1: the objects' TotalByteLengths do not add up to `lpcbTotalBytes`.
    ObjectLengthsMismatch { sum: u64, total_bytes: u32 },
    /// Level 1: the instances' (and counter blocks') ByteLengths do not end where the next object or
    /// the buffer does.
    InstanceLengthsInconsistent { object: usize, end: u64, expected: u64 },
    /// An object header (or TotalByteLength) reaches past the data.
    ObjectOutOfRange { object: usize },
    /// A length that must be 8-byte aligned is not.
    NotAligned { object: usize, what: &'static str, value: u32 },
    /// HeaderLength is not sizeof(PERF_OBJECT_TYPE).
    BadHeaderLength { object: usize, value: u32 },
    /// DefinitionLength is not HeaderLength + NumCounters * sizeof(PERF_COUNTER_DEFINITION).
    BadDefinitionLength { object: usize, value: u32, expected: u32 },
    /// A counter definition's ByteLength is not sizeof(PERF_COUNTER_DEFINITION).
    BadCounterDefinitionLength { object: usize, counter: usize, value: u32 },
    /// CounterSize disagrees with the PERF_SIZE_* bits of CounterType.
    CounterSizeMismatch { object: usize, counter: usize, size: u32, counter_type: u32 },
    /// NumInstances is negative but not PERF_NO_INSTANCES.
    BadNumInstances { object: usize, value: i32 },
    /// A counter's data lies outside a counter block (or over its ByteLength DWORD).
    CounterOutsideBlock { object: usize, instance: Option<usize>, counter: usize, offset: u32, block: u32 },
    /// An instance's name lies outside the instance definition, has an odd length or no NUL.
    BadInstanceName { object: usize, instance: usize },
    /// An instance definition or counter block is too short or reaches past its object.
    BadInstanceLength { object: usize, instance: Option<usize>, value: u32 },
    /// A PERF_DATA_BLOCK member is wrong.
    BadDataBlock { what: &'static str },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// A consumer's buffer with perflib's guard areas before and after it, filled with a pattern.
pub struct GuardedBuffer {
    bytes: Vec<u8>,
    size: usize,
}

impl GuardedBuffer {
    pub fn new(size: usize) -> GuardedBuffer {
        GuardedBuffer { bytes: vec![GUARD_PATTERN; size + 2 * GUARD_SIZE], size }
    }

    /// The buffer's size (`*lpcbTotalBytes` on input).
    pub fn size(&self) -> usize {
        self.size
    }

    /// The buffer.
    pub fn data(&self) -> &[u8] {
        &self.bytes[GUARD_SIZE..GUARD_SIZE + self.size]
    }

    /// Everything, guards included (offset GUARD_SIZE is the buffer's first byte): what a faulty
    /// collect can reach.
    pub fn raw_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

/// What a PM_COLLECT_PROC returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollectReturn {
    pub status: u32,
    /// How far the collect moved `*lppData`.
    pub pointer_advance: usize,
    /// `*lpcbTotalBytes` on output.
    pub total_bytes: u32,
    /// `*lpNumObjectTypes` on output.
    pub num_object_types: u32,
}

/// A correct PM_COLLECT_PROC writing `objects` (formatted PERF_OBJECT_TYPE blocks) into `buffer`.
pub fn collect_into(buffer: &mut GuardedBuffer, objects: &[Vec<u8>]) -> CollectReturn {
    let total: usize = objects.iter().map(Vec::len).sum();
    if total > buffer.size() {
        return CollectReturn {
            status: ERROR_MORE_DATA,
            pointer_advance: 0,
            total_bytes: 0,
            num_object_types: 0,
        };
    }
    let mut at = GUARD_SIZE;
    for object in objects {
        buffer.raw_mut()[at..at + object.len()].copy_from_slice(object);
        at += object.len();
    }
    CollectReturn {
        status: ERROR_SUCCESS,
        pointer_advance: total,
        total_bytes: total as u32,
        num_object_types: objects.len() as u32,
    }
}

/// ExtCounterTestLevel 1: the checks on the collect's return values and guard areas, then
/// [`validate_objects`] on the data. Empty when the data passes.
pub fn validate_collect(buffer: &GuardedBuffer, result: &CollectReturn) -> Vec<Fault> {
    let mut faults = Vec::new();
    for (before, range) in
        [(true, 0..GUARD_SIZE), (false, GUARD_SIZE + buffer.size..2 * GUARD_SIZE + buffer.size)]
    {
        if let Some(index) = buffer.bytes[range.clone()].iter().position(|&byte| byte != GUARD_PATTERN) {
            faults.push(Fault::GuardCorrupted { before, offset: range.start + index });
        }
    }
    if result.status == ERROR_MORE_DATA {
        if result.pointer_advance != 0 || result.total_bytes != 0 || result.num_object_types != 0 {
            faults.push(Fault::MoreDataNotClean);
        }
        return faults;
    }
    if result.pointer_advance != result.total_bytes as usize {
        faults.push(Fault::PointerMismatch {
            pointer_advance: result.pointer_advance,
            total_bytes: result.total_bytes,
        });
    }
    if result.pointer_advance > buffer.size {
        let (pointer_advance, buffer_size) = (result.pointer_advance, buffer.size);
        faults.push(if pointer_advance <= buffer.size + GUARD_SIZE {
            Fault::BufferOverrun { pointer_advance, buffer_size }
        } else {
            Fault::HeapError { pointer_advance, buffer_size }
        });
        return faults;
    }
    if !result.total_bytes.is_multiple_of(8) {
        faults.push(Fault::SizeNotAligned { total_bytes: result.total_bytes });
    }
    let length = (result.total_bytes as usize).min(buffer.size);
    faults.extend(validate_objects(&buffer.data()[..length], result.num_object_types));
    faults
}

fn read32(data: &[u8], at: u64) -> Option<u32> {
    let at = usize::try_from(at).ok()?;
    Some(u32::from_le_bytes(data.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

/// PERF_SIZE_* bits of a CounterType: the data size, or None for variable-length.
fn size_of_type(counter_type: u32) -> Option<u32> {
    match counter_type & 0x300 {
        0x000 => Some(4),
        0x100 => Some(8),
        0x200 => Some(0),
        _ => None,
    }
}

/// ExtCounterTestLevel 1's checks on `num_object_types` PERF_OBJECT_TYPE blocks filling `data`.
pub fn validate_objects(data: &[u8], num_object_types: u32) -> Vec<Fault> {
    let mut faults = Vec::new();
    let mut offset = 0u64;
    let mut sum = 0u64;
    for object in 0..num_object_types as usize {
        let header = |field: u64| read32(data, offset + field);
        let (Some(total), Some(definition_length), Some(header_length), Some(num_counters), Some(instances)) =
            (header(0), header(4), header(8), header(32), header(40))
        else {
            faults.push(Fault::ObjectOutOfRange { object });
            break;
        };
        if total < OBJECT_TYPE_SIZE || offset + u64::from(total) > data.len() as u64 {
            faults.push(Fault::ObjectOutOfRange { object });
            sum += u64::from(total);
            break;
        }
        sum += u64::from(total);
        let end = offset + u64::from(total);
        if !total.is_multiple_of(8) {
            faults.push(Fault::NotAligned { object, what: "TotalByteLength", value: total });
        }
        if header_length != OBJECT_TYPE_SIZE {
            faults.push(Fault::BadHeaderLength { object, value: header_length });
        }
        let expected =
            u64::from(header_length) + u64::from(COUNTER_DEFINITION_SIZE) * u64::from(num_counters);
        if u64::from(definition_length) != expected || u64::from(definition_length) > u64::from(total) {
            faults.push(Fault::BadDefinitionLength {
                object,
                value: definition_length,
                expected: expected.min(u64::from(u32::MAX)) as u32,
            });
            offset = end;
            continue;
        }
        let first_definition = offset + u64::from(header_length);
        let counters = counter_definitions(data, object, first_definition, num_counters, &mut faults);
        let first_instance = offset + u64::from(definition_length);
        let walked =
            check_instances(data, object, first_instance, end, instances as i32, &counters, &mut faults);
        if let Some(at) = walked.filter(|&at| at != end) {
            faults.push(Fault::InstanceLengthsInconsistent { object, end: at, expected: end });
        }
        offset = end;
    }
    if sum != data.len() as u64 {
        faults.push(Fault::ObjectLengthsMismatch { sum, total_bytes: data.len() as u32 });
    }
    faults
}

/// Checks object `object`'s `num_counters` PERF_COUNTER_DEFINITIONs, the first at `at`; returns each
/// counter's (Offset, Size) in the counter blocks.
fn counter_definitions(
    data: &[u8],
    object: usize,
    at: u64,
    num_counters: u32,
    faults: &mut Vec<Fault>,
) -> Vec<(u32, u32)> {
    let mut counters = Vec::new();
    for counter in 0..num_counters as usize {
        let definition = at + u64::from(COUNTER_DEFINITION_SIZE) * counter as u64;
        let field = |field: u64| read32(data, definition + field).unwrap_or(0);
        let (length, counter_type, size, counter_offset) = (field(0), field(28), field(32), field(36));
        if length != COUNTER_DEFINITION_SIZE {
            faults.push(Fault::BadCounterDefinitionLength { object, counter, value: length });
        }
        if size_of_type(counter_type).is_some_and(|expected| expected != size) {
            faults.push(Fault::CounterSizeMismatch { object, counter, size, counter_type });
        }
        counters.push((counter_offset, size));
    }
    counters
}

/// Checks the PERF_COUNTER_BLOCK at `at` (object `object`'s own, or its instance `instance`'s), which
/// must end by the object's `end` and hold every counter's (Offset, Size); returns where it ends, or
/// None when its ByteLength is unusable.
fn check_counter_block(
    data: &[u8],
    object: usize,
    instance: Option<usize>,
    at: u64,
    end: u64,
    counters: &[(u32, u32)],
    faults: &mut Vec<Fault>,
) -> Option<u64> {
    let length = read32(data, at).filter(|&length| length >= 4 && at + u64::from(length) <= end);
    let Some(length) = length else {
        faults.push(Fault::BadInstanceLength { object, instance, value: read32(data, at).unwrap_or(0) });
        return None;
    };
    if !length.is_multiple_of(8) {
        faults.push(Fault::NotAligned { object, what: "PERF_COUNTER_BLOCK.ByteLength", value: length });
    }
    for (counter, &(counter_offset, size)) in counters.iter().enumerate() {
        if counter_offset < 4 || u64::from(counter_offset) + u64::from(size) > u64::from(length) {
            faults.push(Fault::CounterOutsideBlock {
                object,
                instance,
                counter,
                offset: counter_offset,
                block: length,
            });
        }
    }
    Some(at + u64::from(length))
}

/// Checks object `object`'s data from `at` (after its definitions) to its `end`: its one counter block
/// (PERF_NO_INSTANCES) or each of its `instances` with its counter block. Returns where the walk
/// stopped, which must be `end`, or None when the data cannot be walked at all.
fn check_instances(
    data: &[u8],
    object: usize,
    mut at: u64,
    end: u64,
    instances: i32,
    counters: &[(u32, u32)],
    faults: &mut Vec<Fault>,
) -> Option<u64> {
    if instances == PERF_NO_INSTANCES {
        return check_counter_block(data, object, None, at, end, counters, faults);
    }
    if instances < 0 {
        faults.push(Fault::BadNumInstances { object, value: instances });
        return None;
    }
    for instance in 0..instances as usize {
        let field = |field: u64| read32(data, at + field);
        let (Some(length), Some(name_offset), Some(name_length)) = (field(0), field(16), field(20)) else {
            faults.push(Fault::InstanceLengthsInconsistent { object, end: at, expected: end });
            break;
        };
        if length < INSTANCE_DEFINITION_SIZE || at + u64::from(length) > end {
            faults.push(Fault::BadInstanceLength { object, instance: Some(instance), value: length });
            break;
        }
        if !length.is_multiple_of(8) {
            faults.push(Fault::NotAligned {
                object,
                what: "PERF_INSTANCE_DEFINITION.ByteLength",
                value: length,
            });
        }
        let name_end = u64::from(name_offset) + u64::from(name_length);
        let name_ok = name_offset >= INSTANCE_DEFINITION_SIZE
            && name_length >= 2
            && name_length.is_multiple_of(2)
            && name_end <= u64::from(length)
            && data.get((at + name_end - 2) as usize..(at + name_end) as usize) == Some(&[0, 0][..]);
        if !name_ok {
            faults.push(Fault::BadInstanceName { object, instance });
        }
        match check_counter_block(data, object, Some(instance), at + u64::from(length), end, counters, faults)
        {
            Some(next) => at = next,
            None => break,
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters() -> Vec<CounterDefinition> {
        vec![
            CounterDefinition {
                name_index: 5,
                help_index: 7,
                detail_level: PERF_DETAIL_NOVICE,
                counter_type: 272696576,
                size: 8,
            },
            CounterDefinition {
                name_index: 9,
                help_index: 11,
                detail_level: PERF_DETAIL_ADVANCED,
                counter_type: 65536,
                size: 4,
            },
            CounterDefinition {
                name_index: 13,
                help_index: 15,
                detail_level: PERF_DETAIL_NOVICE,
                counter_type: 65792,
                size: 8,
            },
        ]
    }

    fn multiple() -> ObjectData {
        ObjectData {
            name_index: 1,
            help_index: 3,
            counters: counters(),
            instances: ObjectInstances::Multiple(vec![
                ("0,0".into(), vec![1, 2, 3]),
                ("0,1".into(), vec![4, 5, 6]),
                ("1,10".into(), vec![7, 8, 9]),
            ]),
            perf_time: 123,
            perf_freq: 10_000_000,
        }
    }

    fn single() -> ObjectData {
        ObjectData { instances: ObjectInstances::Single(vec![10, 20, 30]), ..multiple() }
    }

    fn collected(objects: &[Vec<u8>]) -> (GuardedBuffer, CollectReturn) {
        let mut buffer = GuardedBuffer::new(4096);
        let result = collect_into(&mut buffer, objects);
        (buffer, result)
    }

    #[test]
    fn layout_of_a_multiple_instance_object() {
        let bytes = format_object(&multiple());
        let r = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        // Counter block: ByteLength, pad, 8-byte counter at 8, DWORD at 16, 8-byte counter at 24: 32.
        assert_eq!(counter_block_layout(&counters()), (vec![8, 16, 24], 32));
        assert_eq!(r(4), 64 + 3 * 40); // DefinitionLength
        assert_eq!(r(8), 64);
        assert_eq!(r(28), PERF_DETAIL_NOVICE);
        assert_eq!(r(32), 3);
        assert_eq!(r(40), 3);
        // First instance at 184: "0,0\0" is 8 bytes, so ByteLength 32; its counter block at 216.
        assert_eq!((r(184), r(184 + 16), r(184 + 20)), (32, 24, 8));
        assert_eq!(&bytes[184 + 24..184 + 32], &[b'0', 0, b',', 0, b'0', 0, 0, 0]);
        assert_eq!(r(216), 32);
        assert_eq!(u64::from_le_bytes(bytes[216 + 8..216 + 16].try_into().unwrap()), 1);
        assert_eq!(r(216 + 16), 2);
        // "1,10\0" is 10 bytes: ByteLength 24 + 10 padded to 40.
        let third = 184 + 2 * (32 + 32);
        assert_eq!(r(third), 40);
        assert_eq!(r(0) as usize, bytes.len());
        assert_eq!(bytes.len(), third + 40 + 32);
        assert!(bytes.len().is_multiple_of(8));
    }

    #[test]
    fn well_formed_objects_pass() {
        let (buffer, result) = collected(&[format_object(&multiple()), format_object(&single())]);
        assert_eq!(result.num_object_types, 2);
        assert_eq!(validate_collect(&buffer, &result), []);
        let empty = ObjectData { instances: ObjectInstances::Multiple(Vec::new()), ..multiple() };
        let (buffer, result) = collected(&[format_object(&empty)]);
        assert_eq!(validate_collect(&buffer, &result), []);
    }

    #[test]
    fn more_data_leaves_everything_untouched() {
        let mut buffer = GuardedBuffer::new(16);
        let result = collect_into(&mut buffer, &[format_object(&multiple())]);
        assert_eq!(result.status, ERROR_MORE_DATA);
        assert_eq!(validate_collect(&buffer, &result), []);
        let sloppy = CollectReturn { total_bytes: 8, ..result };
        assert_eq!(validate_collect(&buffer, &sloppy), [Fault::MoreDataNotClean]);
    }

    fn with<T>(mutate: impl FnOnce(&mut Vec<u8>) -> T) -> Vec<Fault> {
        let mut object = format_object(&multiple());
        mutate(&mut object);
        let (buffer, result) = collected(&[object]);
        validate_collect(&buffer, &result)
    }

    fn put(bytes: &mut [u8], at: usize, value: u32) {
        bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }

    #[test]
    fn catches_a_pointer_that_disagrees_with_the_size() {
        let (buffer, mut result) = collected(&[format_object(&multiple())]);
        result.pointer_advance += 8;
        assert!(matches!(validate_collect(&buffer, &result)[0], Fault::PointerMismatch { .. }));
    }

    #[test]
    fn catches_overruns_into_and_past_the_guard() {
        let (mut buffer, mut result) = collected(&[format_object(&multiple())]);
        result.pointer_advance = buffer.size() + 16;
        result.total_bytes = result.pointer_advance as u32;
        let faults = validate_collect(&buffer, &result);
        assert!(faults.iter().any(|f| matches!(f, Fault::BufferOverrun { .. })), "{faults:?}");
        result.pointer_advance = buffer.size() + GUARD_SIZE + 8;
        result.total_bytes = result.pointer_advance as u32;
        let faults = validate_collect(&buffer, &result);
        assert!(faults.iter().any(|f| matches!(f, Fault::HeapError { .. })), "{faults:?}");
        // A write past the end changes the trailing guard.
        let end = GUARD_SIZE + buffer.size();
        buffer.raw_mut()[end + 3] = 0;
        let (_, good) = collected(&[format_object(&multiple())]);
        let faults = validate_collect(&buffer, &good);
        assert!(faults.contains(&Fault::GuardCorrupted { before: false, offset: end + 3 }), "{faults:?}");
        buffer.raw_mut()[5] = 1;
        assert!(
            validate_collect(&buffer, &good).contains(&Fault::GuardCorrupted { before: true, offset: 5 })
        );
    }

    #[test]
    fn catches_an_unaligned_size() {
        let mut object = format_object(&multiple());
        object.extend_from_slice(&[0; 4]);
        let total = object.len() as u32;
        put(&mut object, 0, total);
        let (buffer, result) = collected(&[object]);
        let faults = validate_collect(&buffer, &result);
        assert!(faults.contains(&Fault::SizeNotAligned { total_bytes: total }), "{faults:?}");
        assert!(faults.iter().any(|f| matches!(f, Fault::InstanceLengthsInconsistent { .. })), "{faults:?}");
    }

    #[test]
    fn catches_object_lengths_that_do_not_add_up() {
        let faults = with(|object| {
            let total = u32::from_le_bytes(object[0..4].try_into().unwrap());
            put(object, 0, total - 8);
        });
        assert!(faults.iter().any(|f| matches!(f, Fault::ObjectLengthsMismatch { .. })), "{faults:?}");
        assert!(faults.iter().any(|f| matches!(f, Fault::InstanceLengthsInconsistent { .. })), "{faults:?}");
        let faults = with(|object| put(object, 0, 1 << 20));
        assert!(faults.contains(&Fault::ObjectOutOfRange { object: 0 }), "{faults:?}");
    }

    #[test]
    fn catches_inconsistent_instance_lengths() {
        // The first instance claims 8 bytes more: its counter block is read from the wrong place.
        let faults = with(|object| put(object, 184, 40));
        assert!(!faults.is_empty());
        // The last counter block claims 8 bytes less: the object does not end where it says.
        let faults = with(|object| {
            let last_block = object.len() - 32;
            put(object, last_block, 24);
        });
        assert!(faults.iter().any(|f| matches!(f, Fault::InstanceLengthsInconsistent { .. })), "{faults:?}");
        assert!(
            faults.iter().any(|f| matches!(f, Fault::CounterOutsideBlock { counter: 2, .. })),
            "{faults:?}"
        );
        // One instance fewer than the data holds.
        let faults = with(|object| put(object, 40, 2));
        assert!(faults.iter().any(|f| matches!(f, Fault::InstanceLengthsInconsistent { .. })), "{faults:?}");
    }

    #[test]
    fn catches_bad_header_and_definition_lengths() {
        let faults = with(|object| put(object, 8, 60));
        assert!(faults.contains(&Fault::BadHeaderLength { object: 0, value: 60 }), "{faults:?}");
        let faults = with(|object| put(object, 4, 64 + 2 * 40));
        assert!(faults.iter().any(|f| matches!(f, Fault::BadDefinitionLength { .. })), "{faults:?}");
        let faults = with(|object| put(object, 64 + 40, 32));
        assert!(faults.contains(&Fault::BadCounterDefinitionLength { object: 0, counter: 1, value: 32 }));
    }

    #[test]
    fn catches_counter_sizes_and_offsets() {
        // Counter 1 (PERF_COUNTER_RAWCOUNT, a DWORD) claiming 8 bytes.
        let faults = with(|object| put(object, 64 + 40 + 32, 8));
        assert!(
            faults.iter().any(|f| matches!(f, Fault::CounterSizeMismatch { counter: 1, .. })),
            "{faults:?}"
        );
        // Counter 2 at offset 28: its 8 bytes end past the 32-byte block.
        let faults = with(|object| put(object, 64 + 80 + 36, 28));
        assert!(
            faults.iter().any(|f| matches!(f, Fault::CounterOutsideBlock { counter: 2, .. })),
            "{faults:?}"
        );
        // Counter 0 over the block's ByteLength.
        let faults = with(|object| put(object, 64 + 36, 0));
        assert!(faults.iter().any(|f| matches!(f, Fault::CounterOutsideBlock { counter: 0, offset: 0, .. })));
    }

    #[test]
    fn catches_bad_instance_names() {
        // NameLength past the instance.
        let faults = with(|object| put(object, 184 + 20, 16));
        assert!(faults.contains(&Fault::BadInstanceName { object: 0, instance: 0 }), "{faults:?}");
        // No terminating NUL.
        let faults = with(|object| object[184 + 24 + 6] = b'x');
        assert!(faults.contains(&Fault::BadInstanceName { object: 0, instance: 0 }), "{faults:?}");
        // NameOffset inside the instance definition.
        let faults = with(|object| put(object, 184 + 16, 8));
        assert!(faults.contains(&Fault::BadInstanceName { object: 0, instance: 0 }), "{faults:?}");
    }

    fn data_block() -> Vec<u8> {
        let header = DataBlockHeader {
            system_name: "HOST".into(),
            unix_millis: 1_795_309_509_042,
            perf_time: 5,
            perf_freq: 10_000_000,
        };
        format_data_block(&header, &[format_object(&multiple()), format_object(&single())])
    }

    #[test]
    fn data_block_layout_and_checks() {
        let bytes = data_block();
        let r = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!(&bytes[..8], b"P\0E\0R\0F\0");
        assert_eq!((r(8), r(12), r(16)), (1, 1, 1));
        assert_eq!(r(20) as usize, bytes.len());
        // "HOST\0" is 10 bytes, padded to 16.
        assert_eq!((r(24), r(28), r(80), r(84)), (88 + 16, 2, 10, 88));
        // 2026-11-22 was a Sunday.
        assert_eq!(system_time(1_795_309_509_042), [2026, 11, 0, 22, 1, 5, 9, 42]);
        assert_eq!(validate_data_block(&bytes), []);

        let mutate = |at: usize, value: u32| {
            let mut bytes = data_block();
            put(&mut bytes, at, value);
            validate_data_block(&bytes)
        };
        assert!(mutate(0, 0x0041_0050).contains(&Fault::BadDataBlock { what: "Signature is not \"PERF\"" }));
        assert!(!mutate(8, 0).is_empty());
        assert!(!mutate(20, r(20) + 8).is_empty());
        assert!(!mutate(24, 92).is_empty());
        assert!(!mutate(84, 200).is_empty());
        assert!(mutate(28, 3).contains(&Fault::ObjectOutOfRange { object: 2 }));
    }

    #[test]
    fn catches_unaligned_instances_and_bad_counts() {
        let faults = with(|object| put(object, 184, 28));
        assert!(faults.iter().any(|f| matches!(f, Fault::NotAligned { .. })), "{faults:?}");
        let faults = with(|object| put(object, 40, (-2i32) as u32));
        assert!(faults.contains(&Fault::BadNumInstances { object: 0, value: -2 }), "{faults:?}");
        let single = format_object(&single());
        let (buffer, mut result) = collected(&[single]);
        result.num_object_types = 2;
        assert!(validate_collect(&buffer, &result).contains(&Fault::ObjectOutOfRange { object: 1 }));
    }
}
