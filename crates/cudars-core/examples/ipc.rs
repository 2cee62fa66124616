//! Two processes share GPU memory: this process (the exporter) fills a buffer from
//! an IPC-enabled pool and records an IPC event; a second process (this program
//! re-run as `ipc child SOCKET`) receives the pool's file descriptor over a Unix
//! socket (`SCM_RIGHTS`), imports the pool, the buffer and the event, waits on the
//! event, checks the data and writes its answer into the same memory. Then the
//! same for a buffer of virtual memory in two physical chunks: the descriptor's
//! bytes and one file descriptor per chunk go in one message
//! (`VirtualMemoryResource::ipc_descriptor`, `VirtualMemoryIpcDescriptor::fds`),
//! and the importer maps them into one buffer (`VirtualMemoryIpcDescriptor::import`).
//!
//! `cargo run -p cudars-core --features ipc,vmm --example ipc` (Linux).

use std::process::ExitCode;

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{Read as _, Write as _};
    use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd};
    use std::os::unix::net::{UnixListener, UnixStream};
    use std::sync::Arc;

    use cudars_core::{
        Buffer, Device, DeviceBuffer, DeviceMemoryPoolOptions, DeviceMemoryResource, Error, Event,
        EventOptions, IpcBufferDescriptor, Result, StreamOptions, VirtualMemoryHandleType,
        VirtualMemoryIpcDescriptor, VirtualMemoryOptions, VirtualMemoryResource,
    };

    const N: usize = 1 << 20;

    fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
        move |e| Error::Io {
            context: what.into(),
            source: e,
        }
    }

    /// The most descriptors one message carries here.
    const MAX_FDS: usize = 16;

    /// Room for one control message carrying `n` descriptors, aligned for the
    /// `cmsghdr` written into it (`u64`s, not bytes).
    fn control_buffer(n: usize) -> Vec<u64> {
        // SAFETY: CMSG_SPACE only computes a size.
        let bytes = unsafe { libc::CMSG_SPACE((n * size_of::<i32>()) as u32) } as usize;
        vec![0u64; bytes.div_ceil(size_of::<u64>())]
    }

    /// A message of one data buffer and the control buffer `control`.
    fn header(iov: &mut libc::iovec, control: &mut [u64]) -> libc::msghdr {
        // SAFETY: an all-zero msghdr is valid; the fields are set below.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(control) as _;
        msg
    }

    /// Sends `fds` (1 to [`MAX_FDS`]) and `payload` in one message (`SCM_RIGHTS`).
    fn send_fds(sock: &UnixStream, fds: &[BorrowedFd<'_>], payload: &[u8]) -> std::io::Result<()> {
        if fds.is_empty() || fds.len() > MAX_FDS {
            return Err(std::io::Error::other("1 to 16 descriptors per message"));
        }
        let mut iov = libc::iovec {
            iov_base: payload.as_ptr() as *mut _,
            iov_len: payload.len(),
        };
        let mut control = control_buffer(fds.len());
        let msg = header(&mut iov, &mut control);
        // SAFETY: `msg` points at `control`, which has room for one header and
        // `fds.len()` descriptors; CMSG_FIRSTHDR/CMSG_DATA stay within it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN((fds.len() * size_of::<i32>()) as u32) as _;
            let data = libc::CMSG_DATA(c).cast::<i32>();
            for (i, fd) in fds.iter().enumerate() {
                std::ptr::write_unaligned(data.add(i), fd.as_raw_fd());
            }
        }
        // SAFETY: a connected socket and a message whose buffers outlive the call.
        let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, 0) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n as usize != payload.len() {
            return Err(std::io::Error::other("short send"));
        }
        Ok(())
    }

    /// Receives the descriptors and up to `payload.len()` bytes sent by
    /// [`send_fds`].
    fn recv_fds(sock: &UnixStream, payload: &mut [u8]) -> std::io::Result<(Vec<OwnedFd>, usize)> {
        let mut iov = libc::iovec {
            iov_base: payload.as_mut_ptr().cast(),
            iov_len: payload.len(),
        };
        let mut control = control_buffer(MAX_FDS);
        let mut msg = header(&mut iov, &mut control);
        // SAFETY: a connected socket; `msg`'s buffers outlive the call.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the kernel filled `control` (msg_controllen says how much);
        // CMSG_FIRSTHDR returns null when there is no header; the header's
        // length says how many descriptors follow it.
        let raw: Vec<i32> = unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            if c.is_null()
                || (*c).cmsg_level != libc::SOL_SOCKET
                || (*c).cmsg_type != libc::SCM_RIGHTS
            {
                return Err(std::io::Error::other("no descriptor in the message"));
            }
            let count = ((*c).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize)
                / size_of::<i32>();
            let data = libc::CMSG_DATA(c).cast::<i32>();
            (0..count)
                .map(|i| std::ptr::read_unaligned(data.add(i)))
                .collect()
        };
        let fds = raw
            .into_iter()
            // SAFETY: SCM_RIGHTS gave this process new descriptors, now owned here.
            .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
            .collect::<Vec<_>>();
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            // Descriptors were cut off (more than MAX_FDS): the ones that
            // arrived close as `fds` drops.
            return Err(std::io::Error::other(format!(
                "more than {MAX_FDS} descriptors in one message: the rest were cut off"
            )));
        }
        Ok((fds, n as usize))
    }

    /// Waits (up to a minute) for the importer to connect, or to fail first.
    fn accept(listener: &UnixListener, child: &mut std::process::Child) -> Result<UnixStream> {
        listener
            .set_nonblocking(true)
            .map_err(io("polling the socket"))?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            match listener.accept() {
                Ok((sock, _)) => {
                    sock.set_nonblocking(false)
                        .map_err(io("setting up the socket"))?;
                    return Ok(sock);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(io("accepting the importer")(e)),
            }
            if let Some(status) = child.try_wait().map_err(io("watching the importer"))? {
                return Err(Error::Io {
                    context: "waiting for the importer to connect".into(),
                    source: std::io::Error::other(format!("it exited first: {status}")),
                });
            }
            if std::time::Instant::now() > deadline {
                return Err(Error::Io {
                    context: "waiting for the importer to connect".into(),
                    source: std::io::ErrorKind::TimedOut.into(),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    pub(crate) fn exporter() -> Result<()> {
        let dev = Device::new(0)?;
        dev.set_current()?;
        let s = dev.create_stream(StreamOptions::default())?;
        let pool = Arc::new(DeviceMemoryResource::new_pool(
            &dev,
            DeviceMemoryPoolOptions {
                ipc_enabled: true,
                ..Default::default()
            },
        )?);
        // `N` words from the IPC pool; the IPC descriptor is the byte buffer's.
        let mut buf = DeviceBuffer::<u32>::allocate_from(pool.clone(), N, &s)?;
        buf.fill(0x1234_5678, &s)?;
        let ready = Event::new(
            &dev,
            EventOptions {
                ipc: true,
                ..Default::default()
            },
        )?;
        ready.record(&s)?;

        let dir = tempfile::tempdir().map_err(io("making a socket directory"))?;
        let path = dir.path().join("ipc.sock");
        let listener = UnixListener::bind(&path).map_err(io("binding the socket"))?;
        let exe = std::env::current_exe().map_err(io("finding this program"))?;
        let mut child = std::process::Command::new(exe)
            .arg("child")
            .arg(&path)
            .spawn()
            .map_err(io("starting the importing process"))?;
        let mut sock = match accept(&listener, &mut child) {
            Ok(s) => s,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        };
        // One message: the pool's descriptor, the buffer's descriptor, the event.
        let mut payload = buf.as_buffer().ipc_descriptor()?.to_bytes().to_vec();
        payload.extend_from_slice(&ready.ipc_handle()?);
        let fd = pool.export_handle()?;
        send_fds(&sock, &[fd.as_fd()], &payload).map_err(io("sending the pool"))?;
        // The importer answers when it has written its data.
        let mut ack = [0u8; 2];
        sock.read_exact(&mut ack)
            .map_err(io("waiting for the importer"))?;
        let pool_ack = ack;

        // Virtual memory: a buffer of two physical chunks, exportable as POSIX
        // descriptors; its descriptor's bytes (after their length) and one
        // descriptor per chunk in one message.
        let vmm = Arc::new(VirtualMemoryResource::new(
            &dev,
            VirtualMemoryOptions {
                handle_type: VirtualMemoryHandleType::PosixFd,
                ..Default::default()
            },
        )?);
        let g = vmm.granularity();
        let mut vbuf = vmm.allocate(g, &s)?;
        vmm.grow(&mut vbuf, 2 * g)?;
        vbuf.fill_u32(0x5eed_5eed, &s)?;
        s.sync()?;
        let vdesc = vmm.ipc_descriptor(&vbuf)?;
        let bytes = vdesc.to_bytes();
        let mut message = (bytes.len() as u32).to_le_bytes().to_vec();
        message.extend_from_slice(&bytes);
        send_fds(&sock, &vdesc.fds(), &message).map_err(io("sending the virtual memory"))?;
        sock.read_exact(&mut ack)
            .map_err(io("waiting for the importer"))?;
        let status = child.wait().map_err(io("waiting for the importer"))?;
        if !status.success() || &pool_ack != b"ok" || &ack != b"ok" {
            return Err(Error::Io {
                context: "running the importing process".into(),
                source: std::io::Error::other(format!("it failed: {status}")),
            });
        }
        let back = buf.to_vec(&s)?;
        let good = back.iter().filter(|&&x| x == 0x0bad_f00d).count();
        println!("exporter: the importer's writes are visible here: {good} of {N} words");
        if good != N {
            return Err(Error::Io {
                context: "checking the importer's writes".into(),
                source: std::io::Error::other("data mismatch"),
            });
        }
        let mut vback = vec![0u32; vbuf.size() / 4];
        vbuf.copy_to_host(&mut vback, &s)?;
        let good = vback.iter().filter(|&&x| x == 0x0bad_f00d).count();
        println!(
            "exporter: the importer's writes to the virtual memory are visible here: {good} of {} words",
            vback.len()
        );
        if good != vback.len() {
            return Err(Error::Io {
                context: "checking the importer's writes to the virtual memory".into(),
                source: std::io::Error::other("data mismatch"),
            });
        }
        Ok(())
    }

    pub(crate) fn importer(socket: &str) -> Result<()> {
        let sock = UnixStream::connect(socket).map_err(io("connecting to the exporter"))?;
        let mut payload = [0u8; 72 + 64];
        let (fds, n) = recv_fds(&sock, &mut payload).map_err(io("receiving the pool"))?;
        let Ok([fd]) = <[OwnedFd; 1]>::try_from(fds) else {
            return Err(Error::Io {
                context: "receiving the pool".into(),
                source: std::io::Error::other("not one descriptor"),
            });
        };
        if n != payload.len() {
            return Err(Error::Io {
                context: "receiving the pool".into(),
                source: std::io::Error::other(format!("{n} bytes instead of 136")),
            });
        }
        let desc = IpcBufferDescriptor::from_bytes(&payload[..72])?;
        let mut handle = [0u8; 64];
        handle.copy_from_slice(&payload[72..]);

        let dev = Device::new(0)?;
        dev.set_current()?;
        let s = dev.create_stream(StreamOptions::default())?;
        let pool = Arc::new(DeviceMemoryResource::import(&dev, fd.as_fd())?);
        // The imported byte buffer, taken over as `u32`s without copying.
        let imported = Buffer::from_ipc_descriptor(&pool, &desc, &s)?;
        let mut buf = DeviceBuffer::<u32>::from_buffer(imported).map_err(|(e, _)| e)?;
        let ready = Event::from_ipc_handle(&dev.context()?, &handle)?;
        s.wait_event(&ready)?;
        let seen = buf.to_vec(&s)?;
        let good = seen.iter().filter(|&&x| x == 0x1234_5678).count();
        println!(
            "importer (pid {}): {good} of {N} words as the exporter wrote them",
            std::process::id()
        );
        if good != N {
            return Err(Error::Io {
                context: "checking the exporter's data".into(),
                source: std::io::Error::other("data mismatch"),
            });
        }
        buf.fill(0x0bad_f00d, &s)?;
        s.sync()?;
        drop(buf);
        s.sync()?;
        (&sock)
            .write_all(b"ok")
            .map_err(io("answering the exporter"))?;

        // The virtual memory: the descriptor's bytes and its chunks' descriptors.
        let mut message = vec![0u8; 4096];
        let (fds, n) = recv_fds(&sock, &mut message).map_err(io("receiving the virtual memory"))?;
        let len = message
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .filter(|&len| n == 4 + len)
            .ok_or_else(|| Error::Io {
                context: "receiving the virtual memory".into(),
                source: std::io::Error::other(format!("{n} bytes do not hold a descriptor")),
            })?;
        let vdesc = VirtualMemoryIpcDescriptor::from_bytes(&message[4..4 + len], fds)?;
        let mut vbuf = vdesc.import(&dev, &s)?;
        let mut seen = vec![0u32; vbuf.size() / 4];
        vbuf.copy_to_host(&mut seen, &s)?;
        let good = seen.iter().filter(|&&x| x == 0x5eed_5eed).count();
        println!(
            "importer: {good} of {} words of virtual memory in {} chunks as the exporter wrote them",
            seen.len(),
            vdesc.chunks().len()
        );
        if good != seen.len() {
            return Err(Error::Io {
                context: "checking the exporter's virtual memory".into(),
                source: std::io::Error::other("data mismatch"),
            });
        }
        vbuf.fill_u32(0x0bad_f00d, &s)?;
        s.sync()?;
        drop(vbuf);
        s.sync()?;
        (&sock)
            .write_all(b"ok")
            .map_err(io("answering the exporter"))?;
        Ok(())
    }
}

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    {
        let args: Vec<String> = std::env::args().collect();
        let r = match args.get(1).map(String::as_str) {
            Some("child") => match args.get(2) {
                Some(sock) => linux::importer(sock),
                None => {
                    eprintln!("usage: ipc [child SOCKET]");
                    return ExitCode::FAILURE;
                }
            },
            _ => linux::exporter(),
        };
        match r {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ipc: {}", cudars_core::Report::new(&e));
                ExitCode::FAILURE
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        eprintln!("ipc: this example uses POSIX file descriptors (Linux)");
        ExitCode::FAILURE
    }
}
