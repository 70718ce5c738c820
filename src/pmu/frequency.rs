//! IA32_APERF and IA32_MPERF, for the relative frequency: APERF counts at the actual frequency and
//! MPERF at a fixed one, both only in C0, so over an interval their ratio is the average frequency
//! relative to the fixed one (Intel SDM Vol. 3B, "Hardware Coordination Feedback"; AMD APM Vol. 2,
//! "Effective Frequency Interface"). The operating system reads them too, and some firmware or
//! hypervisors reset them, so the driver only ever reads them: consumers use the difference of two
//! samples, and a reset shows as one sample without a value.

use super::msr;
use super::program::Msrs;

/// Reads both MSRs on this processor (MPERF first: the pair is taken within a few cycles) and returns
/// them as (APERF, MPERF). The last readings are kept where they are published
/// (`crate::block::publish::frequency`), not a second time beside the processor's counters.
#[inline(always)]
pub fn read(msrs: &impl Msrs) -> (u64, u64) {
    let mperf = msrs.read(msr::IA32_MPERF);
    let aperf = msrs.read(msr::IA32_APERF);
    (aperf, mperf)
}

/// The reference cycles MPERF counted from reading `before` to reading `now`: their difference, or
/// where MPERF went back (software may write it: Intel SDM Vol. 3B, "Hardware Coordination Feedback"
/// has the OS reset it; some firmware and hypervisors do at resume), the count since it was reset,
/// `now`. Never more than MPERF counted, so a total built from it never runs ahead or back.
pub const fn mperf_advance(before: u64, now: u64) -> u64 {
    if now >= before { now - before } else { now }
}

#[cfg(test)]
mod tests {
    use super::mperf_advance;

    #[test]
    fn mperf_advances_by_its_difference_or_from_a_reset() {
        assert_eq!(mperf_advance(1_000, 1_600), 600);
        assert_eq!(mperf_advance(1_000, 1_000), 0);
        // Reset to 0 since, then counted 250.
        assert_eq!(mperf_advance(1_000, 250), 250);
    }
}
