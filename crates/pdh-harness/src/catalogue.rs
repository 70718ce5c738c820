//! The counters the harness queries: every displayable counter of both countersets of
//! `manifests/pmupcw.man`, by English name (`PdhAddEnglishCounterW`), and which of them are raw totals
//! that must never decrease while the driver stays loaded. A unit test compares this table with the
//! manifest, so a counter added there without being added here fails the build's tests.

/// One counter of a counterset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterSpec {
    /// English name, as in the manifest's `name` attribute.
    pub name: &'static str,
    /// A raw 64-bit total (`perf_counter_large_rawcount`): monotonic per instance within one service
    /// session (the driver keeps counting from a new base after a restart).
    pub monotonic: bool,
}

/// One counterset of the manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterSetSpec {
    pub name: &'static str,
    /// `multipleAggregate` (one instance per logical processor plus `_Total`) or `single`.
    pub multi_instance: bool,
    /// The displayable counters; base counters (`perf_*_base`, `noDisplay`) are read by PDH with their
    /// fraction and cannot be added on their own.
    pub counters: &'static [CounterSpec],
}

const fn rate(name: &'static str) -> CounterSpec {
    CounterSpec { name, monotonic: false }
}

const fn total(name: &'static str) -> CounterSpec {
    CounterSpec { name, monotonic: true }
}

pub const HARDWARE_COUNTERS: CounterSetSpec = CounterSetSpec {
    name: "Hardware Counters",
    multi_instance: true,
    counters: &[
        rate("Instructions Retired/sec"),
        rate("Unhalted Core Cycles/sec"),
        rate("Unhalted Reference Cycles/sec"),
        rate("LLC References/sec"),
        rate("LLC Misses/sec"),
        rate("Branch Instructions/sec"),
        rate("Branch Mispredicts/sec"),
        total("Instructions Retired"),
        total("Unhalted Core Cycles"),
        total("Unhalted Reference Cycles"),
        total("LLC References"),
        total("LLC Misses"),
        total("Branch Instructions"),
        total("Branch Mispredicts"),
        rate("Instructions per Cycle"),
        rate("% LLC Misses"),
        rate("% Branch Mispredicts"),
        total("Overflow Interrupts"),
    ],
};

pub const DRIVER_STATUS: CounterSetSpec = CounterSetSpec {
    name: "Hardware Counters Driver",
    multi_instance: false,
    counters: &[
        rate("PMU State"),
        rate("Counters Owned"),
        total("Overflow Interrupts"),
        rate("Collect Requests/sec"),
        rate("Avg. Collect Time"),
        rate("Allocation Failures"),
        rate("Ownership Failures"),
        rate("PMU Reprograms"),
    ],
};

pub const COUNTER_SETS: [CounterSetSpec; 2] = [HARDWARE_COUNTERS, DRIVER_STATUS];

/// The name PDH gives the aggregate instance of a `multipleAggregate` counterset.
pub const TOTAL_INSTANCE: &str = "_Total";

impl CounterSetSpec {
    /// `\Hardware Counters(*)\*` or `\Hardware Counters Driver\*`: the wildcard the harness expands.
    pub fn wildcard_path(&self) -> String {
        self.counter_path("*")
    }

    /// The full English path of one counter, every instance for a multi-instance set.
    pub fn counter_path(&self, counter: &str) -> String {
        if self.multi_instance {
            format!("\\{}(*)\\{}", self.name, counter)
        } else {
            format!("\\{}\\{}", self.name, counter)
        }
    }
}

/// The counter name of a PDH path (`\\MACHINE\Object(Instance)\Counter` or `\Object\Counter`): what
/// follows the last backslash that is not inside the instance's parentheses.
pub fn counter_name_of_path(path: &str) -> &str {
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in path.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '\\' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    &path[start..]
}

/// Splits a `REG_MULTI_SZ`-style list (what `PdhExpandWildCardPathW` returns): strings separated by one
/// NUL, ended by two. Stops at the first empty string or at the end of the buffer.
pub fn parse_multi_sz(buffer: &[u16]) -> Vec<String> {
    buffer.split(|&c| c == 0).take_while(|s| !s.is_empty()).map(String::from_utf16_lossy).collect()
}

