//! [`World`]: this process's place in a job started by a launcher (torchrun,
//! Slurm's `srun`, Open MPI's or MPICH's `mpirun`), read from the environment
//! variables the launcher sets, and the NCCL communicator it joins through
//! NCCL's own bootstrap (`NCCL_COMM_ID`).
//!
//! Architecture Invariant: reading the variables is a pure function of a
//! variable source ([`World::from_vars`]), so every launcher's conventions and
//! every malformed setting are tested without a GPU or a launcher; only
//! [`World::from_env`] reads the process environment.

use std::time::Duration;

use cudars_core::Device;

use crate::comm::{CommConfig, Communicator};
use crate::error::{Error, Result, WorldError};
use crate::id::UniqueId;
use crate::launcher::{EnvError, Launcher};

/// The variable NCCL reads its bootstrap root's address from (`host:port`).
pub const NCCL_COMM_ID: &str = "NCCL_COMM_ID";

/// How long [`Communicator::from_env`] waits for every rank to join: 5 minutes.
pub const DEFAULT_JOIN_TIMEOUT: Duration = Duration::from_secs(300);

/// This process's place in a multi-process job: its rank, the number of ranks,
/// its rank on this machine, and where the ranks meet. Read from a launcher's
/// environment variables by [`from_env`](Self::from_env); joined into a
/// communicator by [`join`](Self::join).
///
/// The launchers are tried in this order, the first whose variables are set
/// deciding (a launcher started inside another's job, torchrun under Slurm
/// say, sets its own variables beside the outer one's):
///
/// | launcher | rank | size | local rank |
/// | --- | --- | --- | --- |
/// | torchrun | `RANK` | `WORLD_SIZE` | `LOCAL_RANK` |
/// | Open MPI | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` |
/// | MPICH/PMI | `PMI_RANK` | `PMI_SIZE` | `MPI_LOCALRANKID` |
/// | Slurm | `SLURM_PROCID` | `SLURM_NTASKS` | `SLURM_LOCALID` |
///
/// With none of them set, the process is a world of one rank.
///
/// Where the ranks meet (NCCL's bootstrap root, which rank 0 opens):
/// `NCCL_COMM_ID` (`host:port`) when set; else `MASTER_ADDR:MASTER_PORT`,
/// except under a real torchrun (`TORCHELASTIC_RUN_ID` set), whose own store
/// already listens on `MASTER_PORT`: there `MASTER_PORT + 1`. Under Slurm
/// without `MASTER_ADDR` the first host of `SLURM_STEP_NODELIST` (or
/// `SLURM_JOB_NODELIST`), where rank 0 runs, and without `MASTER_PORT`
/// `20000 + SLURM_JOB_ID % 10000`. A world of one rank needs no address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct World {
    launcher: Launcher,
    rank: usize,
    size: usize,
    local_rank: usize,
    local_size: Option<usize>,
    comm_id: Option<String>,
    read: Vec<(&'static str, Option<String>)>,
}

/// Reads variables, remembering each one read for the error message.
struct Reader<F> {
    get: F,
    launcher: Launcher,
    read: Vec<(&'static str, Option<String>)>,
    missing: Vec<&'static str>,
}

impl<F: Fn(&str) -> Option<String>> Reader<F> {
    fn var(&mut self, name: &'static str) -> Option<String> {
        if let Some((_, v)) = self.read.iter().find(|(n, _)| *n == name) {
            return v.clone();
        }
        let v = (self.get)(name).filter(|v| !v.trim().is_empty());
        self.read.push((name, v.clone()));
        v
    }

    fn fail(&self, problem: impl Into<String>) -> EnvError {
        EnvError {
            launcher: self.launcher,
            read: self.read.clone(),
            missing: self.missing.clone(),
            problem: problem.into(),
        }
    }

    /// A required whole number.
    fn number(&mut self, name: &'static str) -> Option<std::result::Result<usize, String>> {
        let v = self.var(name)?;
        Some(
            v.trim()
                .parse::<usize>()
                .map_err(|_| format!("{name}={v} is not a whole number")),
        )
    }

