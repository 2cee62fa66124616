//! Every device with its identity and all of its properties.
//!
//! `cargo run -p cudars-core --example device_info`

use std::process::ExitCode;

use cudars_core::{Device, Result};

fn run() -> Result<()> {
    let version = cudars_core::cudars_bindings::driver::version()
        .map_err(|source| cudars_core::Error::from_driver("asking the driver's version", source))?;
    let devices = Device::all()?;
    println!("CUDA driver {version}, {} device(s)", devices.len());
    for d in devices {
        println!(
            "\ndevice {}: {} ({}), {} MiB, {}, PCI {}",
            d.ordinal(),
            d.name()?,
            d.arch()?,
            d.total_memory()? >> 20,
            d.uuid_string()?,
            d.pci_bus_id()?
        );
        let (least, greatest) = d.stream_priority_range()?;
        println!("  stream priorities: {greatest} (highest) to {least}");
        for (name, value) in d.properties().all() {
            match value {
                Ok(v) => println!("  {name:<56} {v}"),
                Err(e) => println!(
                    "  {name:<56} (unavailable: {})",
                    cudars_core::Report::new(&e)
                ),
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("device_info: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
