//! A registry missing exports the driver imports fails the load, naming every missing import.

use crate::common;

use kernel_double::driver::Driver;
use kernel_double::exports::Registry;
use kernel_double::loader::LoadError;

#[test]
fn every_unresolved_import_is_listed() {
    // The image names the HAL `hal.dll` (windows-sys); the registry matches modules case-insensitively
    // and the report uses the image's spelling.
    let bytes = std::fs::read(common::driver_image()).expect("reading the driver");
    let registry = Registry::kernel()
        .without("ntoskrnl.exe", "PcwRegister")
        .without("HAL.dll", "KeQueryPerformanceCounter");
    let error = Driver::load_bytes(&bytes, &registry).err().expect("the load must fail");
    assert_eq!(
        error,
        LoadError::UnresolvedImports(vec![
            "ntoskrnl.exe!PcwRegister".into(),
            "hal.dll!KeQueryPerformanceCounter".into()
        ])
    );
    let message = error.to_string();
    assert!(message.contains("PcwRegister") && message.contains("KeQueryPerformanceCounter"), "{message}");

    // The full registry provides every import.
    assert!(Driver::load_bytes(&bytes, &Registry::kernel()).is_ok());
}
