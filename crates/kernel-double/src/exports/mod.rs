//! The fake ntoskrnl.exe and HAL.dll: every routine the driver imports, with its documented semantics
//! and its documented maximum IRQL checked on entry.
//!
//! Each export is reached through a small assembly trampoline that stores the driver's return address
//! (`[rsp]` on entry) in the calling thread's KPCR (`gs:[0x200]`) and jumps to the Rust implementation,
//! so a violation can name the call site as an RVA of the image.

pub mod affinity;
mod call;
pub mod callback;
pub mod dbg;
pub mod dpc;
mod faults;
pub mod hal;
pub mod ke;
pub mod mm;
pub mod pcw;
pub mod pool;
pub mod ps;
pub mod registry;
pub mod rtl;
pub mod spinlock;

use crate::kernel_build;
pub use call::UnicodeString;
use std::collections::HashMap;

/// Defines `$trampoline`, which records the caller in the KPCR and tail-jumps to `$implementation`.
macro_rules! trampoline {
    ($trampoline:ident => $implementation:path) => {
        core::arch::global_asm!(
            ".pushsection .text.kernel_double_trampolines,\"ax\",@progbits",
            ".p2align 4",
            concat!(".globl ", stringify!($trampoline)),
            concat!(stringify!($trampoline), ":"),
            "mov r11, qword ptr [rsp]",
            "mov qword ptr gs:[0x200], r11",
            "jmp {implementation}",
            ".popsection",
            implementation = sym $implementation,
        );
    };
}

macro_rules! exports {
    ($($module:literal $name:literal $trampoline:ident => $implementation:path;)*) => {
        $( trampoline!($trampoline => $implementation); )*
        unsafe extern "C" {
            $( fn $trampoline(); )*
        }
        /// (module, routine, address) of every export.
        fn table() -> Vec<(&'static str, &'static str, usize)> {
            vec![$( ($module, $name, $trampoline as *const () as usize), )*]
        }
    };
}

