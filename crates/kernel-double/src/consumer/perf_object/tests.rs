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
    assert!(validate_collect(&buffer, &good).contains(&Fault::GuardCorrupted { before: true, offset: 5 }));
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
    assert!(faults.iter().any(|f| matches!(f, Fault::CounterOutsideBlock { counter: 2, .. })), "{faults:?}");
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
    assert!(faults.iter().any(|f| matches!(f, Fault::CounterSizeMismatch { counter: 1, .. })), "{faults:?}");
    // Counter 2 at offset 28: its 8 bytes end past the 32-byte block.
    let faults = with(|object| put(object, 64 + 80 + 36, 28));
    assert!(faults.iter().any(|f| matches!(f, Fault::CounterOutsideBlock { counter: 2, .. })), "{faults:?}");
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
