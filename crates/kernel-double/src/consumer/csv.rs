//! typeperf's CSV output (`typeperf ... -f CSV`, the option of Microsoft Learn's typeperf command reference; the layout is what typeperf writes): a blank line, then
//! the header `"(PDH-CSV 4.0) (Coordinated Universal Time)(0)","\\HOST\Set(Inst)\Counter",...` (the
//! time zone of the rows, here UTC), then one row per sample,
//! `"MM/DD/YYYY HH:MM:SS.mmm","123.000000",...`, with `" "` where a counter has no value (the first
//! sample of a rate counter, or a PDH error status). Pure functions: the strings are the output. The
//! `csv` crate writes the fields, quoting every one as typeperf does (`QuoteStyle::Always`).

use super::pdh::Value;

/// One CSV line (without line end) of `fields`, every field quoted and a `"` inside doubled.
fn line<I: IntoIterator<Item = T>, T: AsRef<[u8]>>(fields: I) -> String {
    let mut writer = ::csv::WriterBuilder::new()
        .quote_style(::csv::QuoteStyle::Always)
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    writer.write_record(fields).expect("writing CSV to memory does not fail");
    let mut bytes = writer.into_inner().expect("flushing CSV to memory does not fail");
    bytes.pop(); // the terminator: the caller ends the line (`document`)
    String::from_utf8(bytes).expect("fields written from strings are UTF-8")
}

/// A quoted CSV field (a `"` inside is doubled).
pub fn field(text: &str) -> String {
    line([text])
}

/// A full counter path: `\\HOST\Set(Instance)\Counter`, or `\\HOST\Set\Counter` for a
/// single-instance counterset (`instance` None).
pub fn counter_path(host: &str, counterset: &str, instance: Option<&str>, counter: &str) -> String {
    match instance {
        Some(instance) => format!("\\\\{host}\\{counterset}({instance})\\{counter}"),
        None => format!("\\\\{host}\\{counterset}\\{counter}"),
    }
}

/// The first header field: the format, then the time zone the rows' times are in, by its standard name
/// and its bias (UTC minus local time) in minutes, as typeperf writes it (e.g. `(PDH-CSV 4.0) (GMT
/// Standard Time)(-60)` in British summer time). The double's rows are in UTC.
pub const FORMAT_FIELD: &str = "(PDH-CSV 4.0) (Coordinated Universal Time)(0)";

/// The header line (without line end).
pub fn header(paths: &[String]) -> String {
    line(std::iter::once(FORMAT_FIELD).chain(paths.iter().map(String::as_str)))
}

/// The time of `unix_millis` (milliseconds since the Unix epoch) in UTC.
pub(crate) fn utc(unix_millis: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_millis) * 1_000_000)
        .expect("a millisecond count of the double's clock is a valid timestamp")
}

/// `MM/DD/YYYY HH:MM:SS.mmm` (UTC) of a time in milliseconds since the Unix epoch.
pub fn timestamp(unix_millis: i64) -> String {
    let time = utc(unix_millis);
    format!(
        "{:02}/{:02}/{:04} {:02}:{:02}:{:02}.{:03}",
        u8::from(time.month()),
        time.day(),
        time.year(),
        time.hour(),
        time.minute(),
        time.second(),
        time.millisecond()
    )
}

/// One value's text: `123.000000`, or ` ` when there is none.
fn text(value: &Value) -> String {
    match value {
        Value::Value(number) => format!("{number:.6}"),
        Value::NoValue | Value::Status(_) => " ".to_owned(),
    }
}

/// One value's field: `"123.000000"`, or `" "` when there is none.
pub fn value(value: &Value) -> String {
    field(&text(value))
}

/// One sample's row (without line end).
pub fn row(timestamp: &str, values: &[Value]) -> String {
    line(std::iter::once(timestamp.to_owned()).chain(values.iter().map(text)))
}

/// The whole output: a blank line, the header, the rows, each line ended by `line_end` (typeperf
/// writes `\r\n` on Windows).
pub fn document(paths: &[String], rows: &[String], line_end: &str) -> String {
    let mut text = String::from(line_end);
    text.push_str(&header(paths));
    text.push_str(line_end);
    for row in rows {
        text.push_str(row);
        text.push_str(line_end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::pdh::PDH_CALC_NEGATIVE_VALUE;

    #[test]
    fn counter_paths() {
        assert_eq!(
            counter_path("HOST", "Hardware Counters", Some("0,1"), "Instructions Retired/sec"),
            r"\\HOST\Hardware Counters(0,1)\Instructions Retired/sec"
        );
        assert_eq!(
            counter_path("HOST", "Hardware Counters Driver", None, "PMU State"),
            r"\\HOST\Hardware Counters Driver\PMU State"
        );
    }

    #[test]
    fn header_line() {
        let paths = [r"\\H\S(0,0)\C".to_string(), r"\\H\S\D".to_string()];
        assert_eq!(
            header(&paths),
            r#""(PDH-CSV 4.0) (Coordinated Universal Time)(0)","\\H\S(0,0)\C","\\H\S\D""#
        );
    }

    #[test]
    fn timestamps() {
        assert_eq!(timestamp(0), "01/01/1970 00:00:00.000");
        // 2026-11-22 01:05:09.042 UTC.
        assert_eq!(timestamp(1_795_309_509_042), "11/22/2026 01:05:09.042");
        // 2000-02-29 23:59:59.999 UTC (a leap day).
        assert_eq!(timestamp(951_868_799_999), "02/29/2000 23:59:59.999");
    }

    #[test]
    fn values_and_rows() {
        assert_eq!(value(&Value::Value(123.0)), r#""123.000000""#);
        assert_eq!(value(&Value::Value(0.0015)), r#""0.001500""#);
        assert_eq!(value(&Value::NoValue), r#"" ""#);
        assert_eq!(value(&Value::Status(PDH_CALC_NEGATIVE_VALUE)), r#"" ""#);
        assert_eq!(
            row("11/22/2026 01:05:09.042", &[Value::NoValue, Value::Value(4.5)]),
            r#""11/22/2026 01:05:09.042"," ","4.500000""#
        );
    }

    #[test]
    fn quotes_inside_a_field_are_doubled_and_empty_fields_quoted() {
        assert_eq!(field(r#"say "hi""#), r#""say ""hi""""#);
        assert_eq!(field(""), r#""""#);
        assert_eq!(header(&[String::new()]), r#""(PDH-CSV 4.0) (Coordinated Universal Time)(0)","""#);
    }

    #[test]
    fn documents_start_with_a_blank_line() {
        let paths = [r"\\H\S\C".to_string()];
        let rows = [row("01/01/1970 00:00:00.000", &[Value::Value(1.0)])];
        assert_eq!(
            document(&paths, &rows, "\r\n"),
            "\r\n\"(PDH-CSV 4.0) (Coordinated Universal Time)(0)\",\"\\\\H\\S\\C\"\r\n\"01/01/1970 00:00:00.000\",\"1.000000\"\r\n"
        );
    }
}