    /// A required whole number; a missing one is recorded.
    fn required(&mut self, name: &'static str) -> std::result::Result<Option<usize>, EnvError> {
        match self.number(name) {
            None => {
                self.missing.push(name);
                Ok(None)
            }
            Some(Ok(n)) => Ok(Some(n)),
            Some(Err(e)) => Err(self.fail(e)),
        }
    }

    fn optional(&mut self, name: &'static str) -> std::result::Result<Option<usize>, EnvError> {
        match self.number(name) {
            None => Ok(None),
            Some(Ok(n)) => Ok(Some(n)),
            Some(Err(e)) => Err(self.fail(e)),
        }
    }
}

/// Each launcher's variables: rank, size, local rank, local size (optional).
struct Names {
    launcher: Launcher,
    rank: &'static str,
    size: &'static str,
    local_rank: &'static str,
    local_size: Option<&'static str>,
}

const LAUNCHERS: [Names; 4] = [
    Names {
        launcher: Launcher::Torchrun,
        rank: "RANK",
        size: "WORLD_SIZE",
        local_rank: "LOCAL_RANK",
        local_size: Some("LOCAL_WORLD_SIZE"),
    },
    Names {
        launcher: Launcher::OpenMpi,
        rank: "OMPI_COMM_WORLD_RANK",
        size: "OMPI_COMM_WORLD_SIZE",
        local_rank: "OMPI_COMM_WORLD_LOCAL_RANK",
        local_size: Some("OMPI_COMM_WORLD_LOCAL_SIZE"),
    },
    Names {
        launcher: Launcher::Mpich,
        rank: "PMI_RANK",
        size: "PMI_SIZE",
        local_rank: "MPI_LOCALRANKID",
        local_size: Some("MPI_LOCALNRANKS"),
    },
    Names {
        launcher: Launcher::Slurm,
        rank: "SLURM_PROCID",
        size: "SLURM_NTASKS",
        local_rank: "SLURM_LOCALID",
        local_size: None,
    },
];

impl World {
    /// Reads this process's place from the environment (see [`World`] for the
    /// variables and their order).
    ///
    /// # Errors
    /// [`WorldError::Env`] inside [`Error::Extra`](cudars_core::LibraryError::Extra):
    /// a launcher's variables set only in part, not numbers, or inconsistent
    /// (a rank not below the size), or no rendezvous address for a world of
    /// several ranks; the error names every variable read.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) over any variable source: `get(name)` is
    /// the variable's value, `None` when unset (an empty value counts as
    /// unset). For tests and for programs that take the settings elsewhere.
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        parse(get).map_err(|e| Error::Extra(WorldError::Env(e)))
    }

    /// A world of one rank (rank 0 of 1 on local device 0), as with no
    /// launcher.
    pub fn single() -> Self {
        Self {
            launcher: Launcher::None,
            rank: 0,
            size: 1,
            local_rank: 0,
            local_size: Some(1),
            comm_id: None,
            read: Vec::new(),
        }
    }

    /// The launcher whose variables were read.
    pub fn launcher(&self) -> Launcher {
        self.launcher
    }

    /// This process's rank, from 0.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// This process's rank among those on its machine, from 0.
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// The number of ranks on this machine, where the launcher says.
    pub fn local_size(&self) -> Option<usize> {
        self.local_size
    }

    /// Where the ranks meet, `host:port` (NCCL's bootstrap root, opened by
    /// rank 0); `None` for a world of one rank given no address.
    pub fn nccl_comm_id(&self) -> Option<&str> {
        self.comm_id.as_deref()
    }

