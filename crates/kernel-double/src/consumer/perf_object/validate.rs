//! perflib's checks on what a PM_COLLECT_PROC returns, as [`super`] formats it.
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
use std::mem::{offset_of, size_of};

use zerocopy::FromBytes;

use super::{
    COUNTER_DEFINITION_SIZE, DATA_BLOCK_SIZE, INSTANCE_DEFINITION_SIZE, OBJECT_TYPE_SIZE, PERF_DATA_VERSION,
    PERF_NO_INSTANCES, PerfCounterBlock, PerfCounterDefinition, PerfDataBlock, PerfInstanceDefinition,
    PerfObjectType, SIGNATURE, read,
};

/// The size of perflib's guard areas before and after the consumer's buffer (PM_COLLECT_PROC's Remarks on Microsoft Learn: 1 KB each).
pub const GUARD_SIZE: usize = 1024;
const GUARD_PATTERN: u8 = 0xEE;
pub const ERROR_SUCCESS: u32 = 0;
pub const ERROR_MORE_DATA: u32 = 234;

/// The PERF_DATA_BLOCK's own checks (its documented members), then [`validate_objects`] on the objects
/// it holds.
pub fn validate_data_block(bytes: &[u8]) -> Vec<Fault> {
    let Some(block) = read::<PerfDataBlock>(bytes, 0) else {
        return vec![Fault::BadDataBlock { what: "shorter than PERF_DATA_BLOCK" }];
    };
    let mut faults = Vec::new();
    if block.signature != SIGNATURE {
        faults.push(Fault::BadDataBlock { what: "Signature is not \"PERF\"" });
    }
    if block.little_endian != 1 {
        faults.push(Fault::BadDataBlock { what: "LittleEndian is not 1" });
    }
    if block.version < PERF_DATA_VERSION {
        faults.push(Fault::BadDataBlock { what: "Version below 1" });
    }
    let (total, header) = (block.total_byte_length, block.header_length);
    let (name_length, name_offset) = (block.system_name_length, block.system_name_offset);
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
    faults.extend(validate_objects(&bytes[header as usize..end], block.num_object_types));
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

/// PERF_SIZE_* bits of a CounterType: the data size, or None for variable-length.
fn size_of_type(counter_type: u32) -> Option<u32> {
    match counter_type & 0x300 {
        0x000 => Some(4),
        0x100 => Some(8),
        0x200 => Some(0),
        _ => None,
    }
}

/// The PERF_OBJECT_TYPE at `at`. One cut short after NumInstances, the last member the checks use,
/// reads with zeros for the rest, so that its TotalByteLength is checked (and counted) all the same.
fn object_header(data: &[u8], at: u64) -> Option<PerfObjectType> {
    let rest = data.get(usize::try_from(at).ok()?..)?;
    if rest.len() < offset_of!(PerfObjectType, code_page) {
        return None;
    }
    let mut header = [0; size_of::<PerfObjectType>()];
    let length = rest.len().min(header.len());
    header[..length].copy_from_slice(&rest[..length]);
    PerfObjectType::read_from_bytes(&header).ok()
}

/// ExtCounterTestLevel 1's checks on `num_object_types` PERF_OBJECT_TYPE blocks filling `data`.
pub fn validate_objects(data: &[u8], num_object_types: u32) -> Vec<Fault> {
    let mut faults = Vec::new();
    let mut offset = 0u64;
    let mut sum = 0u64;
    for object in 0..num_object_types as usize {
        let Some(header) = object_header(data, offset) else {
            faults.push(Fault::ObjectOutOfRange { object });
            break;
        };
        let total = header.total_byte_length;
        sum += u64::from(total);
        if total < OBJECT_TYPE_SIZE || offset + u64::from(total) > data.len() as u64 {
            faults.push(Fault::ObjectOutOfRange { object });
            break;
        }
        let end = offset + u64::from(total);
        if !total.is_multiple_of(8) {
            faults.push(Fault::NotAligned { object, what: "TotalByteLength", value: total });
        }
        let (definition_length, header_length) = (header.definition_length, header.header_length);
        if header_length != OBJECT_TYPE_SIZE {
            faults.push(Fault::BadHeaderLength { object, value: header_length });
        }
        let expected =
            u64::from(header_length) + u64::from(COUNTER_DEFINITION_SIZE) * u64::from(header.num_counters);
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
        let counters = counter_definitions(data, object, first_definition, header.num_counters, &mut faults);
        let first_instance = offset + u64::from(definition_length);
        let instances = header.num_instances;
        let walked = check_instances(data, object, first_instance, end, instances, &counters, &mut faults);
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

/// Checks object `object`'s `num_counters` PERF_COUNTER_DEFINITIONs, the first at `at` (all inside
/// DefinitionLength, which [`validate_objects`] checked); returns each counter's (Offset, Size) in the
/// counter blocks.
fn counter_definitions(
    data: &[u8],
    object: usize,
    at: u64,
    num_counters: u32,
    faults: &mut Vec<Fault>,
) -> Vec<(u32, u32)> {
    let mut counters = Vec::new();
    for counter in 0..num_counters as usize {
        let at = at + u64::from(COUNTER_DEFINITION_SIZE) * counter as u64;
        let definition = read::<PerfCounterDefinition>(data, at).unwrap_or_default();
        let (length, counter_type, size) =
            (definition.byte_length, definition.counter_type, definition.counter_size);
        if length != COUNTER_DEFINITION_SIZE {
            faults.push(Fault::BadCounterDefinitionLength { object, counter, value: length });
        }
        if size_of_type(counter_type).is_some_and(|expected| expected != size) {
            faults.push(Fault::CounterSizeMismatch { object, counter, size, counter_type });
        }
        counters.push((definition.counter_offset, size));
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
    let byte_length = read::<PerfCounterBlock>(data, at).map(|block| block.byte_length);
    let Some(length) = byte_length.filter(|&length| length >= 4 && at + u64::from(length) <= end) else {
        faults.push(Fault::BadInstanceLength { object, instance, value: byte_length.unwrap_or(0) });
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
        let Some(definition) = read::<PerfInstanceDefinition>(data, at) else {
            faults.push(Fault::InstanceLengthsInconsistent { object, end: at, expected: end });
            break;
        };
        let PerfInstanceDefinition { byte_length: length, name_offset, name_length, .. } = definition;
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
