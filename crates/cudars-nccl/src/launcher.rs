//! [`Launcher`] and [`EnvError`]: which launcher's variables described this
//! process, and what was wrong with them. Below [`World`](crate::World), which
//! reads them, and the crate's error, which carries an [`EnvError`].

use std::fmt;

/// The launcher whose variables described this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Launcher {
    /// PyTorch's `torchrun` (or anything setting `RANK`, `WORLD_SIZE`,
    /// `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT` the same way).
    Torchrun,
    /// Open MPI's `mpirun` (`OMPI_COMM_WORLD_*`).
    OpenMpi,
    /// MPICH's (Hydra's) `mpirun`/`mpiexec`, or another PMI launcher
    /// (`PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID`).
    Mpich,
    /// Slurm's `srun` (`SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_LOCALID`).
    Slurm,
    /// No launcher's variables: one process, a world of one rank.
    None,
}

impl Launcher {
    /// The launcher's name, as errors and logs print it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Torchrun => "torchrun",
            Self::OpenMpi => "Open MPI",
            Self::Mpich => "MPICH/PMI",
            Self::Slurm => "Slurm",
            Self::None => "no launcher",
        }
    }
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The launcher's variables are missing, malformed or disagree: which launcher
/// they seemed to come from, every variable read (with its value, or unset),
/// the ones that were needed and missing, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvError {
    pub(crate) launcher: Launcher,
    pub(crate) read: Vec<(&'static str, Option<String>)>,
    pub(crate) missing: Vec<&'static str>,
    pub(crate) problem: String,
}

impl EnvError {
    /// The launcher the variables seemed to come from.
    pub fn launcher(&self) -> Launcher {
        self.launcher
    }

    /// Every variable read, in order, with its value (`None`: unset).
    pub fn read(&self) -> &[(&'static str, Option<String>)] {
        &self.read
    }

    /// The variables that were needed and not set.
    pub fn missing(&self) -> &[&'static str] {
        &self.missing
    }

    /// What is wrong, in words.
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "reading this process's rank from the {} variables: {} (read ",
            self.launcher, self.problem
        )?;
        for (i, (name, value)) in self.read.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match value {
                Some(v) => write!(f, "{name}={v}")?,
                None => write!(f, "{name} unset")?,
            }
        }
        f.write_str(")")
    }
}

impl std::error::Error for EnvError {}
