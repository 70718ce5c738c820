//! Test control of the fake callback exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

use super::*;

/// Registrations and object references the driver still holds.
pub fn outstanding() -> usize {
    with_state(|state| state.references + state.registrations.len())
}

/// A sleep and a resume (S3, or S4 and back): the power callbacks hear that S0 is about to be left,
/// every processor's PMU comes back with its power-on values ([`pmu::power_on_reset`]), and the
/// callbacks hear that the system is back in S0. Called by a test, from a thread that is not running
/// driver code.
pub fn suspend_resume() {
    notify(false);
    pmu::power_on_reset();
    notify(true);
}
