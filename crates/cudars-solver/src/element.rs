//! The element types cuSOLVER factorises, and the typed entry points of each
//! (`cusolverDnS…` for `f32`, `cusolverDnD…` for `f64`).

use std::ffi::{c_int, c_schar};

use cudars_bindings::cusolver::{
    self as sys, cublasFillMode_t, cublasOperation_t, cublasSideMode_t, cusolverDnHandle_t,
    cusolverEigMode_t, cusolverStatus_t,
};

mod sealed {
    pub trait Sealed {}
}

/// An element type of the dense solvers: `f32` and `f64` (cuSOLVER's `S` and `D`
/// entry points). Sealed: cuSOLVER defines the set.
///
/// The methods are cuSOLVER's C functions, typed; they are this crate's
/// plumbing, hidden from the documentation.
pub trait Element: bytemuck::Pod + sealed::Sealed + Send + Sync + PartialOrd {
    /// The type's name, for messages.
    const NAME: &'static str;

    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `getrf_bufferSize`.
    unsafe fn getrf_buffer_size(
        h: cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        lwork: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `getrf`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn getrf(
        h: cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        work: *mut Self,
        ipiv: *mut c_int,
        info: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `getrs`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn getrs(
        h: cusolverDnHandle_t,
        trans: cublasOperation_t,
        n: c_int,
        nrhs: c_int,
        a: *const Self,
        lda: c_int,
        ipiv: *const c_int,
        b: *mut Self,
        ldb: c_int,
        info: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `potrf_bufferSize`.
    unsafe fn potrf_buffer_size(
        h: cusolverDnHandle_t,
        uplo: cublasFillMode_t,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        lwork: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `potrf`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn potrf(
        h: cusolverDnHandle_t,
        uplo: cublasFillMode_t,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        work: *mut Self,
        lwork: c_int,
        info: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `potrs`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn potrs(
        h: cusolverDnHandle_t,
        uplo: cublasFillMode_t,
        n: c_int,
        nrhs: c_int,
        a: *const Self,
        lda: c_int,
        b: *mut Self,
        ldb: c_int,
        info: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `potrfBatched`.
    unsafe fn potrf_batched(
        h: cusolverDnHandle_t,
        uplo: cublasFillMode_t,
        n: c_int,
        a: *mut *mut Self,
        lda: c_int,
        info: *mut c_int,
        batch: c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `potrsBatched`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn potrs_batched(
        h: cusolverDnHandle_t,
        uplo: cublasFillMode_t,
        n: c_int,
        nrhs: c_int,
        a: *mut *mut Self,
        lda: c_int,
        b: *mut *mut Self,
        ldb: c_int,
        info: *mut c_int,
        batch: c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `geqrf_bufferSize`.
    unsafe fn geqrf_buffer_size(
        h: cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        lwork: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `geqrf`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn geqrf(
        h: cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        tau: *mut Self,
        work: *mut Self,
        lwork: c_int,
        info: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `ormqr_bufferSize`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn ormqr_buffer_size(
        h: cusolverDnHandle_t,
        side: cublasSideMode_t,
        trans: cublasOperation_t,
        m: c_int,
        n: c_int,
        k: c_int,
        a: *const Self,
        lda: c_int,
        tau: *const Self,
        c: *const Self,
        ldc: c_int,
        lwork: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `ormqr`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn ormqr(
        h: cusolverDnHandle_t,
        side: cublasSideMode_t,
        trans: cublasOperation_t,
        m: c_int,
        n: c_int,
        k: c_int,
        a: *const Self,
        lda: c_int,
        tau: *const Self,
        c: *mut Self,
        ldc: c_int,
        work: *mut Self,
        lwork: c_int,
        info: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `orgqr_bufferSize`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn orgqr_buffer_size(
        h: cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        k: c_int,
        a: *const Self,
        lda: c_int,
        tau: *const Self,
        lwork: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `orgqr`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn orgqr(
        h: cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        k: c_int,
        a: *mut Self,
        lda: c_int,
        tau: *const Self,
        work: *mut Self,
        lwork: c_int,
        info: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `syevd_bufferSize`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn syevd_buffer_size(
        h: cusolverDnHandle_t,
        jobz: cusolverEigMode_t,
        uplo: cublasFillMode_t,
        n: c_int,
        a: *const Self,
        lda: c_int,
        w: *const Self,
        lwork: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `syevd`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn syevd(
        h: cusolverDnHandle_t,
        jobz: cusolverEigMode_t,
        uplo: cublasFillMode_t,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        w: *mut Self,
        work: *mut Self,
        lwork: c_int,
        info: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `gesvd_bufferSize`.
    unsafe fn gesvd_buffer_size(
        h: cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        lwork: *mut c_int,
    ) -> cusolverStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// cuSOLVER's contract for `gesvd`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gesvd(
        h: cusolverDnHandle_t,
        jobu: c_schar,
        jobvt: c_schar,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        s: *mut Self,
        u: *mut Self,
        ldu: c_int,
        vt: *mut Self,
        ldvt: c_int,
        work: *mut Self,
        lwork: c_int,
        rwork: *mut Self,
        info: *mut c_int,
    ) -> cusolverStatus_t;
}

/// Forwards each method to the named C function (same arguments, same order).
macro_rules! forward {
    ($name:ident => $c:ident ( $($arg:ident : $ty:ty),* )) => {
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(h: cusolverDnHandle_t, $($arg: $ty),*) -> cusolverStatus_t {
            // SAFETY: the caller keeps cuSOLVER's contract for this function, whose
            // arguments pass through unchanged.
            unsafe { sys::$c(h, $($arg),*) }
        }
    };
}

macro_rules! element {
    ($t:ty, $name:literal, $getrf_bs:ident, $getrf:ident, $getrs:ident, $potrf_bs:ident,
     $potrf:ident, $potrs:ident, $potrf_b:ident, $potrs_b:ident, $geqrf_bs:ident,
     $geqrf:ident, $ormqr_bs:ident, $ormqr:ident, $orgqr_bs:ident, $orgqr:ident,
     $syevd_bs:ident, $syevd:ident, $gesvd_bs:ident, $gesvd:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const NAME: &'static str = $name;
            forward!(getrf_buffer_size => $getrf_bs(m: c_int, n: c_int, a: *mut Self, lda: c_int, lwork: *mut c_int));
            forward!(getrf => $getrf(m: c_int, n: c_int, a: *mut Self, lda: c_int, work: *mut Self, ipiv: *mut c_int, info: *mut c_int));
            forward!(getrs => $getrs(trans: cublasOperation_t, n: c_int, nrhs: c_int, a: *const Self, lda: c_int, ipiv: *const c_int, b: *mut Self, ldb: c_int, info: *mut c_int));
            forward!(potrf_buffer_size => $potrf_bs(uplo: cublasFillMode_t, n: c_int, a: *mut Self, lda: c_int, lwork: *mut c_int));
            forward!(potrf => $potrf(uplo: cublasFillMode_t, n: c_int, a: *mut Self, lda: c_int, work: *mut Self, lwork: c_int, info: *mut c_int));
            forward!(potrs => $potrs(uplo: cublasFillMode_t, n: c_int, nrhs: c_int, a: *const Self, lda: c_int, b: *mut Self, ldb: c_int, info: *mut c_int));
            forward!(potrf_batched => $potrf_b(uplo: cublasFillMode_t, n: c_int, a: *mut *mut Self, lda: c_int, info: *mut c_int, batch: c_int));
            forward!(potrs_batched => $potrs_b(uplo: cublasFillMode_t, n: c_int, nrhs: c_int, a: *mut *mut Self, lda: c_int, b: *mut *mut Self, ldb: c_int, info: *mut c_int, batch: c_int));
            forward!(geqrf_buffer_size => $geqrf_bs(m: c_int, n: c_int, a: *mut Self, lda: c_int, lwork: *mut c_int));
            forward!(geqrf => $geqrf(m: c_int, n: c_int, a: *mut Self, lda: c_int, tau: *mut Self, work: *mut Self, lwork: c_int, info: *mut c_int));
            forward!(ormqr_buffer_size => $ormqr_bs(side: cublasSideMode_t, trans: cublasOperation_t, m: c_int, n: c_int, k: c_int, a: *const Self, lda: c_int, tau: *const Self, c: *const Self, ldc: c_int, lwork: *mut c_int));
            forward!(ormqr => $ormqr(side: cublasSideMode_t, trans: cublasOperation_t, m: c_int, n: c_int, k: c_int, a: *const Self, lda: c_int, tau: *const Self, c: *mut Self, ldc: c_int, work: *mut Self, lwork: c_int, info: *mut c_int));
            forward!(orgqr_buffer_size => $orgqr_bs(m: c_int, n: c_int, k: c_int, a: *const Self, lda: c_int, tau: *const Self, lwork: *mut c_int));
            forward!(orgqr => $orgqr(m: c_int, n: c_int, k: c_int, a: *mut Self, lda: c_int, tau: *const Self, work: *mut Self, lwork: c_int, info: *mut c_int));
            forward!(syevd_buffer_size => $syevd_bs(jobz: cusolverEigMode_t, uplo: cublasFillMode_t, n: c_int, a: *const Self, lda: c_int, w: *const Self, lwork: *mut c_int));
            forward!(syevd => $syevd(jobz: cusolverEigMode_t, uplo: cublasFillMode_t, n: c_int, a: *mut Self, lda: c_int, w: *mut Self, work: *mut Self, lwork: c_int, info: *mut c_int));
            forward!(gesvd_buffer_size => $gesvd_bs(m: c_int, n: c_int, lwork: *mut c_int));
            forward!(gesvd => $gesvd(jobu: c_schar, jobvt: c_schar, m: c_int, n: c_int, a: *mut Self, lda: c_int, s: *mut Self, u: *mut Self, ldu: c_int, vt: *mut Self, ldvt: c_int, work: *mut Self, lwork: c_int, rwork: *mut Self, info: *mut c_int));
        }
    };
}

element!(
    f32,
    "f32",
    cusolverDnSgetrf_bufferSize,
    cusolverDnSgetrf,
    cusolverDnSgetrs,
    cusolverDnSpotrf_bufferSize,
    cusolverDnSpotrf,
    cusolverDnSpotrs,
    cusolverDnSpotrfBatched,
    cusolverDnSpotrsBatched,
    cusolverDnSgeqrf_bufferSize,
    cusolverDnSgeqrf,
    cusolverDnSormqr_bufferSize,
    cusolverDnSormqr,
    cusolverDnSorgqr_bufferSize,
    cusolverDnSorgqr,
    cusolverDnSsyevd_bufferSize,
    cusolverDnSsyevd,
    cusolverDnSgesvd_bufferSize,
    cusolverDnSgesvd
);
element!(
    f64,
    "f64",
    cusolverDnDgetrf_bufferSize,
    cusolverDnDgetrf,
    cusolverDnDgetrs,
    cusolverDnDpotrf_bufferSize,
    cusolverDnDpotrf,
    cusolverDnDpotrs,
    cusolverDnDpotrfBatched,
    cusolverDnDpotrsBatched,
    cusolverDnDgeqrf_bufferSize,
    cusolverDnDgeqrf,
    cusolverDnDormqr_bufferSize,
    cusolverDnDormqr,
    cusolverDnDorgqr_bufferSize,
    cusolverDnDorgqr,
    cusolverDnDsyevd_bufferSize,
    cusolverDnDsyevd,
    cusolverDnDgesvd_bufferSize,
    cusolverDnDgesvd
);
