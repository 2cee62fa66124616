//! Decompositions: QR ([`Solver::geqrf`], [`Solver::ormqr`],
//! [`Solver::orgqr`]), the symmetric eigensolver ([`Solver::syevd`]) and the SVD
//! ([`Solver::gesvd`]), each in the way `solver.rs`'s Architecture Invariant
//! gives.

use std::ffi::{c_int, c_schar};
use std::ptr;

use cudars_bindings::cusolver as sys;
use cudars_core::{DeviceBuffer, DeviceView, DeviceViewMut, InvalidKind};

use crate::element::Element;
use crate::error::{Error, Result, SolverErrorKind};
use crate::matrix::{MatMut, MatRef, to_int};
use crate::solver::{EigJob, Fill, Op, Side, Solver, square};

impl Solver {
    /// QR factorisation (`geqrf`) of the `m × n` matrix `A`, in place: `R` on
    /// and above the diagonal, the Householder vectors of `Q` below it, and
    /// their scalars in `tau` (at least `min(m, n)` elements). Form `Q` with
    /// [`orgqr`](Self::orgqr) or apply it with [`ormqr`](Self::ormqr). Waits for
    /// the stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a short `tau` ([`InvalidKind::OutOfRange`])
    /// or an operand on another device ([`InvalidKind::OtherDevice`]);
    /// cuSOLVER's error.
    pub fn geqrf<T: Element>(
        &self,
        a: &mut MatMut<'_, T>,
        mut tau: DeviceViewMut<'_, T>,
    ) -> Result<()> {
        let (m, n) = (a.dims.rows, a.dims.cols);
        let context = || format!("QR-factorising a {m}×{n} {} matrix (geqrf)", T::NAME);
        let k = m.min(n);
        if tau.len() < k {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "tau holds {} elements, fewer than min(m, n) = {k}",
                    tau.len()
                ),
            ));
        }
        if a.dims.is_empty() {
            return Ok(());
        }
        self.same_device(&[a.view.device(), tau.device()], &context)?;
        let (mi, ni, lda) = (
            to_int(m, "m", &context)?,
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
        );
        let pa = a.view.ptr() as *mut T;
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `A` is `m × n` at `lda` on the handle's device.
            unsafe { T::geqrf_buffer_size(self.handle, mi, ni, pa, lda, lw) }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        let (pw, pinfo) = (
            work.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        let ptau = tau.reborrow().ptr() as *mut T;
        self.launch(&[a.view.buffer(), tau.buffer()], &context, || {
            // SAFETY: `A` is `m × n` at `lda` in its exclusive view, `tau` holds
            // `min(m, n)` exclusive elements, the workspace `lwork`, all on the
            // handle's device and alive until the queued work is done.
            unsafe { T::geqrf(self.handle, mi, ni, pa, lda, ptau, pw, lwork_i, pinfo) }
        })?;
        self.check_info(&info, 1, false, &context, |p| {
            SolverErrorKind::InvalidParameter { position: p }
        })
    }

    /// Multiplies `C` by `op(Q)` (`ormqr`), `Q` being the orthogonal factor that
    /// [`geqrf`](Self::geqrf) left in `qr` (`r × c`, its `k = min(r, c)`
    /// Householder vectors) and `tau` (at least `k` elements): `C = op(Q)·C`
    /// ([`Side::Left`], `C` has `r` rows) or `C·op(Q)` ([`Side::Right`], `C` has
    /// `r` columns). Waits for the stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for shapes that do not fit or a short `tau`
    /// ([`InvalidKind::OutOfRange`]) or an operand on another device
    /// ([`InvalidKind::OtherDevice`]); cuSOLVER's error.
    pub fn ormqr<T: Element>(
        &self,
        side: Side,
        op: Op,
        qr: MatRef<'_, T>,
        tau: DeviceView<'_, T>,
        c: &mut MatMut<'_, T>,
    ) -> Result<()> {
        let (m, n) = (c.dims.rows, c.dims.cols);
        let r = qr.dims.rows;
        let k = r.min(qr.dims.cols);
        let context = || {
            format!(
                "multiplying a {m}×{n} {} matrix by Q from a QR factorisation (ormqr)",
                T::NAME
            )
        };
        let (against, what) = match side {
            Side::Left => (m, "rows"),
            Side::Right => (n, "columns"),
        };
        if r != against {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("Q is {r}×{r} but C has {against} {what}"),
            ));
        }
        if tau.len() < k {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "tau holds {} elements, fewer than the {k} reflectors",
                    tau.len()
                ),
            ));
        }
        if c.dims.is_empty() || k == 0 {
            return Ok(());
        }
        self.same_device(&[qr.view.device(), tau.device(), c.view.device()], &context)?;
        let (mi, ni, ki, lda, ldc) = (
            to_int(m, "m", &context)?,
            to_int(n, "n", &context)?,
            to_int(k, "k", &context)?,
            to_int(qr.dims.ld, "lda", &context)?,
            to_int(c.dims.ld, "ldc", &context)?,
        );
        let side_raw = match side {
            Side::Left => sys::CUBLAS_SIDE_LEFT,
            Side::Right => sys::CUBLAS_SIDE_RIGHT,
        };
        let (pa, pt, pc) = (
            qr.view.ptr() as *const T,
            tau.ptr() as *const T,
            c.view.ptr() as *mut T,
        );
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `qr` holds `r × k` at `lda`, `tau` `k` elements, `C` is
            // `m × n` at `ldc`, all on the handle's device.
            unsafe {
                T::ormqr_buffer_size(
                    self.handle,
                    side_raw,
                    op.raw(),
                    mi,
                    ni,
                    ki,
                    pa,
                    lda,
                    pt,
                    pc,
                    ldc,
                    lw,
                )
            }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        let (pw, pinfo) = (
            work.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        self.launch(
            &[qr.view.buffer(), tau.buffer(), c.view.buffer()],
            &context,
            || {
                // SAFETY: as for the size; `C` is exclusive, the workspace holds
                // `lwork` elements, all alive until the queued work is done.
                unsafe {
                    T::ormqr(
                        self.handle,
                        side_raw,
                        op.raw(),
                        mi,
                        ni,
                        ki,
                        pa,
                        lda,
                        pt,
                        pc,
                        ldc,
                        pw,
                        lwork_i,
                        pinfo,
                    )
                }
            },
        )?;
        self.check_info(&info, 1, false, &context, |p| {
            SolverErrorKind::InvalidParameter { position: p }
        })
    }

    /// Forms the first `n` columns of `Q` (`orgqr`) in place of
    /// [`geqrf`](Self::geqrf)'s output `A` (`m × n`, `m ≥ n`), from its `n`
    /// Householder vectors and `tau` (at least `n` elements): afterwards `A`
    /// holds `Q`'s `m × n` orthonormal columns, and `Q·R = A` (as it was). Waits
    /// for the stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `m < n` or `tau` is short
    /// ([`InvalidKind::OutOfRange`]) or an operand is on another device
    /// ([`InvalidKind::OtherDevice`]); cuSOLVER's error.
    pub fn orgqr<T: Element>(&self, a: &mut MatMut<'_, T>, tau: DeviceView<'_, T>) -> Result<()> {
        let (m, n) = (a.dims.rows, a.dims.cols);
        let context = || {
            format!(
                "forming Q of a {m}×{n} {} QR factorisation (orgqr)",
                T::NAME
            )
        };
        if m < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("A has fewer rows ({m}) than columns ({n})"),
            ));
        }
        if tau.len() < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("tau holds {} elements, fewer than n = {n}", tau.len()),
            ));
        }
        if a.dims.is_empty() {
            return Ok(());
        }
        self.same_device(&[a.view.device(), tau.device()], &context)?;
        let (mi, ni, lda) = (
            to_int(m, "m", &context)?,
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
        );
        let (pa, pt) = (a.view.ptr() as *mut T, tau.ptr() as *const T);
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `A` is `m × n` at `lda`, `tau` holds `n` elements, both on
            // the handle's device.
            unsafe { T::orgqr_buffer_size(self.handle, mi, ni, ni, pa, lda, pt, lw) }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        let (pw, pinfo) = (
            work.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        self.launch(&[a.view.buffer(), tau.buffer()], &context, || {
            // SAFETY: as for the size; `A` is exclusive, the workspace holds
            // `lwork` elements, all alive until the queued work is done.
            unsafe { T::orgqr(self.handle, mi, ni, ni, pa, lda, pt, pw, lwork_i, pinfo) }
        })?;
        self.check_info(&info, 1, false, &context, |p| {
            SolverErrorKind::InvalidParameter { position: p }
        })
    }

    /// Eigenvalues (ascending, into `w`: at least `n` elements) and, with
    /// [`EigJob::ValuesAndVectors`], eigenvectors (in `A`'s place) of the
    /// symmetric `n × n` matrix held in `A`'s `uplo` triangle (`syevd`, divide
    /// and conquer). `A` is overwritten either way. Waits for the stream.
    ///
    /// # Errors
    /// [`SolverErrorKind::NotConverged`] ([`Error::Extra`]);
    /// [`Error::InvalidArgument`] for a matrix that is not square or a short `w`
    /// ([`InvalidKind::OutOfRange`]) or an operand on another device
    /// ([`InvalidKind::OtherDevice`]); cuSOLVER's error.
    pub fn syevd<T: Element>(
        &self,
        job: EigJob,
        uplo: Fill,
        a: &mut MatMut<'_, T>,
        mut w: DeviceViewMut<'_, T>,
    ) -> Result<()> {
        let n = a.dims.rows;
        let context = || {
            format!(
                "the eigen-decomposition of a symmetric {n}×{n} {} matrix (syevd)",
                T::NAME
            )
        };
        square(&a.dims, "A", &context)?;
        if w.len() < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("w holds {} elements, fewer than n = {n}", w.len()),
            ));
        }
        if n == 0 {
            return Ok(());
        }
        self.same_device(&[a.view.device(), w.device()], &context)?;
        let (ni, lda) = (
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
        );
        let jobz = match job {
            EigJob::Values => sys::CUSOLVER_EIG_MODE_NOVECTOR,
            EigJob::ValuesAndVectors => sys::CUSOLVER_EIG_MODE_VECTOR,
        };
        let (pa, pw_) = (a.view.ptr() as *mut T, w.reborrow().ptr() as *mut T);
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `A` is `n × n` at `lda`, `w` holds `n` elements, both on
            // the handle's device.
            unsafe { T::syevd_buffer_size(self.handle, jobz, uplo.raw(), ni, pa, lda, pw_, lw) }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        let (pwork, pinfo) = (
            work.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        self.launch(&[a.view.buffer(), w.buffer()], &context, || {
            // SAFETY: `A` and `w` are exclusive and hold what cuSOLVER writes,
            // the workspace `lwork` elements, all on the handle's device and
            // alive until the queued work is done.
            unsafe {
                T::syevd(
                    self.handle,
                    jobz,
                    uplo.raw(),
                    ni,
                    pa,
                    lda,
                    pw_,
                    pwork,
                    lwork_i,
                    pinfo,
                )
            }
        })?;
        self.check_info(&info, 1, false, &context, |unconverged| {
            SolverErrorKind::NotConverged { unconverged }
        })
    }

    /// The singular value decomposition `A = U·Σ·Vᵀ` of the `m × n` matrix `A`,
    /// `m ≥ n` (cuSOLVER's `gesvd` takes no wide matrix: decompose `Aᵀ`): the
    /// singular values, descending, into `s` (at least `n` elements); with `u`,
    /// all of `U` (`m × m`); with `vt`, `Vᵀ` (`n × n`). `A` is overwritten.
    /// Waits for the stream.
    ///
    /// # Errors
    /// [`SolverErrorKind::NotConverged`] ([`Error::Extra`]);
    /// [`Error::InvalidArgument`] for `m < n`, a short `s` or a `U` or `Vᵀ` of
    /// another shape ([`InvalidKind::OutOfRange`]) or an operand on another
    /// device ([`InvalidKind::OtherDevice`]); cuSOLVER's error.
    pub fn gesvd<T: Element>(
        &self,
        a: &mut MatMut<'_, T>,
        mut s: DeviceViewMut<'_, T>,
        mut u: Option<&mut MatMut<'_, T>>,
        mut vt: Option<&mut MatMut<'_, T>>,
    ) -> Result<()> {
        let (m, n) = (a.dims.rows, a.dims.cols);
        let context = || format!("the SVD of a {m}×{n} {} matrix (gesvd)", T::NAME);
        if m < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "A has fewer rows ({m}) than columns ({n}); cuSOLVER's gesvd needs m ≥ n \
                     (decompose the transpose)"
                ),
            ));
        }
        if s.len() < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("s holds {} elements, fewer than n = {n}", s.len()),
            ));
        }
        for (mat, side, what) in [(u.as_deref(), m, "U"), (vt.as_deref(), n, "Vᵀ")] {
            if let Some(x) = mat {
                if x.dims.rows != side || x.dims.cols != side {
                    return Err(Error::invalid(
                        context(),
                        InvalidKind::OutOfRange,
                        format!(
                            "{what} is {}×{}, not {side}×{side}",
                            x.dims.rows, x.dims.cols
                        ),
                    ));
                }
            }
        }
        if a.dims.is_empty() {
            return Ok(());
        }
        let mut devices = vec![a.view.device(), s.device()];
        devices.extend(u.as_deref().map(|x| x.view.device()));
        devices.extend(vt.as_deref().map(|x| x.view.device()));
        self.same_device(&devices, &context)?;
        let (mi, ni, lda) = (
            to_int(m, "m", &context)?,
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
        );
        // Without U (Vᵀ), cuSOLVER does not touch it; its leading dimension is
        // still given as a valid one.
        let job = |x: bool| if x { b'A' as c_schar } else { b'N' as c_schar };
        let (jobu, jobvt) = (job(u.is_some()), job(vt.is_some()));
        let (pu, ldu) = match u.as_deref_mut() {
            Some(x) => (x.view.ptr() as *mut T, to_int(x.dims.ld, "ldu", &context)?),
            None => (ptr::null_mut(), mi),
        };
        let (pvt, ldvt) = match vt.as_deref_mut() {
            Some(x) => (x.view.ptr() as *mut T, to_int(x.dims.ld, "ldvt", &context)?),
            None => (ptr::null_mut(), ni),
        };
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `lw` is valid for writes.
            unsafe { T::gesvd_buffer_size(self.handle, mi, ni, lw) }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        // `rwork`: the unconverged superdiagonal when `info > 0` (min(m, n) - 1
        // elements).
        let mut rwork = DeviceBuffer::<T>::allocate(self.stream().device(), n, self.stream())?;
        let (pw, pr, pinfo) = (
            work.view_mut().ptr() as *mut T,
            rwork.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        let (pa, ps) = (a.view.ptr() as *mut T, s.reborrow().ptr() as *mut T);
        let mut buffers = vec![a.view.buffer(), s.buffer()];
        buffers.extend(u.as_deref().map(|x| x.view.buffer()));
        buffers.extend(vt.as_deref().map(|x| x.view.buffer()));
        self.launch(&buffers, &context, || {
            // SAFETY: `A` (`m × n` at `lda`), `s` (`n`), `U` (`m × m` at `ldu`) and
            // `Vᵀ` (`n × n` at `ldvt`) when given are exclusive views on the
            // handle's device; the workspace holds `lwork` elements and `rwork`
            // `n`; all live until the queued work is done.
            unsafe {
                T::gesvd(
                    self.handle,
                    jobu,
                    jobvt,
                    mi,
                    ni,
                    pa,
                    lda,
                    ps,
                    pu,
                    ldu,
                    pvt,
                    ldvt,
                    pw,
                    lwork_i,
                    pr,
                    pinfo,
                )
            }
        })?;
        self.check_info(&info, 1, false, &context, |unconverged| {
            SolverErrorKind::NotConverged { unconverged }
        })
    }
}
