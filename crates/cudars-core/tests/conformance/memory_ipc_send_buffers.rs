//! `cuda_core/tests/memory_ipc/test_send_buffers.py` of `cuda.core` (the pinned commit
//! of `docs/reference/cuda-core-tests.txt`), ported as `memory_ipc_memory_ipc.rs`
//! says: buffers of several pools sent to one child, each pool's descriptor
//! inherited and its UUID and buffers' descriptors in the environment.
//! `TestIpcReexport` (a child exporting again what it imported) is a deliberate
//! difference (the porting guide's IPC section).

use std::os::fd::{AsFd as _, BorrowedFd};

use cudars_core::{Buffer, PoolUuid};
use cudars_tests::unhex;

use crate::memory_ipc_memory_ipc::{
    Kind, Mr, NBYTES, child_fd, desc_hex, env_hex, fill, ipc_device, new_stream, role, spawn,
    uuid_hex, verify,
};

const NTASKS: usize = 7;

fn child(nmrs: usize) {
    let device = ipc_device();
    let s = new_stream(&device);
    let uuids = env_hex("UUIDS");
    let uuids: Vec<PoolUuid> = uuids
        .chunks(16)
        .map(|c| PoolUuid(c.try_into().unwrap()))
        .collect();
    assert_eq!(uuids.len(), nmrs);
    let _mrs: Vec<Mr> = uuids
        .iter()
        .enumerate()
        .map(|(i, &u)| Mr::import_registered(Kind::Device, &device, child_fd(i), u))
        .collect();
    for i in 0..NTASKS {
        let desc = cudars_core::IpcBufferDescriptor::from_bytes(&unhex(
            &std::env::var(format!("BUF{i}")).unwrap(),
        ))
        .unwrap();
        let mut buffer =
            Buffer::from_registered_ipc_descriptor(uuids[i % nmrs], &desc, &s).unwrap();
        verify(&buffer, 0, &s);
        fill(&mut buffer, 1, &s);
        drop(buffer);
    }
    s.sync().unwrap();
}

fn send_buffers(nmrs: usize, test: &str) {
    if role().is_some() {
        return child(nmrs);
    }
    let device = ipc_device();
    let s = new_stream(&device);
    let mrs: Vec<Mr> = (0..nmrs).map(|_| Mr::new(Kind::Device, &device)).collect();
    let mut buffers: Vec<Buffer> = (0..NTASKS)
        .map(|i| mrs[i % nmrs].allocate(NBYTES, &s).unwrap())
        .collect();
    for b in &mut buffers {
        fill(b, 0, &s);
    }
    let fds: Vec<_> = mrs.iter().map(Mr::export_handle).collect();
    let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
    let mut envs: Vec<(&str, String)> = vec![(
        "UUIDS",
        mrs.iter().map(uuid_hex).collect::<Vec<_>>().concat(),
    )];
    let names: Vec<String> = (0..NTASKS).map(|i| format!("BUF{i}")).collect();
    for (name, b) in names.iter().zip(&buffers) {
        envs.push((name.as_str(), desc_hex(b)));
    }
    spawn(test, "child", &borrowed, &envs);
    for b in &buffers {
        verify(b, 1, &s);
    }
    drop(buffers);
    s.sync().unwrap();
}

#[test]
fn TestIpcSendBuffers__test_main__1() {
    if role().is_none() {
        cudars_tests::require_gpu!();
    }
    send_buffers(
        1,
        "memory_ipc_send_buffers::TestIpcSendBuffers__test_main__1",
    );
}

#[test]
fn TestIpcSendBuffers__test_main__3() {
    if role().is_none() {
        cudars_tests::require_gpu!();
    }
    send_buffers(
        3,
        "memory_ipc_send_buffers::TestIpcSendBuffers__test_main__3",
    );
}
