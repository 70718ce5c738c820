use super::*;

fn value(kind: u32, units: &[u16]) -> Setting<'_> {
    Setting::Value { kind, units, odd: false }
}

fn dword_units(value: u32) -> [u16; 2] {
    [value as u16, (value >> 16) as u16]
}

fn utf16(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
}

/// A line's number and its text, or why it was not taken.
type ReadLine = (usize, Result<String, Rejection>);

/// Every line `lines` yields, as text.
fn read(setting: Setting<'_>) -> Result<Vec<ReadLine>, Rejection> {
    Ok(lines(setting)?
        .map(|(index, line)| (index, line.map(|units| String::from_utf16(units).unwrap())))
        .collect())
}

#[test]
fn a_dword_is_taken_at_both_ends_of_its_range_and_refused_one_past_them() {
    let range = 1..=100;
    for (number, expected) in [
        (0, Err(Rejection::OutOfRange)),
        (1, Ok(Some(1))),
        (100, Ok(Some(100))),
        (101, Err(Rejection::OutOfRange)),
        (0x1_0001, Err(Rejection::OutOfRange)),
        (u32::MAX, Err(Rejection::OutOfRange)),
    ] {
        assert_eq!(dword(value(REG_DWORD, &dword_units(number)), range.clone()), expected, "{number}");
    }
    assert_eq!(
        dword(value(REG_DWORD, &dword_units(u32::MAX)), 0..=u32::MAX),
        Ok(Some(u32::MAX)),
        "high half"
    );
    assert_eq!(dword(Setting::Missing, range), Ok(None), "missing: the caller's default");
}

#[test]
fn a_dword_of_the_wrong_type_or_size_is_refused() {
    fn refused(setting: Setting<'_>) -> Result<Option<u32>, Rejection> {
        dword(setting, 0..=u32::MAX)
    }
    assert_eq!(refused(value(REG_SZ, &dword_units(5))), Err(Rejection::WrongType { kind: REG_SZ }));
    assert_eq!(refused(value(11, &[5, 0, 0, 0])), Err(Rejection::WrongType { kind: 11 }), "REG_QWORD");
    assert_eq!(refused(value(REG_DWORD, &[5])), Err(Rejection::Malformed), "two bytes");
    assert_eq!(refused(value(REG_DWORD, &[5, 0, 0])), Err(Rejection::Malformed), "six bytes");
    assert_eq!(refused(value(REG_DWORD, &[])), Err(Rejection::Malformed), "no data");
    let odd = Setting::Value { kind: REG_DWORD, units: &[5, 0], odd: true };
    assert_eq!(refused(odd), Err(Rejection::Malformed), "five bytes");
    assert_eq!(refused(Setting::TooLong), Err(Rejection::TooLong));
    assert_eq!(refused(Setting::Failed(-5)), Err(Rejection::ReadFailed(-5)));
}

#[test]
fn a_string_is_its_text_without_terminators() {
    let data = utf16("custom\0\0");
    assert_eq!(string(value(REG_SZ, &data)), Ok(Some(&data[..6])));
    assert_eq!(string(value(REG_SZ, &data[..6])), Ok(Some(&data[..6])), "unterminated");
    assert_eq!(string(value(REG_SZ, &[0])), Ok(Some(&[][..])), "empty");
    assert_eq!(string(Setting::Missing), Ok(None));
    assert_eq!(string(value(REG_MULTI_SZ, &data)), Err(Rejection::WrongType { kind: REG_MULTI_SZ }));
    assert_eq!(string(value(REG_DWORD, &[1, 0])), Err(Rejection::WrongType { kind: REG_DWORD }));
    let odd = Setting::Value { kind: REG_SZ, units: &data, odd: true };
    assert_eq!(string(odd), Err(Rejection::Malformed));
    assert_eq!(string(Setting::TooLong), Err(Rejection::TooLong));
}

#[test]
fn multi_sz_lines_are_numbered_from_zero_up_to_the_empty_string() {
    let ok = |index, text: &str| (index, Ok(text.to_string()));
    let full = utf16("a=1\0b=2\0\0");
    assert_eq!(read(value(REG_MULTI_SZ, &full)), Ok(vec![ok(0, "a=1"), ok(1, "b=2")]));
    assert_eq!(read(value(REG_MULTI_SZ, &utf16("\0"))), Ok(vec![]), "an empty list");
    assert_eq!(read(value(REG_MULTI_SZ, &[])), Ok(vec![]), "no data");
    assert_eq!(read(Setting::Missing), Ok(vec![]));
}

