//! MmGetSystemRoutineAddress: a driver's run-time lookup of a kernel or HAL routine by name, answered
//! from the exports of the kernel the loaded image was bound to, so a routine its build lacks
//! ([`crate::kernel_build`]) is not found. [`io_space`]: device memory (MmMapIoSpaceEx, MmUnmapIoSpace).

/// MmMapIoSpaceEx and MmUnmapIoSpace.
pub mod io_space;

use super::Registry;
use super::call::{UnicodeString, enter, units_of};
use crate::cpu::PASSIVE_LEVEL;
use crate::poison::IgnorePoison;
use std::sync::RwLock;

/// The exports of the kernel the loaded driver runs on.
static SYSTEM_ROUTINES: RwLock<Option<Registry>> = RwLock::new(None);

/// Makes `registry` the kernel MmGetSystemRoutineAddress searches (the loader's, as a driver is loaded).
pub(crate) fn set_system_routines(registry: &Registry) {
    *SYSTEM_ROUTINES.write().ignore_poison() = Some(registry.clone());
}

/// `PVOID MmGetSystemRoutineAddress(PUNICODE_STRING SystemRoutineName)`: PASSIVE_LEVEL. The address of
/// the routine ntoskrnl.exe or the HAL exports under that name, or NULL if neither does; routines of
/// other drivers are never found
/// (<https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-mmgetsystemroutineaddress>).
/// Export names compare exactly, as the PE export table's names do. An invalid UNICODE_STRING is a
/// violation (Windows would fault reading it) and finds nothing.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn mm_get_system_routine_address(name: *const UnicodeString) -> *mut u8 {
    let call = enter("MmGetSystemRoutineAddress", PASSIVE_LEVEL);
    // SAFETY: null or a driver-supplied UNICODE_STRING, as the routine documents.
    let units = match unsafe { units_of(name) } {
        Ok(units) => units,
        Err(why) => {
            call.violation(format!("SystemRoutineName: {why}"));
            return std::ptr::null_mut();
        }
    };
    // A name that is not text names no export.
    let Ok(name) = String::from_utf16(&units) else { return std::ptr::null_mut() };
    let routines = SYSTEM_ROUTINES.read().ignore_poison();
    let found = routines.as_ref().and_then(|routines| {
        routines.resolve("ntoskrnl.exe", &name).or_else(|| routines.resolve("hal.dll", &name))
    });
    found.map_or(std::ptr::null_mut(), |address| address as *mut u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_build::{WINDOWS_10_1903, WINDOWS_10_2004};
    use crate::violations;

    fn lookup(name: &str) -> *mut u8 {
        let units: Vec<u16> = name.encode_utf16().collect();
        let string = UnicodeString::from_units(&units);
        // SAFETY: a valid UNICODE_STRING over `units`, which outlives the call.
        unsafe { mm_get_system_routine_address(&string) }
    }

    #[test]
    fn finds_kernel_and_hal_routines_of_the_bound_build_only_at_passive_level() {
        set_system_routines(&Registry::of_build(WINDOWS_10_2004));
        let registry = Registry::of_build(WINDOWS_10_2004);
        assert_eq!(
            lookup("ExAllocatePool2") as usize,
            registry.resolve("ntoskrnl.exe", "ExAllocatePool2").unwrap()
        );
        assert_eq!(
            lookup("KeQueryPerformanceCounter") as usize,
            registry.resolve("hal.dll", "KeQueryPerformanceCounter").unwrap()
        );
        assert!(lookup("exallocatepool2").is_null(), "export names compare exactly");
        assert!(lookup("NoSuchRoutine").is_null());
        assert!(lookup("").is_null());

        set_system_routines(&Registry::of_build(WINDOWS_10_1903));
        assert!(lookup("ExAllocatePool2").is_null(), "1903 has no ExAllocatePool2");
        assert!(!lookup("ExAllocatePoolWithTag").is_null());

        // SAFETY: NULL is what the violation check is about; the double reads nothing through it.
        assert!(unsafe { mm_get_system_routine_address(std::ptr::null()) }.is_null());
        let kpcr = crate::cpu::current();
        kpcr.set_irql(crate::cpu::DISPATCH_LEVEL);
        assert!(
            !lookup("ExAllocatePoolWithTag").is_null(),
            "the double records the violation and still answers"
        );
        kpcr.set_irql(PASSIVE_LEVEL);
        // all(), not take(): other unit tests of this process record violations of their own.
        let messages: Vec<String> = violations::all()
            .into_iter()
            .filter(|violation| violation.at == "MmGetSystemRoutineAddress")
            .map(|violation| violation.message)
            .collect();
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].contains("NULL UNICODE_STRING"), "{}", messages[0]);
        assert!(messages[1].contains("called at IRQL 2, above its maximum 0"), "{}", messages[1]);
    }
}
