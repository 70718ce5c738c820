//! A legacy (version 1) consumer: reads PERF_OBJECT_TYPE blocks, as HKEY_PERFORMANCE_DATA returns
//! them, and computes the fraction types from two of them the way Microsoft's samples do ("Retrieving
//! Counter Data", <https://learn.microsoft.com/windows/win32/perfctrs/retrieving-counter-data>, and
//! "Calculating Counter Values",
//! <https://learn.microsoft.com/windows/win32/perfctrs/calculating-counter-values>):
//!
//! * a counter's data is found by its definition's CounterOffset in the instance's counter block, read
//!   as a DWORD (zero-extended) or a ULONGLONG by its CounterSize;
//! * a fraction's base is the *next* counter definition (`pBaseCounter = pCounter+1`), which must have
//!   the PERF_COUNTER_BASE bits; a DWORD base is read zero-extended, a PERF_PRECISION_TIMESTAMP (and
//!   PERF_LARGE_RAW_BASE) as a 64-bit LONGLONG;
//! * from two samples: data that went down is dropped; `numerator = Data2 - Data1` (ULONGLONG),
//!   `denominator = Time2 - Time1` (LONGLONG); PERF_SAMPLE_FRACTION and the precision timers show
//!   `(double)(100*numerator)/denominator`, PERF_AVERAGE_BULK `(double)numerator/denominator`.

use std::mem::size_of;

use zerocopy::FromBytes;

use super::perf_object::{PerfCounterBlock, PerfCounterDefinition, PerfInstanceDefinition, PerfObjectType};

/// winperf.h counter types this reader computes.
pub const PERF_AVERAGE_BULK: u32 = 1_073_874_176;
pub const PERF_SAMPLE_FRACTION: u32 = 549_585_920;
pub const PERF_PRECISION_100NS_TIMER: u32 = 542_573_824;
/// winperf.h: the bits that make a counter type a base.
pub const PERF_COUNTER_BASE: u32 = 0x0003_0000;

/// One PERF_COUNTER_DEFINITION as a reader needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Definition {
    pub counter_type: u32,
    pub size: u32,
    pub offset: u32,
}

/// One PERF_OBJECT_TYPE block, read back: its counter definitions and each instance's name and counter
/// block (PERF_COUNTER_BLOCK and its data).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub definitions: Vec<Definition>,
    pub instances: Vec<(String, Vec<u8>)>,
}

/// A `T` read from `bytes` at `at` (through the winperf.h types [`super::perf_object`] writes them with).
fn read<T: FromBytes>(bytes: &[u8], at: usize) -> Result<T, String> {
    let value = bytes.get(at..).and_then(|rest| T::read_from_prefix(rest).ok());
    value
        .map(|(value, _)| value)
        .ok_or_else(|| format!("{} bytes at {at} are past the block's {} bytes", size_of::<T>(), bytes.len()))
}

/// Reads a multi-instance PERF_OBJECT_TYPE block: HeaderLength, NumCounters and NumInstances from the
/// header, the definitions after the header, the instances after DefinitionLength.
pub fn read_object(bytes: &[u8]) -> Result<Object, String> {
    let header: PerfObjectType = read(bytes, 0)?;
    let mut definitions = Vec::with_capacity(header.num_counters as usize);
    let mut at = header.header_length as usize;
    for _ in 0..header.num_counters {
        let definition: PerfCounterDefinition = read(bytes, at)?;
        definitions.push(Definition {
            counter_type: definition.counter_type,
            size: definition.counter_size,
            offset: definition.counter_offset,
        });
        at += definition.byte_length as usize;
    }
    let mut instances = Vec::new();
    let mut at = header.definition_length as usize;
    for _ in 0..header.num_instances.max(0) {
        let instance: PerfInstanceDefinition = read(bytes, at)?;
        let name_at = at + instance.name_offset as usize;
        let name_bytes =
            bytes.get(name_at..name_at + instance.name_length as usize).ok_or("a name is cut")?;
        let units: Vec<u16> =
            name_bytes.chunks_exact(2).map(|pair| u16::from_le_bytes([pair[0], pair[1]])).collect();
        let name = String::from_utf16_lossy(&units).trim_end_matches('\0').to_string();
        let block_at = at + instance.byte_length as usize;
        let block_length = read::<PerfCounterBlock>(bytes, block_at)?.byte_length as usize;
        let block = bytes.get(block_at..block_at + block_length).ok_or("a counter block is cut")?.to_vec();
        instances.push((name, block));
        at = block_at + block_length;
    }
    Ok(Object { definitions, instances })
}

