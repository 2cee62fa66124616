//! Two processes share GPU memory: this process (the exporter) fills a buffer from
//! an IPC-enabled pool and records an IPC event; a second process (this program
//! re-run as `ipc child SOCKET`) receives the pool's file descriptor over a Unix
//! socket (`SCM_RIGHTS`), imports the pool, the buffer and the event, waits on the
//! event, checks the data and writes its answer into the same memory.
//!
//! `cargo run -p cudars-core --example ipc` (Linux).

use std::process::ExitCode;

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{Read as _, Write as _};
    use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd};
    use std::os::unix::net::{UnixListener, UnixStream};
    use std::sync::Arc;

    use cudars_core::{
        Buffer, Device, DeviceBuffer, DeviceMemoryPoolOptions, DeviceMemoryResource, Error, Event,
        EventOptions, IpcBufferDescriptor, Result, StreamOptions,
    };

    const N: usize = 1 << 20;

    fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
        move |e| Error::Io {
            context: what.into(),
            source: e,
        }
    }

    /// Room for one control message carrying one descriptor.
    fn control_buffer() -> Vec<u8> {
        // SAFETY: CMSG_SPACE only computes a size.
        vec![0u8; unsafe { libc::CMSG_SPACE(size_of::<i32>() as u32) } as usize]
    }

    /// A message of one data buffer and the control buffer `control`.
    fn header(iov: &mut libc::iovec, control: &mut [u8]) -> libc::msghdr {
        // SAFETY: an all-zero msghdr is valid; the fields are set below.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = control.len() as _;
        msg
    }

    /// Sends `fd` and `payload` in one message (`SCM_RIGHTS`).
    fn send_fd(sock: &UnixStream, fd: BorrowedFd<'_>, payload: &[u8]) -> std::io::Result<()> {
        let mut iov = libc::iovec {
            iov_base: payload.as_ptr() as *mut _,
            iov_len: payload.len(),
        };
        let mut control = control_buffer();
        let msg = header(&mut iov, &mut control);
        // SAFETY: `msg` points at `control`, which has room for one header and one
        // descriptor; CMSG_FIRSTHDR/CMSG_DATA stay within it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(size_of::<i32>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<i32>(), fd.as_raw_fd());
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

    /// Receives a descriptor and up to `payload.len()` bytes sent by [`send_fd`].
    fn recv_fd(sock: &UnixStream, payload: &mut [u8]) -> std::io::Result<(OwnedFd, usize)> {
        let mut iov = libc::iovec {
            iov_base: payload.as_mut_ptr().cast(),
            iov_len: payload.len(),
        };
        let mut control = control_buffer();
        let mut msg = header(&mut iov, &mut control);
        // SAFETY: a connected socket; `msg`'s buffers outlive the call.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the kernel filled `control` (msg_controllen says how much);
        // CMSG_FIRSTHDR returns null when there is no header.
        let fd = unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            if c.is_null()
                || (*c).cmsg_level != libc::SOL_SOCKET
                || (*c).cmsg_type != libc::SCM_RIGHTS
            {
                return Err(std::io::Error::other("no descriptor in the message"));
            }
            std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<i32>())
        };
        // SAFETY: SCM_RIGHTS gave this process a new descriptor, now owned here.
        Ok((unsafe { OwnedFd::from_raw_fd(fd) }, n as usize))
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
        send_fd(&sock, fd.as_fd(), &payload).map_err(io("sending the pool"))?;
        // The importer answers when it has written its data.
        let mut ack = [0u8; 2];
        sock.read_exact(&mut ack)
            .map_err(io("waiting for the importer"))?;
        let status = child.wait().map_err(io("waiting for the importer"))?;
        if !status.success() || &ack != b"ok" {
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
        Ok(())
    }

    pub(crate) fn importer(socket: &str) -> Result<()> {
        let sock = UnixStream::connect(socket).map_err(io("connecting to the exporter"))?;
        let mut payload = [0u8; 72 + 64];
        let (fd, n) = recv_fd(&sock, &mut payload).map_err(io("receiving the pool"))?;
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
