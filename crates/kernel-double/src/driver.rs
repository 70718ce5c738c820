//! A loaded driver: DriverEntry and DriverUnload called the way the I/O manager calls them, with a fake
//! DRIVER_OBJECT and registry path, at PASSIVE_LEVEL, and INIT discarded once DriverEntry returns.

use crate::control::{dpc, ps};
use crate::cpu::{self, PASSIVE_LEVEL};
use crate::exports::{Registry, UnicodeString, mm};
use crate::loader::{Image, LoadError};
use crate::status::NtStatus;
use crate::violations;
use std::path::Path;

/// sizeof(DRIVER_OBJECT) on x64.
const DRIVER_OBJECT_SIZE: usize = 0x150;
/// Offset of DRIVER_OBJECT.DriverUnload on x64: Type, Size (2+2, padded to 8), DeviceObject 0x08, Flags
/// 0x10, DriverStart 0x18, DriverSize 0x20, DriverSection 0x28, DriverExtension 0x30, DriverName 0x38
/// (a 16-byte UNICODE_STRING), HardwareDatabase 0x48, FastIoDispatch 0x50, DriverInit 0x58,
/// DriverStartIo 0x60, DriverUnload 0x68, then MajorFunction[28] 0x70..0x150.
const DRIVER_UNLOAD_OFFSET: usize = 0x68;
const DRIVER_START_OFFSET: usize = 0x18;
const DRIVER_SIZE_OFFSET: usize = 0x20;
const DRIVER_INIT_OFFSET: usize = 0x58;
const IO_TYPE_DRIVER: i16 = 4;
const _: () = assert!(DRIVER_UNLOAD_OFFSET + 8 + 28 * 8 == DRIVER_OBJECT_SIZE);

/// A driver image loaded into the double.
pub struct Driver {
    image: Image,
    /// The DRIVER_OBJECT (8-byte aligned storage).
    driver_object: Box<[u64; DRIVER_OBJECT_SIZE / 8]>,
    _registry_path_units: Vec<u16>,
    registry_path: Box<UnicodeString>,
    entered: bool,
}

impl Driver {
    /// Loads the image at `path`, binding it to the fake kernel of the chosen Windows build
    /// ([`crate::kernel_build`]).
    pub fn load(path: &Path) -> Result<Driver, LoadError> {
        let bytes =
            std::fs::read(path).map_err(|error| LoadError::Os(format!("{}: {error}", path.display())))?;
        Driver::load_bytes(&bytes, &Registry::kernel())
    }

    /// Loads an image from memory, binding it to `registry`, which MmGetSystemRoutineAddress then
    /// searches too.
    pub fn load_bytes(bytes: &[u8], registry: &Registry) -> Result<Driver, LoadError> {
        cpu::trap::install();
        cpu::set_thread_object_source(crate::exports::ps::host_thread_object);
        cpu::trap::set_guard_fault_describer(crate::control::pool::describe_guard_fault);
        cpu::trap::set_bug_check(crate::exports::dbg::bug_check);
        let image = Image::load(bytes, registry)?;
        mm::set_system_routines(registry);
        let units: Vec<u16> =
            "\\REGISTRY\\MACHINE\\SYSTEM\\CurrentControlSet\\Services\\pmupcw".encode_utf16().collect();
        let registry_path = Box::new(UnicodeString::from_units(&units));
        let mut driver_object = Box::new([0u64; DRIVER_OBJECT_SIZE / 8]);
        driver_object[0] = (IO_TYPE_DRIVER as u16 as u64) | ((DRIVER_OBJECT_SIZE as u64) << 16);
        driver_object[DRIVER_START_OFFSET / 8] = image.base() as u64;
        driver_object[DRIVER_SIZE_OFFSET / 8] = image.size() as u64;
        driver_object[DRIVER_INIT_OFFSET / 8] = image.entry_point() as u64;
        Ok(Driver { image, driver_object, _registry_path_units: units, registry_path, entered: false })
    }

    pub fn image(&self) -> &Image {
        &self.image
    }

    /// Calls DriverEntry on the calling thread (virtual processor 0, PASSIVE_LEVEL), then discards INIT.
    pub fn driver_entry(&mut self) -> NtStatus {
        assert!(!self.entered, "DriverEntry called twice");
        self.entered = true;
        let kpcr = cpu::enter(0);
        // SAFETY: the entry point of the mapped, bound image is DriverEntry, `NTSTATUS (*)(PDRIVER_OBJECT,
        // PUNICODE_STRING)`; both arguments live as long as the driver.
        let entry: extern "win64" fn(*mut u64, *const UnicodeString) -> NtStatus =
            unsafe { std::mem::transmute(self.image.entry_point()) };
        let status = entry(self.driver_object.as_mut_ptr(), &*self.registry_path);
        if kpcr.irql() != PASSIVE_LEVEL {
            violations::record("DriverEntry", None, format!("returned at IRQL {}", kpcr.irql()));
            kpcr.set_irql(PASSIVE_LEVEL);
        }
        self.image.discard_init().expect("discarding INIT");
        status
    }

    /// The DriverUnload routine DriverEntry set, if any.
    pub fn unload_routine(&self) -> Option<usize> {
        let routine = self.driver_object[DRIVER_UNLOAD_OFFSET / 8] as usize;
        (routine != 0).then_some(routine)
    }

    /// Calls DriverUnload (PASSIVE_LEVEL). Returns false if the driver set none.
    pub fn unload(&mut self) -> bool {
        let Some(routine) = self.unload_routine() else { return false };
        let kpcr = cpu::enter(0);
        // SAFETY: DriverEntry stored a PDRIVER_UNLOAD, `VOID (*)(PDRIVER_OBJECT)`, in the driver object.
        let unload: extern "win64" fn(*mut u64) = unsafe { std::mem::transmute(routine) };
        unload(self.driver_object.as_mut_ptr());
        if kpcr.irql() != PASSIVE_LEVEL {
            violations::record("DriverUnload", None, format!("returned at IRQL {}", kpcr.irql()));
            kpcr.set_irql(PASSIVE_LEVEL);
        }
        let (base, size) = (self.image.base(), self.image.size());
        let pending = dpc::pending_in(base, size);
        if pending > 0 {
            violations::record(
                "DriverUnload",
                None,
                format!(
                    "returned with {pending} DPC(s) of the driver still queued or running (Driver Verifier: \
                     bug check 0xCE, DRIVER_UNLOADED_WITHOUT_CANCELLING_PENDING_OPERATIONS)"
                ),
            );
            // On Windows the machine stops here; the double stops the driver's DPCs instead.
            dpc::halt(base, size);
        }
        self.driver_object[DRIVER_UNLOAD_OFFSET / 8] = 0;
        true
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // Unmap only when no driver code can run any more.
        if self.unload_routine().is_some()
            || ps::live_system_threads() > 0
            || dpc::pending_in(self.image.base(), self.image.size()) > 0
        {
            self.image.leak_on_drop();
        }
    }
}
