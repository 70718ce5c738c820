//! The counters the harness queries: every displayable counter of both countersets of
//! `manifests/pmupcw.man`, by English name (`PdhAddEnglishCounterW`), and which of them are raw totals
//! that must never decrease while the driver stays loaded. build.rs generates the table from the
//! manifest, so a counter added there is queried with no edit here.

/// One counter of a counterset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterSpec {
    /// English name, as in the manifest's `name` attribute.
    pub name: &'static str,
    /// A raw 64-bit total (`perf_counter_large_rawcount`): monotonic per instance within one service
    /// session (the driver keeps counting from a new base after a restart).
    pub monotonic: bool,
}

/// How a counterset's instances look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceKind {
    /// `single`: one instance.
    Single,
    /// `multipleAggregate`: one instance per logical processor, named `group,number`, plus `_Total`.
    PerProcessor,
    /// `multiple`: named instances (the core types), no `_Total`.
    Named,
    /// `multipleAggregate` of the memory controllers: one instance per controller, named
    /// `package,controller`, plus `_Total`; none at all on a machine where the source does not count
    /// (its status counter says why).
    Controllers,
}

/// One counterset of the manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterSetSpec {
    pub name: &'static str,
    pub instances: InstanceKind,
    /// The displayable counters; base counters (`perf_*_base`, `noDisplay`) are read by PDH with their
    /// fraction and cannot be added on their own.
    pub counters: &'static [CounterSpec],
}

include!(concat!(env!("OUT_DIR"), "/catalogue.rs"));

/// The name PDH gives the aggregate instance of a `multipleAggregate` counterset.
pub const TOTAL_INSTANCE: &str = "_Total";

impl CounterSetSpec {
    /// `\Hardware Counters(*)\*` or `\Hardware Counters Driver\*`: the wildcard the harness expands.
    pub fn wildcard_path(&self) -> String {
        self.counter_path("*")
    }

    /// The full English path of one counter, every instance for a multi-instance set.
    pub fn counter_path(&self, counter: &str) -> String {
        if self.instances != InstanceKind::Single {
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

    /// Spot checks of the generated table: every counterset, totals monotonic, rates and ratios
    /// not, bases left out.
    #[test]
    fn the_catalogue_is_the_manifests() {
        let [hardware, driver, by_core_type, memory] = COUNTER_SETS;
        assert_eq!((hardware.name, hardware.instances), ("Hardware Counters", InstanceKind::PerProcessor));
        assert_eq!((driver.name, driver.instances), ("Hardware Counters Driver", InstanceKind::Single));
        assert_eq!(
            (by_core_type.name, by_core_type.instances),
            ("Hardware Counters by Core Type", InstanceKind::Named)
        );
        let find = |set: CounterSetSpec, name: &str| set.counters.iter().find(|c| c.name == name).copied();
        assert_eq!(find(hardware, "Instructions Retired").map(|c| c.monotonic), Some(true));
        assert_eq!(find(hardware, "Instructions Retired/sec").map(|c| c.monotonic), Some(false));
        assert_eq!(find(hardware, "Instructions per Cycle").map(|c| c.monotonic), Some(false));
        assert!(hardware.counters.iter().all(|c| !c.name.contains("Base")), "a base counter is listed");
        assert!(find(driver, "PMU Reprograms").is_some());
        assert_eq!((memory.name, memory.instances), ("Memory Controller", InstanceKind::Controllers));
        assert_eq!(find(memory, "DRAM Read Bytes").map(|c| c.monotonic), Some(true));
        assert_eq!(find(memory, "DRAM Read Bytes/sec").map(|c| c.monotonic), Some(false));
        assert!(find(driver, "Memory Controller State").is_some());
    }

    #[test]
    fn paths() {
        let [hardware, driver, _, _] = COUNTER_SETS;
        assert_eq!(hardware.wildcard_path(), "\\Hardware Counters(*)\\*");
        assert_eq!(driver.wildcard_path(), "\\Hardware Counters Driver\\*");
        assert_eq!(hardware.counter_path("LLC Misses"), "\\Hardware Counters(*)\\LLC Misses");
        assert_eq!(driver.counter_path("PMU State"), "\\Hardware Counters Driver\\PMU State");
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
