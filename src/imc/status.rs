//! The memory controller source's status, as the number its status counter will publish: stable
//! values, never renumbered (a dashboard or alert keys on them), each with the text the docs and
//! debug lines use. The table of values and what to do about each: `docs/memory-controller.md`.

/// What the memory controller source is doing, or why it maps nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Status {
    /// Detected and usable, but nobody queries its counters: nothing is mapped.
    Idle = 0,
    /// Mapped and read.
    Counting = 1,
    /// Not Intel, not family 6, or a model the table does not list (servers, older or newer parts).
    UnsupportedModel = 2,
    /// Device 00:00.0 is not an Intel host bridge with an ID listed for this model.
    NoDevice = 3,
    /// MCHBAR's enable bit is clear, or its address is zero, not page-aligned, or beyond 52 bits.
    MchbarDisabled = 4,
    /// A hypervisor other than the Microsoft hypervisor's root partition: the host bridge seen is
    /// emulated, or the real one belongs to another partition.
    UnderHypervisor = 5,
    /// MmMapIoSpaceEx returned no mapping.
    MapFailed = 6,
    /// Not detected: the boot guard holds this start's hardware off (`crate::session::boot_guard`).
    HeldOff = 7,
}

impl Status {
    /// Every status, in value order.
    pub const ALL: [Status; 8] = [
        Status::Idle,
        Status::Counting,
        Status::UnsupportedModel,
        Status::NoDevice,
        Status::MchbarDisabled,
        Status::UnderHypervisor,
        Status::MapFailed,
        Status::HeldOff,
    ];

    /// The value the status counter publishes.
    pub const fn value(self) -> u32 {
        self as u32
    }

    /// A short description, as the docs' status table gives it.
    pub const fn text(self) -> &'static str {
        match self {
            Status::Idle => "idle: detected, nothing mapped until a query",
            Status::Counting => "counting",
            Status::UnsupportedModel => "unsupported processor model",
            Status::NoDevice => "no listed Intel host bridge at 00:00.0",
            Status::MchbarDisabled => "MCHBAR disabled, zero or misaligned",
            Status::UnderHypervisor => "under a hypervisor (not the Hyper-V root partition)",
            Status::MapFailed => "mapping the counters' page failed",
            Status::HeldOff => "held off: the previous start did not reach its known-good point",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_stable_and_dense() {
        // The published numbers: changing one breaks every consumer that keys on it.
        let expected = [0, 1, 2, 3, 4, 5, 6, 7];
        let values: Vec<u32> = Status::ALL.iter().map(|s| s.value()).collect();
        assert_eq!(values, expected);
        for (i, a) in Status::ALL.iter().enumerate() {
            assert!(!a.text().is_empty());
            for b in &Status::ALL[i + 1..] {
                assert_ne!(a.text(), b.text());
            }
        }
    }
}
