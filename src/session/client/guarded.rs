//! The boot guard's part of the client (`crate::session::boot_guard`): a start held off, and the
//! core PMU's known-good point, the first fresh read after its first programming.

use super::PmuClient;
use crate::imc::status::Status;
use crate::pcw::driver_status::{HardwareGuard, PmuState};
use crate::session::boot_guard::Source;
use crate::session::memory_controller::MemoryController;
use crate::session::platform::Platform;

impl<P: Platform> PmuClient<P> {
    /// For this whole load, touches neither the PMU nor the memory controllers (the start found the
    /// boot guard's marker: `why`), and says so in the status and the debug output. Once, before the
    /// client is shared, instead of [`Self::detect_memory_controller`].
    pub fn hold_off(&mut self, why: HardwareGuard) {
        self.guard.hold_off();
        self.status.set_pmu_state(PmuState::HeldOff);
        self.status.set_hardware_guard(why);
        self.memory = MemoryController::new(Err(Status::HeldOff), self.status);
        self.platform.log(format_args!(
            "held off: Parameters\\HardwareGuard is set ({why:?}): the last start did not reach its known-good \
             point (a clean read after its first programming), so neither the PMU nor the memory controllers \
             are touched. Re-enable: delete the value and restart the driver"
        ));
    }

    /// The first fresh read of every processor after the first programming came back: the boot
    /// guard's known-good point for the core PMU (cleared at PASSIVE_LEVEL only; a read above it
    /// leaves that to the next). Out of line: once per load.
    #[cold]
    #[inline(never)]
    pub(super) fn first_read_done(&self) {
        if self.platform.at_passive_level() {
            self.guard.after_clean_read(
                Source::CorePmu,
                |set| self.platform.write_guard_marker(set),
                self.status,
            );
        }
    }
}
