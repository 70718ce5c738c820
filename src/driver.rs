//! The driver's state between DriverEntry and DriverUnload, and the order things are set up and torn
//! down in.

use crate::imc::detect::CpuIdValues;
use crate::kernel::pcw::{self, CallbackCounterset, SingleInstanceCounterset};
use crate::kernel::platform::{Client, CoreTypeSession, KernelPlatform, ProcessorState};
use crate::kernel::pool::{PoolArc, PoolBox, PoolSlice};
use crate::kernel::power::PowerCallback;
use crate::kernel::registry::ParametersKey;
use crate::kernel::system_thread::SystemThread;
use crate::kernel::{NtStatus, clock, msr, processors};
use crate::pcw::core_types::CoreTypeCounters;
use crate::pcw::driver_status::STATUS;
use crate::pcw::hardware_counters::HardwareCounters;
use crate::pcw::memory_controller::MemoryControllerCounters;
use crate::pcw::processor_instances::ProcessorInstance;
use crate::pmu::hybrid::{CoreType, Machine, ProcessorDescription, own_counters};
use crate::pmu::model::{self, Detection};
use crate::pmu::placement::CounterPlan;
use crate::session::boot_guard::{self, StartMode};
use crate::settings::HEADER_UNITS;
use windows_sys::Win32::Foundation::STATUS_INSUFFICIENT_RESOURCES;

/// The PMU client, shared by the Hardware Counters callback, the power callback and the
/// housekeeping thread; the last of them to go releases the counters (PmuClient's Drop) and frees it.
type SharedPmu = PoolArc<Client>;

type HardwareCountersProvider = HardwareCounters<PoolSlice<ProcessorInstance>, SharedPmu>;

type CoreTypeProvider = CoreTypeCounters<SharedPmu>;

type MemoryProvider = MemoryControllerCounters<SharedPmu>;

/// Everything DriverEntry set up. Fields drop in declaration order, which is teardown order: the
/// countersets unregister (waiting for running callbacks) before anything a callback reads is freed,
/// and each owns what its callbacks read; the power callback is unregistered and the housekeeping
/// thread stops (and is waited for) before the PMU client they share is released and freed.
pub struct Driver {
    _driver_status: SingleInstanceCounterset,
    _memory_controller: CallbackCounterset<MemoryProvider>,
    _by_core_type: CallbackCounterset<CoreTypeProvider>,
    _hardware_counters: CallbackCounterset<HardwareCountersProvider>,
    _power: PowerCallback<SharedPmu>,
    _housekeeping: SystemThread<SharedPmu>,
}