/// The instance id the driver gives a processor instance named `group,number`: `group*64+number`.
/// `None` for `_Total` and for any name that is not two decimal numbers with `number < 64`.
pub fn processor_instance_id(name: &str) -> Option<u32> {
    let (group, number) = name.split_once(',')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(group) || !digits(number) {
        return None;
    }
    let (group, number): (u32, u32) = (group.parse().ok()?, number.parse().ok()?);
    (number < 64).then_some(group * 64 + number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> counter_manifest::Manifest {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../manifests/pmupcw.man");
        let text = std::fs::read_to_string(path).expect("read manifests/pmupcw.man");
        counter_manifest::compile(path, &text, "0.1.0.0").expect("the manifest compiles").manifest
    }

    #[test]
    fn catalogue_matches_the_manifest() {
        let manifest = manifest();
        assert_eq!(manifest.counter_sets.len(), COUNTER_SETS.len(), "one spec per counterset");
        for (set, spec) in manifest.counter_sets.iter().zip(COUNTER_SETS) {
            assert_eq!(set.name, spec.name);
            assert_eq!(set.instances.is_multiple(), spec.multi_instance, "{}", spec.name);
            let expected: Vec<CounterSpec> = set
                .counters
                .iter()
                .filter(|c| !c.ty.is_base)
                .map(|c| CounterSpec {
                    name: leak(c.name.clone()),
                    monotonic: c.ty.name == "perf_counter_large_rawcount",
                })
                .collect();
            assert_eq!(spec.counters, expected.as_slice(), "counters of {}", spec.name);
        }
    }

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    #[test]
    fn paths() {
        assert_eq!(HARDWARE_COUNTERS.wildcard_path(), "\\Hardware Counters(*)\\*");
        assert_eq!(DRIVER_STATUS.wildcard_path(), "\\Hardware Counters Driver\\*");
        assert_eq!(HARDWARE_COUNTERS.counter_path("LLC Misses"), "\\Hardware Counters(*)\\LLC Misses");
        assert_eq!(DRIVER_STATUS.counter_path("PMU State"), "\\Hardware Counters Driver\\PMU State");
    }

    #[test]
    fn counter_names_of_paths() {
        assert_eq!(counter_name_of_path("\\Hardware Counters(*)\\% LLC Misses"), "% LLC Misses");
        assert_eq!(counter_name_of_path("\\\\VM\\Hardware Counters(0,1)\\LLC Misses"), "LLC Misses");
        assert_eq!(counter_name_of_path("\\Hardware Counters Driver\\PMU State"), "PMU State");
        assert_eq!(counter_name_of_path("\\Odd(a\\b)\\Counter"), "Counter");
        assert_eq!(counter_name_of_path("NoSlash"), "NoSlash");
    }

    #[test]
    fn multi_sz() {
        let mut buffer: Vec<u16> = "\\A(*)\\x\0\\A(*)\\y\0\0".encode_utf16().collect();
        assert_eq!(parse_multi_sz(&buffer), ["\\A(*)\\x", "\\A(*)\\y"]);
        buffer.extend("garbage\0".encode_utf16());
        assert_eq!(parse_multi_sz(&buffer).len(), 2, "stops at the double NUL");
        assert!(parse_multi_sz(&[0, 0]).is_empty());
        assert!(parse_multi_sz(&[]).is_empty());
        let unterminated: Vec<u16> = "one".encode_utf16().collect();
        assert_eq!(parse_multi_sz(&unterminated), ["one"]);
    }

    #[test]
    fn instance_ids() {
        assert_eq!(processor_instance_id("0,0"), Some(0));
        assert_eq!(processor_instance_id("0,63"), Some(63));
        assert_eq!(processor_instance_id("1,0"), Some(64));
        assert_eq!(processor_instance_id("2,5"), Some(133));
        for bad in ["_Total", "0,64", "0", ",1", "1,", "a,1", "0,1,2", "-1,0", " 0,1", "0, 1", ""] {
            assert_eq!(processor_instance_id(bad), None, "{bad:?}");
        }
    }
}