/// RAW_DATA of the samples: the counter's data and its base (the sample's `Time`, "a time value or a
/// base value").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawData {
    pub counter_type: u32,
    pub data: u64,
    pub time: i64,
}

/// GetValue for a fraction type: the data at the counter's width, and the next definition's data as
/// the base, or None if the next counter is not a base.
pub fn get_value(object: &Object, instance: &str, counter: usize) -> Option<RawData> {
    let (_, block) = object.instances.iter().find(|(name, _)| name == instance)?;
    let data = |definition: &Definition| -> Option<u64> {
        let at = definition.offset as usize;
        if definition.size == 8 { read(block, at).ok() } else { read::<u32>(block, at).ok().map(u64::from) }
    };
    let definition = object.definitions.get(counter)?;
    let base = object.definitions.get(counter + 1)?;
    if base.counter_type & PERF_COUNTER_BASE != PERF_COUNTER_BASE {
        return None;
    }
    Some(RawData { counter_type: definition.counter_type, data: data(definition)?, time: data(base)? as i64 })
}

/// DisplayCalculatedValue for the fraction types: None where the sample drops the pair (data went
/// down) or does not compute the type.
pub fn display_value(sample1: &RawData, sample2: &RawData) -> Option<f64> {
    if sample1.data > sample2.data {
        return None;
    }
    let numerator = sample2.data - sample1.data;
    let denominator = sample2.time.wrapping_sub(sample1.time);
    match sample1.counter_type {
        PERF_SAMPLE_FRACTION | PERF_PRECISION_100NS_TIMER => {
            Some(100u64.wrapping_mul(numerator) as f64 / denominator as f64)
        }
        PERF_AVERAGE_BULK => Some(numerator as f64 / denominator as f64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::perf_object::{CounterDefinition, ObjectData, ObjectInstances, format_object};

    fn object(values: Vec<u64>) -> Object {
        let definition = |counter_type, size| CounterDefinition {
            name_index: 2,
            help_index: 3,
            detail_level: 100,
            counter_type,
            size,
        };
        let data = ObjectData {
            name_index: 2,
            help_index: 3,
            counters: vec![
                definition(65_536, 4),
                definition(PERF_PRECISION_100NS_TIMER, 8),
                definition(1_073_939_712, 8), // PERF_PRECISION_TIMESTAMP (PERF_LARGE_RAW_BASE)
                definition(PERF_SAMPLE_FRACTION, 4),
                definition(1_073_939_457, 4), // PERF_SAMPLE_BASE
            ],
            instances: ObjectInstances::Multiple(vec![("0,0".into(), values)]),
            perf_time: 0,
            perf_freq: 10_000_000,
        };
        read_object(&format_object(&data)).unwrap()
    }

    #[test]
    fn reads_the_blocks_pmupcw_formats_and_computes_fractions_as_the_sample_does() {
        let (n0, d0) = (7u64 << 40, 9u64 << 40);
        let one = object(vec![1, n0, d0, u64::from(u32::MAX) - 9, u64::from(u32::MAX) - 19]);
        let two = object(vec![1, n0 + (3 << 34), d0 + (4 << 34), 30, 20]);
        let read = |object: &Object, counter| get_value(object, "0,0", counter).unwrap();
        // 64-bit data and base: exact.
        assert_eq!(display_value(&read(&one, 1), &read(&two, 1)), Some(75.0));
        // A DWORD fraction whose data wrapped: dropped, as the sample's overflow check does.
        assert_eq!(display_value(&read(&one, 3), &read(&two, 3)), None);
        // A counter followed by no base is not a fraction here.
        assert_eq!(get_value(&one, "0,0", 4), None);
        assert_eq!(get_value(&one, "1,0", 1), None);
    }
}