impl Driver {
    /// Sets everything up at PASSIVE_LEVEL. On failure, what was already set up is torn down (in
    /// reverse order, by its owners' drops) before the error is returned.
    pub fn load(registry_path: &[u16]) -> Result<Self, NtStatus> {
        let parameters =
            ParametersKey::new(registry_path).ok_or_else(|| out_of_memory("Parameters key path"))?;
        // The boot guard's marker, read before any hardware is touched (docs/internals.md, "No boot loop").
        let mut marker = [0u16; HEADER_UNITS + 2];
        let held_off = match boot_guard::start_mode(parameters.read(boot_guard::MARKER, &mut marker)) {
            StartMode::Normal => None,
            StartMode::HeldOff(why) => Some(why),
        };
        let processors = processors::active_processors().ok_or_else(|| out_of_memory("processor table"))?;
        let processor_count = processors.len();
        let per_processor: PoolSlice<ProcessorState> =
            PoolSlice::zeroed(processor_count).ok_or_else(|| out_of_memory("per-processor PMU state"))?;
        let machine = Machine::of(processors.iter().map(|instance| {
            let description = processors::on_processor(instance.group(), instance.number(), || {
                describe_this_processor(held_off.is_none())
            });
            if let Some(state) = per_processor.get(instance.index() as usize) {
                state.pmu.set_core_type(description.core_type);
            }
            description
        }));
        match machine.detection {
            Detection::Usable(model) => log_info!("PMU (what every processor has): {model:?}"),
            Detection::Unusable(reason) => log_info!("no usable PMU ({reason:?}): counters read 0"),
        }
        if machine.hybrid() {
            for (core_type, model) in machine.models() {
                log_info!(
                    "core type {core_type}: {} GP and {} fixed counters, top-down metrics {}",
                    model.gp_counters,
                    model.fixed_counters,
                    model.topdown_metrics()
                );
            }
        }
        for core_type in [CoreType::Performance, CoreType::Efficient] {
            let count = per_processor.iter().filter(|state| state.pmu.core_type() == core_type as u8).count();
            if count > 0 {
                log_info!("{count} processors of core type {core_type:?}");
            }
        }
        // One core type session and one last plan per core type the machine has: one, unless it is hybrid.
        let core_types = machine.models().count();
        let sessions: PoolSlice<Option<CoreTypeSession>> =
            PoolSlice::filled(core_types, || None).ok_or_else(|| out_of_memory("core type sessions"))?;
        let plans: PoolSlice<Option<CounterPlan>> =
            PoolSlice::filled(core_types, || None).ok_or_else(|| out_of_memory("last plans"))?;
        let mut client =
            Client::new(KernelPlatform::new(parameters), machine, per_processor, sessions, plans, &STATUS);
        match held_off {
            None => client.detect_memory_controller(&CpuIdValues::read(&raw_cpuid::CpuIdReaderNative)),
            Some(why) => client.hold_off(why),
        }
        let pmu: SharedPmu = PoolArc::new(client).map_err(|_| out_of_memory("PMU client"))?;
        let housekeeping = SystemThread::spawn(pmu.clone())
            .inspect_err(|status| log_error!("PsCreateSystemThread failed: {status:#x}"))?;
        let power = PowerCallback::register(pmu.clone())
            .inspect_err(|status| log_error!("registering for \\Callback\\PowerState failed: {status:#x}"))?;
        let by_core_type = PoolBox::new(CoreTypeCounters::new(pmu.clone(), pcw::upcase))
            .map_err(|_| out_of_memory("Hardware Counters by Core Type provider"))?;
        let memory = PoolBox::new(MemoryControllerCounters::new(pmu.clone(), pcw::upcase))
            .map_err(|_| out_of_memory("Memory Controller provider"))?;
        let provider = HardwareCounters::new(processors, pmu, &STATUS, pcw::upcase, clock::nanoseconds);
        let provider = PoolBox::new(provider).map_err(|_| out_of_memory("Hardware Counters provider"))?;
        // Each counterset's name and descriptors come from its generated binding: the callback's
        // counterset, and the counterset the status block belongs to.
        let hardware_counters = CallbackCounterset::register(provider)
            .inspect_err(|status| log_error!("PcwRegister(Hardware Counters) failed: {status:#x}"))?;
        let by_core_type = CallbackCounterset::register(by_core_type).inspect_err(|status| {
            log_error!("PcwRegister(Hardware Counters by Core Type) failed: {status:#x}")
        })?;
        let memory_controller = CallbackCounterset::register(memory)
            .inspect_err(|status| log_error!("PcwRegister(Memory Controller) failed: {status:#x}"))?;
        let driver_status = SingleInstanceCounterset::register(STATUS.block())
            .inspect_err(|status| log_error!("PcwRegister(Hardware Counters Driver) failed: {status:#x}"))?;
        log_info!("countersets registered for {processor_count} processors");
        Ok(Driver {
            _driver_status: driver_status,
            _memory_controller: memory_controller,
            _by_core_type: by_core_type,
            _hardware_counters: hardware_counters,
            _power: power,
            _housekeeping: housekeeping,
        })
    }
}

/// The processor this runs on, as it describes itself: its core type and its PMU, with
/// IA32_PERF_CAPABILITIES read on it if `read_msrs` (not in a start the boot guard holds off, which
/// executes no rdmsr: CPUID only).
fn describe_this_processor(read_msrs: bool) -> ProcessorDescription {
    let core_type = CoreType::detect(raw_cpuid::CpuIdReaderNative);
    let detection = match model::detect(raw_cpuid::CpuIdReaderNative) {
        Detection::Usable(model) if !read_msrs => {
            Detection::Usable(own_counters(&raw_cpuid::CpuIdReaderNative, core_type, model))
        }
        Detection::Usable(model) => {
            let model = own_counters(&raw_cpuid::CpuIdReaderNative, core_type, model);
            Detection::Usable(model.with_perf_capabilities(|| msr::perf_capabilities(&model)))
        }
        unusable => unusable,
    };
    ProcessorDescription { core_type, detection }
}

fn out_of_memory(what: &str) -> NtStatus {
    STATUS.record_allocation_failure();
    log_error!("out of non-paged pool for the {what}");
    STATUS_INSUFFICIENT_RESOURCES
}