#[test]
fn multi_sz_without_its_terminators_reads_as_if_they_were_there() {
    let ok = |index, text: &str| (index, Ok(text.to_string()));
    let expected = Ok(vec![ok(0, "a=1"), ok(1, "b=2")]);
    assert_eq!(read(value(REG_MULTI_SZ, &utf16("a=1\0b=2\0"))), expected, "no final empty string");
    assert_eq!(read(value(REG_MULTI_SZ, &utf16("a=1\0b=2"))), expected, "no terminator at all");
    assert_eq!(read(value(REG_MULTI_SZ, &utf16("a=1"))), Ok(vec![ok(0, "a=1")]), "one unterminated line");
}

#[test]
fn what_follows_the_empty_string_is_one_rejection_at_its_first_line() {
    let after = |index| (index, Err(Rejection::AfterEndOfList));
    let data = utf16("a=1\0\0b=2\0c=3\0\0");
    assert_eq!(read(value(REG_MULTI_SZ, &data)), Ok(vec![(0, Ok("a=1".to_string())), after(2)]));
    assert_eq!(read(value(REG_MULTI_SZ, &utf16("\0b=2\0\0"))), Ok(vec![after(1)]), "a leading empty string");
    assert_eq!(
        read(value(REG_MULTI_SZ, &utf16("a=1\0\0\0\0d\0\0"))),
        Ok(vec![(0, Ok("a=1".into())), after(4)])
    );
}

#[test]
fn a_multi_sz_of_the_wrong_type_or_size_is_refused_whole() {
    let data = utf16("a=1\0\0");
    assert_eq!(lines(value(REG_SZ, &data)).err(), Some(Rejection::WrongType { kind: REG_SZ }));
    let odd = Setting::Value { kind: REG_MULTI_SZ, units: &data, odd: true };
    assert_eq!(lines(odd).err(), Some(Rejection::Malformed));
    assert_eq!(lines(Setting::TooLong).err(), Some(Rejection::TooLong));
    assert_eq!(lines(Setting::Failed(-2)).err(), Some(Rejection::ReadFailed(-2)));
}

/// A KEY_VALUE_PARTIAL_INFORMATION as ZwQueryValueKey writes it: TitleIndex, Type, DataLength
/// (little-endian ULONGs), then the data.
fn partial_information(kind: u32, data_length: u32, data: &[u16], room: usize) -> Vec<u16> {
    let mut buffer = vec![
        0xAAAA,
        0xAAAA,
        kind as u16,
        (kind >> 16) as u16,
        data_length as u16,
        (data_length >> 16) as u16,
    ];
    buffer.extend_from_slice(data);
    buffer.resize(HEADER_UNITS + room, 0);
    buffer
}

#[test]
fn the_header_is_twelve_bytes_and_the_data_follows_it() {
    assert_eq!(HEADER_UNITS * 2, 12, "three ULONGs before Data");
    assert_eq!((TYPE_UNIT * 2, DATA_LENGTH_UNIT * 2), (4, 8));
    let buffer = partial_information(REG_DWORD, 4, &[25, 0], 8);
    assert_eq!(received(&buffer), value(REG_DWORD, &[25, 0]));
    assert_eq!(dword(received(&buffer), 1..=100), Ok(Some(25)));
    let wide = partial_information(0x0001_0007, 2, &[7], 2);
    assert_eq!(received(&wide), value(0x0001_0007, &[7]), "both halves of Type");
}

#[test]
fn received_data_is_bounded_by_the_buffer_and_odd_lengths_are_marked() {
    let buffer = partial_information(REG_SZ, 0x0001_0000, &[1, 2, 3], 4);
    assert_eq!(received(&buffer), value(REG_SZ, &[1, 2, 3, 0]), "a DataLength past the buffer");
    let odd = partial_information(REG_SZ, 3, &[1, 2], 4);
    assert_eq!(received(&odd), Setting::Value { kind: REG_SZ, units: &[1], odd: true });
    assert_eq!(received(&[0; HEADER_UNITS - 1]), Setting::TooLong, "no room for the header");
    assert_eq!(received(&partial_information(REG_SZ, 0, &[], 0)), value(REG_SZ, &[]));
}