exports! {
    "ntoskrnl.exe" "DbgPrintEx" kd_DbgPrintEx => dbg::dbg_print_ex;
    "ntoskrnl.exe" "ExAllocatePool2" kd_ExAllocatePool2 => pool::ex_allocate_pool2;
    "ntoskrnl.exe" "ExAllocatePoolWithTag" kd_ExAllocatePoolWithTag => pool::ex_allocate_pool_with_tag;
    "ntoskrnl.exe" "ExCreateCallback" kd_ExCreateCallback => callback::ex_create_callback;
    "ntoskrnl.exe" "ExFreePoolWithTag" kd_ExFreePoolWithTag => pool::ex_free_pool_with_tag;
    "ntoskrnl.exe" "ExRegisterCallback" kd_ExRegisterCallback => callback::ex_register_callback;
    "ntoskrnl.exe" "ExUnregisterCallback" kd_ExUnregisterCallback => callback::ex_unregister_callback;
    "ntoskrnl.exe" "KeBugCheckEx" kd_KeBugCheckEx => dbg::ke_bug_check_ex;
    "ntoskrnl.exe" "KeAcquireSpinLockAtDpcLevel" kd_KeAcquireSpinLockAtDpcLevel => spinlock::ke_acquire_spin_lock_at_dpc_level;
    "ntoskrnl.exe" "KeAcquireSpinLockRaiseToDpc" kd_KeAcquireSpinLockRaiseToDpc => spinlock::ke_acquire_spin_lock_raise_to_dpc;
    "ntoskrnl.exe" "KeClearEvent" kd_KeClearEvent => ke::ke_clear_event;
    "ntoskrnl.exe" "KeFlushQueuedDpcs" kd_KeFlushQueuedDpcs => dpc::ke_flush_queued_dpcs;
    "ntoskrnl.exe" "KeGetCurrentProcessorNumberEx" kd_KeGetCurrentProcessorNumberEx => affinity::ke_get_current_processor_number_ex;
    "ntoskrnl.exe" "KeGetProcessorNumberFromIndex" kd_KeGetProcessorNumberFromIndex => ke::ke_get_processor_number_from_index;
    "ntoskrnl.exe" "KeInitializeDpc" kd_KeInitializeDpc => dpc::ke_initialize_dpc;
    "ntoskrnl.exe" "KeInitializeEvent" kd_KeInitializeEvent => ke::ke_initialize_event;
    "ntoskrnl.exe" "KeInsertQueueDpc" kd_KeInsertQueueDpc => dpc::ke_insert_queue_dpc;
    "ntoskrnl.exe" "KeIpiGenericCall" kd_KeIpiGenericCall => ke::ke_ipi_generic_call;
    "ntoskrnl.exe" "KeQueryActiveProcessorCountEx" kd_KeQueryActiveProcessorCountEx => ke::ke_query_active_processor_count_ex;
    "ntoskrnl.exe" "KeRemoveQueueDpc" kd_KeRemoveQueueDpc => dpc::ke_remove_queue_dpc;
    "ntoskrnl.exe" "KeRevertToUserGroupAffinityThread" kd_KeRevertToUserGroupAffinityThread => affinity::ke_revert_to_user_group_affinity_thread;
    "ntoskrnl.exe" "KeReleaseSpinLock" kd_KeReleaseSpinLock => spinlock::ke_release_spin_lock;
    "ntoskrnl.exe" "KeReleaseSpinLockFromDpcLevel" kd_KeReleaseSpinLockFromDpcLevel => spinlock::ke_release_spin_lock_from_dpc_level;
    "ntoskrnl.exe" "KeSetEvent" kd_KeSetEvent => ke::ke_set_event;
    "ntoskrnl.exe" "KeSetSystemGroupAffinityThread" kd_KeSetSystemGroupAffinityThread => affinity::ke_set_system_group_affinity_thread;
    "ntoskrnl.exe" "KeSetTargetProcessorDpcEx" kd_KeSetTargetProcessorDpcEx => dpc::ke_set_target_processor_dpc_ex;
    "ntoskrnl.exe" "KeWaitForSingleObject" kd_KeWaitForSingleObject => ke::ke_wait_for_single_object;
    "ntoskrnl.exe" "MmGetSystemRoutineAddress" kd_MmGetSystemRoutineAddress => mm::mm_get_system_routine_address;
    "ntoskrnl.exe" "MmMapIoSpaceEx" kd_MmMapIoSpaceEx => mm::io_space::mm_map_io_space_ex;
    "ntoskrnl.exe" "MmUnmapIoSpace" kd_MmUnmapIoSpace => mm::io_space::mm_unmap_io_space;
    "ntoskrnl.exe" "ObReferenceObjectByHandle" kd_ObReferenceObjectByHandle => ps::ob_reference_object_by_handle;
    "ntoskrnl.exe" "ObfDereferenceObject" kd_ObfDereferenceObject => ps::obf_dereference_object;
    "ntoskrnl.exe" "PcwAddInstance" kd_PcwAddInstance => pcw::pcw_add_instance;
    "ntoskrnl.exe" "PcwCloseInstance" kd_PcwCloseInstance => pcw::pcw_close_instance;
    "ntoskrnl.exe" "PcwCreateInstance" kd_PcwCreateInstance => pcw::pcw_create_instance;
    "ntoskrnl.exe" "PcwRegister" kd_PcwRegister => pcw::pcw_register;
    "ntoskrnl.exe" "PcwUnregister" kd_PcwUnregister => pcw::pcw_unregister;
    "ntoskrnl.exe" "PsCreateSystemThread" kd_PsCreateSystemThread => ps::ps_create_system_thread;
    "ntoskrnl.exe" "PsTerminateSystemThread" kd_PsTerminateSystemThread => ps::ps_terminate_system_thread;
    "ntoskrnl.exe" "RtlUpcaseUnicodeChar" kd_RtlUpcaseUnicodeChar => rtl::rtl_upcase_unicode_char;
    "ntoskrnl.exe" "ZwClose" kd_ZwClose => ps::zw_close;
    "ntoskrnl.exe" "ZwCreateKey" kd_ZwCreateKey => registry::write::zw_create_key;
    "ntoskrnl.exe" "ZwDeleteValueKey" kd_ZwDeleteValueKey => registry::write::zw_delete_value_key;
    "ntoskrnl.exe" "ZwFlushKey" kd_ZwFlushKey => registry::write::zw_flush_key;
    "ntoskrnl.exe" "ZwOpenKey" kd_ZwOpenKey => registry::zw_open_key;
    "ntoskrnl.exe" "ZwQueryValueKey" kd_ZwQueryValueKey => registry::zw_query_value_key;
    "ntoskrnl.exe" "ZwSetValueKey" kd_ZwSetValueKey => registry::write::zw_set_value_key;
    "ntoskrnl.exe" "ZwWaitForSingleObject" kd_ZwWaitForSingleObject => ps::zw_wait_for_single_object;
    "ntoskrnl.exe" "memcpy" kd_memcpy => rtl::memcpy;
    "ntoskrnl.exe" "memset" kd_memset => rtl::memset;
    "HAL.dll" "HalAllocateHardwareCounters" kd_HalAllocateHardwareCounters => hal::hal_allocate_hardware_counters;
    "HAL.dll" "HalFreeHardwareCounters" kd_HalFreeHardwareCounters => hal::hal_free_hardware_counters;
    "HAL.dll" "HalGetBusDataByOffset" kd_HalGetBusDataByOffset => hal::pci::hal_get_bus_data_by_offset;
    "HAL.dll" "KeQueryPerformanceCounter" kd_KeQueryPerformanceCounter => hal::ke_query_performance_counter;
}

/// Routines by (module, name), modules compared case-insensitively (the driver names `HAL.dll`,
/// windows-sys `hal.dll`).
#[derive(Clone, Debug)]
pub struct Registry {
    routines: HashMap<(String, String), usize>,
}

impl Registry {
    /// Every export of the fake kernel of the chosen Windows build ([`kernel_build::current`]).
    pub fn kernel() -> Registry {
        Registry::of_build(kernel_build::current())
    }

    /// Every export the fake kernel has on Windows build `build`.
    pub fn of_build(build: u32) -> Registry {
        let routines = table()
            .into_iter()
            .filter(|(module, name, _)| kernel_build::exports(build, module, name))
            .map(|(module, name, address)| ((module.to_ascii_lowercase(), name.to_string()), address))
            .collect();
        Registry { routines }
    }

    /// This registry without `module!name` (for tests of the loader's error reporting).
    pub fn without(mut self, module: &str, name: &str) -> Registry {
        self.routines.remove(&(module.to_ascii_lowercase(), name.to_string()));
        self
    }

    /// The address bound for `module!name`.
    pub fn resolve(&self, module: &str, name: &str) -> Option<usize> {
        self.routines.get(&(module.to_ascii_lowercase(), name.to_string())).copied()
    }

    /// Every (module, name) provided.
    pub fn names(&self) -> Vec<(String, String)> {
        let mut names: Vec<_> = self.routines.keys().cloned().collect();
        names.sort();
        names
    }
}
