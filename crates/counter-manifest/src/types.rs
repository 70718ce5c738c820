//! The counter types the generator supports: the manifest's `type` names, their `PERF_*` values and
//! data sizes, and which base counter each one needs.
//!
//! The values are winperf.h's `PERF_*` definitions (Windows SDK). They were checked against the
//! composed flag definitions in public copies of winperf.h (`PERF_SIZE_*`, `PERF_TYPE_*`,
//! `PERF_COUNTER_*`, `PERF_DISPLAY_*` ...; e.g. reactos/reactos private/inet/mshtml/tools/include/winperf.h)
//! and against the decimal table of Microsoft's "CounterType Qualifier" page
//! (learn.microsoft.com/windows/win32/wmisdk/countertype-qualifier). The `type` names are the
//! enumeration of the counters schema's `counter` complex type
//! (learn.microsoft.com/windows/win32/perfctrs/performance-counters-counter-complex-type).

/// One supported counter type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterType {
    /// The manifest's name, e.g. `perf_counter_bulk_count`.
    pub name: &'static str,
    /// The `PERF_*` value (winperf.h).
    pub value: u32,
    /// Bytes of counter data: 4 (`PERF_SIZE_DWORD`) or 8 (`PERF_SIZE_LARGE`).
    pub size: u32,
    /// The type of the base counter that must immediately follow a counter of this type (PDH reads a
    /// fraction's denominator from the next counter), if it needs one.
    pub base: Option<&'static str>,
    /// Whether this is a base (denominator) type, which must immediately follow a counter that needs it.
    pub is_base: bool,
}

const fn plain(name: &'static str, value: u32, size: u32) -> CounterType {
    CounterType { name, value, size, base: None, is_base: false }
}

const fn needs(name: &'static str, value: u32, size: u32, base: &'static str) -> CounterType {
    CounterType { name, value, size, base: Some(base), is_base: false }
}

const fn base(name: &'static str, value: u32, size: u32) -> CounterType {
    CounterType { name, value, size, base: None, is_base: true }
}

/// Every supported type. Values in decimal as the CounterType Qualifier page lists them; the hex in
/// each comment is the OR of winperf.h's flags for that type.
pub const COUNTER_TYPES: &[CounterType] = &[
    plain("perf_counter_rawcount", 65536, 4), // 0x0001_0000 SIZE_DWORD|TYPE_NUMBER|NUMBER_DECIMAL
    plain("perf_counter_large_rawcount", 65792, 8), // 0x0001_0100 SIZE_LARGE|...
    plain("perf_counter_counter", 272696320, 4), // 0x1041_0400 TYPE_COUNTER|RATE|DELTA|PER_SEC
    plain("perf_counter_bulk_count", 272696576, 8), // 0x1041_0500 SIZE_LARGE|TYPE_COUNTER|RATE|DELTA|PER_SEC
    plain("perf_counter_delta", 4195328, 4),  // 0x0040_0400 TYPE_COUNTER|VALUE|DELTA
    plain("perf_counter_large_delta", 4195584, 8), // 0x0040_0500
    needs("perf_average_bulk", 1073874176, 8, "perf_average_base"), // 0x4002_0500 FRACTION|NOSHOW
    needs("perf_average_timer", 805438464, 4, "perf_average_base"), // 0x3002_0400 FRACTION|SECONDS
    base("perf_average_base", 1073939458, 4), // 0x4003_0402 BASE|NOSHOW|2
    needs("perf_sample_fraction", 549585920, 4, "perf_sample_base"), // 0x20C2_0400 FRACTION|DELTA|DELTA_BASE|PERCENT
    base("perf_sample_base", 1073939457, 4),                         // 0x4003_0401 BASE|NOSHOW|1
    needs("perf_raw_fraction", 537003008, 4, "perf_raw_base"),       // 0x2002_0400 FRACTION|PERCENT
    base("perf_raw_base", 1073939459, 4),                            // 0x4003_0403 BASE|NOSHOW|3
    needs("perf_large_raw_fraction", 537003264, 8, "perf_large_raw_base"), // 0x2002_0500
    base("perf_large_raw_base", 1073939712, 8),                      // 0x4003_0500 SIZE_LARGE|BASE|NOSHOW
    plain("perf_100nsec_timer", 542180608, 8), // 0x2051_0500 RATE|TIMER_100NS|DELTA|PERCENT
    // winperf.h: a PERF_PRECISION_*_TIMER must be followed by its PERF_PRECISION_TIMESTAMP counter,
    // and `#define PERF_PRECISION_TIMESTAMP PERF_LARGE_RAW_BASE` (the schema has no separate name).
    needs("perf_precision_100ns_timer", 542573824, 8, "perf_large_raw_base"), // 0x2057_0500 PRECISION|TIMER_100NS|DELTA|PERCENT
    plain("perf_elapsed_time", 807666944, 8), // 0x3024_0500 ELAPSED|OBJECT_TIMER|SECONDS
];