    /// The variables read, with their values (`None`: unset).
    pub fn variables(&self) -> &[(&'static str, Option<String>)] {
        &self.read
    }

    /// The GPU this rank drives: with one visible device (a launcher that
    /// gives each process its own GPU through `CUDA_VISIBLE_DEVICES`), that
    /// one; else the visible device numbered by the local rank (numbers
    /// counted among the visible devices, as CUDA counts them).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]
    /// ([`InvalidKind::OutOfRange`](cudars_core::InvalidKind::OutOfRange)): a
    /// local rank not below the number of visible devices (it names
    /// `CUDA_VISIBLE_DEVICES`); cudars-core's error counting devices.
    pub fn device(&self) -> Result<Device> {
        let visible = Device::count()?;
        let ordinal = pick_device(
            self.local_rank,
            visible,
            std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref(),
        )
        .map_err(|m| {
            Error::invalid(
                format!("choosing the GPU of local rank {}", self.local_rank),
                cudars_core::InvalidKind::OutOfRange,
                m,
            )
        })?;
        Ok(Device::new(ordinal)?)
    }

    /// Sets `NCCL_COMM_ID` in this process's environment to
    /// [`nccl_comm_id`](Self::nccl_comm_id) (if it has one and the variable is
    /// unset), where NCCL reads it: every rank's `ncclGetUniqueId` then gives
    /// the same id, and rank 0's `ncclCommInitRank` opens the bootstrap root
    /// there. Call it at the start of `main`, or set `NCCL_COMM_ID` in the
    /// launch script and skip this.
    ///
    /// # Safety
    /// No other thread may read or write the process environment during the
    /// call, in Rust or in C (`getenv`, as CUDA's and NCCL's threads may): in
    /// practice, call it before any other thread is started and before CUDA or
    /// NCCL are used ([`std::env::set_var`]'s rule).
    pub unsafe fn export_nccl_comm_id(&self) {
        if let Some(id) = &self.comm_id {
            if std::env::var_os(NCCL_COMM_ID).is_none() {
                // SAFETY: the caller promises no other thread touches the
                // environment meanwhile.
                unsafe { std::env::set_var(NCCL_COMM_ID, id) };
            }
        }
    }

    /// Joins the world's communicator: on [`device`](Self::device), NCCL's
    /// unique id from `NCCL_COMM_ID` (which must be in the environment, equal
    /// to [`nccl_comm_id`](Self::nccl_comm_id), for several ranks), the init
    /// non-blocking (`ncclCommInitRankConfig`, `blocking = 0`) and polled
    /// until every rank has joined or `timeout` has passed. On a failure or a
    /// timeout the half-made communicator is aborted (`ncclCommAbort`), which
    /// frees what NCCL allocated on the GPU. The communicator returned is a
    /// blocking one ([`Communicator::into_blocking`], under the same timeout),
    /// whose collectives cost what C's do; for one that stays non-blocking,
    /// use [`Communicator::init_rank_timeout`] with [`UniqueId::new`].
    ///
    /// # Errors
    /// [`WorldError::TimedOut`] (a rank that never joins, a root nobody can
    /// reach, ranks that disagree on the size); [`WorldError::Env`]:
    /// `NCCL_COMM_ID` missing from the environment or different; NCCL's error
    /// (a `MASTER_ADDR` that is not this host's, on rank 0); cudars-core's.
    pub fn join(&self, timeout: Duration) -> Result<Communicator> {
        self.join_with(timeout, &CommConfig::default())
    }

    /// [`join`](Self::join) with options.
    ///
    /// # Errors
    /// As [`join`](Self::join).
    pub fn join_with(&self, timeout: Duration, config: &CommConfig) -> Result<Communicator> {
        let device = self.device()?;
        if self.size > 1 {
            let env = std::env::var(NCCL_COMM_ID).ok();
            if env.as_deref() != self.comm_id.as_deref() {
                let mut read = self.read.clone();
                read.push((NCCL_COMM_ID, env.clone()));
                let want = self.comm_id.as_deref().unwrap_or("");
                return Err(Error::Extra(WorldError::Env(EnvError {
                    launcher: self.launcher,
                    read,
                    missing: if env.is_none() {
                        vec![NCCL_COMM_ID]
                    } else {
                        Vec::new()
                    },
                    problem: format!(
                        "NCCL reads the rendezvous address from {NCCL_COMM_ID}, which must be \
                         {want} in this process's environment: set it in the launch script, or \
                         call World::export_nccl_comm_id at the start of main"
                    ),
                })));
            }
        }
        // With NCCL_COMM_ID set every rank derives the same id, and no listener
        // is opened here; a world of one rank makes its own.
        let id = UniqueId::new()?;
        Communicator::init_rank_timeout(&device, self.size, &id, self.rank, config, timeout)?
            .into_blocking()
    }
}

impl Communicator {
    /// Joins the communicator of the job this process was started in by a
    /// launcher: [`World::from_env`], then [`World::join`] with
    /// [`DEFAULT_JOIN_TIMEOUT`]. `NCCL_COMM_ID` must be in the environment
    /// (see [`World::export_nccl_comm_id`]) for a world of several ranks.
    ///
    /// # Errors
    /// As [`World::from_env`] and [`World::join`].
    pub fn from_env() -> Result<Self> {
        World::from_env()?.join(DEFAULT_JOIN_TIMEOUT)
    }
}

/// The pure part of [`World::from_vars`].
fn parse(get: impl Fn(&str) -> Option<String>) -> std::result::Result<World, EnvError> {
    let mut r = Reader {
        get,
        launcher: Launcher::None,
        read: Vec::new(),
        missing: Vec::new(),
    };
    let mut found = None;
    for names in &LAUNCHERS {
        // Read all three (not stopping at the first): the error lists each.
        let mut any = false;
        for n in [names.rank, names.size, names.local_rank] {
            any |= r.var(n).is_some();
        }
        if any {
            found = Some(names);
            break;
        }
    }
    let Some(names) = found else {
        // No launcher: one rank, unless an address says otherwise (it cannot).
        let mut w = World::single();
        w.read = r.read;
        return Ok(w);
    };
    r.launcher = names.launcher;
    let rank = r.required(names.rank)?;
    let size = r.required(names.size)?;
    let local_rank = r.required(names.local_rank)?;
    // Slurm's count of tasks per node is a list ("2(x3),1"), not read.
    let local_size = match names.local_size {
        Some(n) => r.optional(n)?,
        None => None,
    };
    let (Some(rank), Some(size), Some(local_rank)) = (rank, size, local_rank) else {
        let missing = r.missing.join(", ");
        return Err(r.fail(format!(
            "{missing} not set: {} sets {}, {} and {} together",
            names.launcher, names.rank, names.size, names.local_rank
        )));
    };
    if size == 0 {
        return Err(r.fail(format!("{} is 0: a world needs a rank", names.size)));
    }
    if rank >= size {
        return Err(r.fail(format!(
            "rank {rank} ({}) is not below the world size {size} ({})",
            names.rank, names.size
        )));
    }
    if local_rank > rank {
        return Err(r.fail(format!(
            "local rank {local_rank} ({}) is above the rank {rank} ({}): ranks on a machine \
             are a subset of the world's",
            names.local_rank, names.rank
        )));
    }
    if let Some(ls) = local_size {
        if local_rank >= ls || ls > size {
            return Err(r.fail(format!(
                "local rank {local_rank} ({}) and local size {ls} ({}) do not fit a world of {size}",
                names.local_rank,
                names.local_size.unwrap_or("local size")
            )));
        }
    }
    let comm_id = rendezvous(&mut r, size)?;
    Ok(World {
        launcher: names.launcher,
        rank,
        size,
        local_rank,
        local_size,
        comm_id,
        read: r.read,
    })
}

/// Where the ranks meet, `host:port`; `None` for one rank given no address.
fn rendezvous<F: Fn(&str) -> Option<String>>(
    r: &mut Reader<F>,
    size: usize,
) -> std::result::Result<Option<String>, EnvError> {
    if let Some(id) = r.var(NCCL_COMM_ID) {
        let id = id.trim().to_owned();
        return match split_host_port(&id) {
            Some(_) => Ok(Some(id)),
            None => Err(r.fail(format!(
                "{NCCL_COMM_ID}={id} is not host:port (an IPv6 address goes in brackets: [::1]:29500)"
            ))),
        };
    }
    let mut addr = r.var("MASTER_ADDR");
    let port = r.var("MASTER_PORT");
    let mut port = match port {
        None => None,
        Some(p) => match p.trim().parse::<u16>() {
            Ok(p) if p > 0 => Some(p),
            _ => return Err(r.fail(format!("MASTER_PORT={p} is not a port number (1 to 65535)"))),
        },
    };
    if r.launcher == Launcher::Torchrun && r.var("TORCHELASTIC_RUN_ID").is_some() {
        // torchrun's own store listens on MASTER_PORT: NCCL takes the next one.
        port = match port {
            Some(p) => Some(p.checked_add(1).ok_or_else(|| {
                r.fail(
                    "MASTER_PORT is 65535, and torchrun's store holds it: no port is left for NCCL",
                )
            })?),
            None => None,
        };
    }
    if r.launcher == Launcher::Slurm {
        if addr.is_none() {
            addr = r
                .var("SLURM_STEP_NODELIST")
                .or_else(|| r.var("SLURM_JOB_NODELIST"))
                .and_then(|l| first_host(&l));
        }
        if port.is_none() {
            if let Some(job) = r.var("SLURM_JOB_ID") {
                let job: u64 = job
                    .trim()
                    .parse()
                    .map_err(|_| r.fail(format!("SLURM_JOB_ID={job} is not a whole number")))?;
                port = Some(20000 + (job % 10000) as u16);
            }
        }
    }
    match (addr, port) {
        (Some(a), Some(p)) => {
            let a = a.trim();
            if a.contains(':') && !a.starts_with('[') {
                Ok(Some(format!("[{a}]:{p}")))
            } else {
                Ok(Some(format!("{a}:{p}")))
            }
        }
        _ if size == 1 => Ok(None),
        (a, p) => {
            if a.is_none() {
                r.missing.push("MASTER_ADDR");
            }
            if p.is_none() {
                r.missing.push("MASTER_PORT");
            }
            let missing = r.missing.join(" and ");
            Err(r.fail(format!(
                "{missing} not set: a world of {size} ranks needs the address where rank 0 \
                 listens ({NCCL_COMM_ID}=host:port, or MASTER_ADDR and MASTER_PORT)"
            )))
        }
    }
}

/// `host:port` or `[v6]:port` split, the port checked.
fn split_host_port(s: &str) -> Option<(&str, u16)> {
    let (host, port) = s.rsplit_once(':')?;
    let port: u16 = port.parse().ok().filter(|p| *p > 0)?;
    let host = match host.strip_prefix('[') {
        Some(h) => h.strip_suffix(']')?,
        None if host.contains(':') => return None,
        None => host,
    };
    (!host.is_empty()).then_some((host, port))
}

/// The first host of a Slurm node list: `node[03-05,7],gpu1` gives `node03`.
fn first_host(list: &str) -> Option<String> {
    let list = list.trim();
    let end = list.find([',', '[']).unwrap_or(list.len());
    let prefix = &list[..end];
    if list[end..].starts_with('[') {
        let inner = &list[end + 1..];
        let first = inner.split([',', '-', ']']).next()?;
        if first.is_empty() {
            return None;
        }
        Some(format!("{prefix}{first}"))
    } else {
        (!prefix.is_empty()).then(|| prefix.to_owned())
    }
}

/// The device ordinal of `local_rank` among `visible` devices.
fn pick_device(
    local_rank: usize,
    visible: usize,
    cuda_visible_devices: Option<&str>,
) -> std::result::Result<usize, String> {
    let env = match cuda_visible_devices {
        Some(v) => format!("CUDA_VISIBLE_DEVICES={v}"),
        None => "CUDA_VISIBLE_DEVICES unset".to_owned(),
    };
    match visible {
        0 => Err(format!("no CUDA device is visible ({env})")),
        1 => Ok(0),
        n if local_rank < n => Ok(local_rank),
        n => Err(format!(
            "local rank {local_rank} needs a device of its own, and {n} are visible ({env})"
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use std::collections::HashMap;

    fn world(vars: &[(&str, &str)]) -> std::result::Result<World, EnvError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        parse(|k| map.get(k).cloned())
    }

    #[test]
    fn no_launcher_is_one_rank() {
        let w = world(&[]).unwrap();
        assert_eq!(
            (w.launcher(), w.rank(), w.size(), w.local_rank()),
            (Launcher::None, 0, 1, 0)
        );
        assert_eq!(w.nccl_comm_id(), None);
        // Unrelated Slurm allocation variables alone are not a launch.
        let w = world(&[("SLURM_JOB_ID", "42")]).unwrap();
        assert_eq!(w.launcher(), Launcher::None);
    }

    #[test]
    fn torchrun() {
        let vars = [
            ("RANK", "3"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "3"),
            ("LOCAL_WORLD_SIZE", "4"),
            ("MASTER_ADDR", "10.0.0.1"),
            ("MASTER_PORT", "29500"),
        ];
        let w = world(&vars).unwrap();
        assert_eq!(w.launcher(), Launcher::Torchrun);
        assert_eq!(
            (w.rank(), w.size(), w.local_rank(), w.local_size()),
            (3, 8, 3, Some(4))
        );
        assert_eq!(w.nccl_comm_id(), Some("10.0.0.1:29500"));
        // A real torchrun's store holds MASTER_PORT: NCCL gets the next port.
        let mut real = vars.to_vec();
        real.push(("TORCHELASTIC_RUN_ID", "none"));
        assert_eq!(world(&real).unwrap().nccl_comm_id(), Some("10.0.0.1:29501"));
        // NCCL_COMM_ID wins; IPv6 addresses are bracketed.
        let mut v6 = vars.to_vec();
        v6[4] = ("MASTER_ADDR", "fd00::1");
        assert_eq!(world(&v6).unwrap().nccl_comm_id(), Some("[fd00::1]:29500"));
        v6.push(("NCCL_COMM_ID", "node7:1234"));
        assert_eq!(world(&v6).unwrap().nccl_comm_id(), Some("node7:1234"));
    }

    #[test]
    fn open_mpi_mpich_and_slurm() {
        let w = world(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("MASTER_ADDR", "h"),
            ("MASTER_PORT", "1"),
        ])
        .unwrap();
        assert_eq!(
            (w.launcher(), w.rank(), w.size(), w.local_rank()),
            (Launcher::OpenMpi, 1, 2, 1)
        );
        let w = world(&[
            ("PMI_RANK", "5"),
            ("PMI_SIZE", "6"),
            ("MPI_LOCALRANKID", "1"),
            ("MPI_LOCALNRANKS", "2"),
            ("NCCL_COMM_ID", "127.0.0.1:9"),
        ])
        .unwrap();
        assert_eq!(
            (w.launcher(), w.rank(), w.local_size()),
            (Launcher::Mpich, 5, Some(2))
        );
        let w = world(&[
            ("SLURM_PROCID", "2"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_LOCALID", "0"),
            ("SLURM_NTASKS_PER_NODE", "2(x2)"),
            ("SLURM_STEP_NODELIST", "gpu[07-08],cpu1"),
            ("SLURM_JOB_ID", "123456"),
        ])
        .unwrap();
        assert_eq!(
            (w.launcher(), w.rank(), w.size(), w.local_rank()),
            (Launcher::Slurm, 2, 4, 0)
        );
        assert_eq!(w.nccl_comm_id(), Some("gpu07:23456"));
        // torchrun inside a Slurm job: torchrun's variables decide.
        let w = world(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("SLURM_LOCALID", "0"),
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "1"),
            ("MASTER_ADDR", "a"),
            ("MASTER_PORT", "2"),
        ])
        .unwrap();
        assert_eq!((w.launcher(), w.rank()), (Launcher::Torchrun, 1));
    }

    #[test]
    fn partial_settings_name_what_is_missing() {
        let e = world(&[("RANK", "0"), ("MASTER_ADDR", "a")]).unwrap_err();
        assert_eq!(e.launcher(), Launcher::Torchrun);
        assert_eq!(e.missing(), ["WORLD_SIZE", "LOCAL_RANK"]);
        let s = e.to_string();
        assert!(s.contains("WORLD_SIZE, LOCAL_RANK not set"), "{s}");
        assert!(
            s.contains("RANK=0") && s.contains("WORLD_SIZE unset"),
            "{s}"
        );
        // Several ranks and nowhere to meet.
        let e = world(&[
            ("PMI_RANK", "0"),
            ("PMI_SIZE", "2"),
            ("MPI_LOCALRANKID", "0"),
        ])
        .unwrap_err();
        assert_eq!(e.missing(), ["MASTER_ADDR", "MASTER_PORT"]);
        assert!(e.to_string().contains("NCCL_COMM_ID"), "{e}");
        // One rank needs no address.
        let w = world(&[("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0")]).unwrap();
        assert_eq!(w.nccl_comm_id(), None);
        // Slurm with a node list but no port and no job id.
        let e = world(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_LOCALID", "0"),
            ("SLURM_JOB_NODELIST", "n1"),
        ])
        .unwrap_err();
        assert_eq!(e.missing(), ["MASTER_PORT"]);
    }