/// Types the counters schema defines that this generator does not support (yet): a manifest using
/// one is valid for lodctr, so the error says "not supported" rather than "unknown".
pub const UNSUPPORTED_SCHEMA_TYPES: &[&str] = &[
    "perf_counter_timer",
    "perf_counter_queuelen_type",
    "perf_counter_large_queuelen_type",
    "perf_counter_100ns_queuelen_type",
    "perf_counter_obj_time_queuelen_type",
    "perf_counter_text",
    "perf_counter_rawcount_hex",
    "perf_counter_large_rawcount_hex",
    "perf_sample_counter",
    "perf_counter_timer_inv",
    "perf_obj_time_timer",
    "perf_100nsec_timer_inv",
    "perf_counter_multi_timer",
    "perf_counter_multi_timer_inv",
    "perf_counter_multi_base",
    "perf_100nsec_multi_timer",
    "perf_100nsec_multi_timer_inv",
    "perf_precision_system_timer",
    "perf_precision_object_timer",
    "perf_counter_composite",
];

/// The supported type called `name`.
pub fn lookup(name: &str) -> Option<&'static CounterType> {
    COUNTER_TYPES.iter().find(|ty| ty.name == name)
}

/// The names of the types that need a base of type `base_name`, for error messages.
pub fn users_of_base(base_name: &str) -> Vec<&'static str> {
    COUNTER_TYPES.iter().filter(|ty| ty.base == Some(base_name)).map(|ty| ty.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // winperf.h's flags, to recompute each value from its definition.
    const SIZE_DWORD: u32 = 0x0;
    const SIZE_LARGE: u32 = 0x100;
    const TYPE_NUMBER: u32 = 0x0;
    const TYPE_COUNTER: u32 = 0x400;
    const NUMBER_DECIMAL: u32 = 0x1_0000;
    const COUNTER_VALUE: u32 = 0x0;
    const COUNTER_RATE: u32 = 0x1_0000;
    const COUNTER_FRACTION: u32 = 0x2_0000;
    const COUNTER_BASE: u32 = 0x3_0000;
    const COUNTER_ELAPSED: u32 = 0x4_0000;
    const COUNTER_PRECISION: u32 = 0x7_0000;
    const TIMER_TICK: u32 = 0x0;
    const TIMER_100NS: u32 = 0x10_0000;
    const OBJECT_TIMER: u32 = 0x20_0000;
    const DELTA_COUNTER: u32 = 0x40_0000;
    const DELTA_BASE: u32 = 0x80_0000;
    const DISPLAY_NO_SUFFIX: u32 = 0x0;
    const DISPLAY_PER_SEC: u32 = 0x1000_0000;
    const DISPLAY_PERCENT: u32 = 0x2000_0000;
    const DISPLAY_SECONDS: u32 = 0x3000_0000;
    const DISPLAY_NOSHOW: u32 = 0x4000_0000;

    #[test]
    fn values_match_the_winperf_definitions() {
        let expected: &[(&str, u32)] = &[
            ("perf_counter_rawcount", SIZE_DWORD | TYPE_NUMBER | NUMBER_DECIMAL | DISPLAY_NO_SUFFIX),
            ("perf_counter_large_rawcount", SIZE_LARGE | TYPE_NUMBER | NUMBER_DECIMAL | DISPLAY_NO_SUFFIX),
            (
                "perf_counter_counter",
                SIZE_DWORD | TYPE_COUNTER | COUNTER_RATE | TIMER_TICK | DELTA_COUNTER | DISPLAY_PER_SEC,
            ),
            (
                "perf_counter_bulk_count",
                SIZE_LARGE | TYPE_COUNTER | COUNTER_RATE | TIMER_TICK | DELTA_COUNTER | DISPLAY_PER_SEC,
            ),
            (
                "perf_counter_delta",
                SIZE_DWORD | TYPE_COUNTER | COUNTER_VALUE | DELTA_COUNTER | DISPLAY_NO_SUFFIX,
            ),
            (
                "perf_counter_large_delta",
                SIZE_LARGE | TYPE_COUNTER | COUNTER_VALUE | DELTA_COUNTER | DISPLAY_NO_SUFFIX,
            ),
            ("perf_average_bulk", SIZE_LARGE | TYPE_COUNTER | COUNTER_FRACTION | DISPLAY_NOSHOW),
            ("perf_average_timer", SIZE_DWORD | TYPE_COUNTER | COUNTER_FRACTION | DISPLAY_SECONDS),
            ("perf_average_base", SIZE_DWORD | TYPE_COUNTER | COUNTER_BASE | DISPLAY_NOSHOW | 2),
            (
                "perf_sample_fraction",
                SIZE_DWORD | TYPE_COUNTER | COUNTER_FRACTION | DELTA_COUNTER | DELTA_BASE | DISPLAY_PERCENT,
            ),
            ("perf_sample_base", SIZE_DWORD | TYPE_COUNTER | COUNTER_BASE | DISPLAY_NOSHOW | 1),
            ("perf_raw_fraction", SIZE_DWORD | TYPE_COUNTER | COUNTER_FRACTION | DISPLAY_PERCENT),
            ("perf_raw_base", SIZE_DWORD | TYPE_COUNTER | COUNTER_BASE | DISPLAY_NOSHOW | 3),
            ("perf_large_raw_fraction", SIZE_LARGE | TYPE_COUNTER | COUNTER_FRACTION | DISPLAY_PERCENT),
            ("perf_large_raw_base", SIZE_LARGE | TYPE_COUNTER | COUNTER_BASE | DISPLAY_NOSHOW),
            (
                "perf_100nsec_timer",
                SIZE_LARGE | TYPE_COUNTER | COUNTER_RATE | TIMER_100NS | DELTA_COUNTER | DISPLAY_PERCENT,
            ),
            (
                "perf_precision_100ns_timer",
                SIZE_LARGE | TYPE_COUNTER | COUNTER_PRECISION | TIMER_100NS | DELTA_COUNTER | DISPLAY_PERCENT,
            ),
            (
                "perf_elapsed_time",
                SIZE_LARGE | TYPE_COUNTER | COUNTER_ELAPSED | OBJECT_TIMER | DISPLAY_SECONDS,
            ),
        ];
        assert_eq!(expected.len(), COUNTER_TYPES.len());
        for (name, value) in expected {
            let ty = lookup(name).unwrap();
            assert_eq!(ty.value, *value, "{name}");
            let size = if value & SIZE_LARGE != 0 { 8 } else { 4 };
            assert_eq!(ty.size, size, "{name}");
        }
    }

    #[test]
    fn every_needed_base_is_a_supported_base_type() {
        for ty in COUNTER_TYPES {
            if let Some(base) = ty.base {
                assert!(lookup(base).is_some_and(|base| base.is_base), "{}", ty.name);
            }
            assert!(!UNSUPPORTED_SCHEMA_TYPES.contains(&ty.name));
        }
    }
}