    #[test]
    fn inconsistent_settings_are_refused() {
        let base = |rank: &'static str, size: &'static str, local: &'static str| {
            world(&[
                ("RANK", rank),
                ("WORLD_SIZE", size),
                ("LOCAL_RANK", local),
                ("MASTER_ADDR", "a"),
                ("MASTER_PORT", "1"),
            ])
        };
        let e = base("2", "2", "0").unwrap_err();
        assert!(e.problem().contains("not below the world size 2"), "{e}");
        assert!(base("0", "0", "0").unwrap_err().problem().contains("is 0"));
        assert!(
            base("1", "x", "0")
                .unwrap_err()
                .problem()
                .contains("WORLD_SIZE=x")
        );
        assert!(
            base("0", "2", "1")
                .unwrap_err()
                .problem()
                .contains("local rank 1")
        );
        let e = world(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "1"),
            ("NCCL_COMM_ID", "a:1"),
        ])
        .unwrap_err();
        assert!(e.problem().contains("local size 1"), "{e}");
        for bad in ["a", "a:0", "a:x", "::1:5", ":5", "[::1]5"] {
            let e = world(&[
                ("RANK", "0"),
                ("WORLD_SIZE", "2"),
                ("LOCAL_RANK", "0"),
                ("NCCL_COMM_ID", bad),
            ])
            .unwrap_err();
            assert!(e.problem().contains("not host:port"), "{bad}: {e}");
        }
        let e = base_port("70000").unwrap_err();
        assert!(e.problem().contains("MASTER_PORT=70000"), "{e}");
        // An empty value is unset.
        let e = world(&[("RANK", "0"), ("WORLD_SIZE", ""), ("LOCAL_RANK", "0")]).unwrap_err();
        assert_eq!(e.missing(), ["WORLD_SIZE"]);
    }

    fn base_port(port: &'static str) -> std::result::Result<World, EnvError> {
        world(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "0"),
            ("MASTER_ADDR", "a"),
            ("MASTER_PORT", port),
        ])
    }

    #[test]
    fn the_error_is_the_crates_typed_error() {
        let e = World::from_vars(|k| (k == "RANK").then(|| "0".to_owned())).unwrap_err();
        match e {
            Error::Extra(WorldError::Env(e)) => {
                assert_eq!(e.missing(), ["WORLD_SIZE", "LOCAL_RANK"])
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn node_lists_and_devices() {
        assert_eq!(first_host("node[03-05,7],gpu1").as_deref(), Some("node03"));
        assert_eq!(first_host("a,b").as_deref(), Some("a"));
        assert_eq!(first_host("solo").as_deref(), Some("solo"));
        assert_eq!(first_host("x[]"), None);
        assert_eq!(pick_device(3, 1, Some("5")), Ok(0));
        assert_eq!(pick_device(1, 2, None), Ok(1));
        let e = pick_device(2, 2, Some("0,1")).unwrap_err();
        assert!(e.contains("CUDA_VISIBLE_DEVICES=0,1"), "{e}");
        assert!(pick_device(0, 0, None).is_err());
        assert_eq!(split_host_port("[::1]:5"), Some(("::1", 5)));
        assert_eq!(split_host_port("h:65535"), Some(("h", 65535)));
    }
}
