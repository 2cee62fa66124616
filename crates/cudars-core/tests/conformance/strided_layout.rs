//! `cuda_core/tests/test_strided_layout.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says. No GPU
//! needed.
//!
//! Names: `_StridedLayout` is [`StridedLayout`]; `dense(shape, itemsize, 'C' |
//! 'F' | tuple)` takes a [`StrideOrder`]; `layout[s]` is
//! [`StridedLayout::sliced`] with an [`AxisSlice`] per axis;
//! `flattened(mask=)` is `flattened_masked`, `flattened(start_axis, end_axis)`
//! `flattened_axes`, `repacked(n, axis=)` `repacked(n, axis)`. Python's
//! `strides=None` (implicitly C-contiguous, `DenseOrder.IMPLICIT_C`) is
//! [`StridedLayout::new`] without strides, which gives the row-major strides:
//! the Rust layout always has strides, so the Python checks that they are
//! `None` are checks that they are row-major.
//!
//! The reference: where Python builds `np.arange(volume)` in the layout's
//! order and transforms it as the layout is transformed (NumPy's `transpose`,
//! indexing, `reshape`, `squeeze`, `expand_dims`, `broadcast_to`, `view`), this
//! port does the same on [`Ref`], an array of element offsets in row-major
//! index order with its own, index-by-index implementation of each
//! transformation. A layout matches a reference when it reaches the
//! reference's offsets in the same order, and its contiguity, density,
//! uniqueness, strides of non-unit axes (all 0 when empty) and offset bounds
//! are what the offsets say (Python's `_cmp_layout_and_array` and
//! `_check_envelope`). Python draws item sizes and permutations from a seeded
//! `random.Random(42)`; here every permutation of up to three axes is tried,
//! a fixed few of longer ones, and item sizes cycle through 1, 2, 4, 8, 16.
//! `long_shape(rng, 64, k, m)` is a fixed 64-axis shape with the same non-unit
//! extents. The cases Python passes a wrong type (`"abc"`, `map`) are the
//! type system's (`docs/porting-from-python.md`).

use cudars_core::{AxisSlice, Error, InvalidKind, StrideOrder, StridedLayout};

const ITEMSIZES: [usize; 5] = [1, 2, 4, 8, 16];

/// Element offsets in row-major index order: what `np.arange` transformed holds.
#[derive(Clone, Debug, PartialEq)]
struct Ref {
    shape: Vec<i64>,
    vals: Vec<i64>,
}

fn volume(shape: &[i64]) -> i64 {
    shape.iter().product()
}

/// The row-major multi-index of the `k`-th element.
fn unravel(shape: &[i64], mut k: i64) -> Vec<i64> {
    let mut idx = vec![0; shape.len()];
    for i in (0..shape.len()).rev() {
        idx[i] = k % shape[i];
        k /= shape[i];
    }
    idx
}

/// The row-major position of `idx`.
fn ravel(shape: &[i64], idx: &[i64]) -> usize {
    let mut k = 0;
    for (e, i) in shape.iter().zip(idx) {
        k = k * e + i;
    }
    k as usize
}

fn all_indices(shape: &[i64]) -> impl Iterator<Item = Vec<i64>> + '_ {
    (0..volume(shape)).map(move |k| unravel(shape, k))
}

impl Ref {
    /// `np.arange(n).reshape(permuted(shape, order)).transpose(inv(order))`.
    fn dense(shape: &[i64], order: &[usize]) -> Self {
        let base: Vec<i64> = order.iter().map(|&a| shape[a]).collect();
        let vals = all_indices(shape)
            .map(|idx| {
                let j: Vec<i64> = order.iter().map(|&a| idx[a]).collect();
                ravel(&base, &j) as i64
            })
            .collect();
        Self {
            shape: shape.to_vec(),
            vals,
        }
    }

    fn at(&self, idx: &[i64]) -> i64 {
        self.vals[ravel(&self.shape, idx)]
    }

    fn transpose(&self, perm: &[usize]) -> Self {
        let shape: Vec<i64> = perm.iter().map(|&p| self.shape[p]).collect();
        let vals = all_indices(&shape)
            .map(|idx| {
                let mut j = vec![0; idx.len()];
                for (i, &p) in perm.iter().enumerate() {
                    j[p] = idx[i];
                }
                self.at(&j)
            })
            .collect();
        Self { shape, vals }
    }

    /// `a[slices]`, each axis's chosen indices listed one by one.
    fn slice(&self, slices: &[AxisSlice]) -> Self {
        let mut picks: Vec<Option<Vec<i64>>> = Vec::new(); // None: an index (axis dropped)
        let mut fixed = Vec::new();
        for (i, &e) in self.shape.iter().enumerate() {
            match slices.get(i).copied().unwrap_or(AxisSlice::ALL) {
                AxisSlice::Index(x) => {
                    fixed.push((i, if x < 0 { x + e } else { x }));
                    picks.push(None);
                }
                AxisSlice::Range { start, stop, step } => {
                    picks.push(Some(python_range(e, start, stop, step)));
                }
            }
        }
        let shape: Vec<i64> = picks.iter().flatten().map(|p| p.len() as i64).collect();
        let vals = all_indices(&shape)
            .map(|idx| {
                let mut j = vec![0; self.shape.len()];
                let mut k = 0;
                for (i, p) in picks.iter().enumerate() {
                    if let Some(p) = p {
                        j[i] = p[idx[k] as usize];
                        k += 1;
                    }
                }
                for &(i, x) in &fixed {
                    j[i] = x;
                }
                self.at(&j)
            })
            .collect();
        Self { shape, vals }
    }

    fn reshape(&self, shape: &[i64]) -> Self {
        let mut shape = shape.to_vec();
        if let Some(i) = shape.iter().position(|&e| e == -1) {
            let known: i64 = shape.iter().filter(|&&e| e != -1).product();
            shape[i] = volume(&self.shape) / known;
        }
        Self {
            shape,
            vals: self.vals.clone(),
        }
    }

    fn squeeze(&self) -> Self {
        Self {
            shape: self.shape.iter().copied().filter(|&e| e != 1).collect(),
            vals: self.vals.clone(),
        }
    }

    fn expand_dims(&self, axes: &[i64]) -> Self {
        let n = self.shape.len() + axes.len();
        let mut shape = Vec::new();
        let mut k = 0;
        for i in 0..n as i64 {
            if axes.contains(&i) {
                shape.push(1);
            } else {
                shape.push(self.shape[k]);
                k += 1;
            }
        }
        Self {
            shape,
            vals: self.vals.clone(),
        }
    }

    fn broadcast_to(&self, shape: &[i64]) -> Self {
        let lead = shape.len() - self.shape.len();
        let vals = all_indices(shape)
            .map(|idx| {
                let j: Vec<i64> = (0..self.shape.len())
                    .map(|i| if self.shape[i] == 1 { 0 } else { idx[lead + i] })
                    .collect();
                self.at(&j)
            })
            .collect();
        Self {
            shape: shape.to_vec(),
            vals,
        }
    }
}

/// Python's `range(*slice(start, stop, step).indices(extent))`, by brute force.
fn python_range(extent: i64, start: Option<i64>, stop: Option<i64>, step: i64) -> Vec<i64> {
    let norm = |v: i64| if v < 0 { v + extent } else { v };
    let mut out = Vec::new();
    if step > 0 {
        let lo = start.map_or(0, norm).max(0);
        let hi = stop.map_or(extent, norm).min(extent);
        let mut i = lo;
        while i < hi {
            out.push(i);
            i += step;
        }
    } else {
        let hi = start.map_or(extent - 1, norm).min(extent - 1);
        let lo = stop.map_or(-1, norm).max(-1);
        let mut i = hi;
        while i > lo {
            out.push(i);
            i += step;
        }
    }
    out
}

/// The offsets a layout reaches, in row-major index order.
fn offsets(l: &StridedLayout) -> Vec<i64> {
    all_indices(l.shape())
        .map(|idx| l.slice_offset() + idx.iter().zip(l.strides()).map(|(i, s)| i * s).sum::<i64>())
        .collect()
}

/// Whether the offsets, visiting axes in `order` (the last fastest), are
/// consecutive.
fn consecutive(r: &Ref, order: &[usize]) -> bool {
    if r.vals.is_empty() {
        return true;
    }
    let t = r.transpose(order);
    t.vals.windows(2).all(|w| w[1] == w[0] + 1)
}

/// Python's `_cmp_layout_and_array` and `_check_envelope` in one.
#[track_caller]
fn check(l: &StridedLayout, r: &Ref, original_volume: i64, itemsize: usize) {
    let n = r.shape.len();
    assert_eq!(l.ndim(), n);
    assert_eq!(l.shape(), &r.shape[..]);
    assert_eq!(l.volume(), volume(&r.shape));
    assert_eq!(l.itemsize(), itemsize);
    assert_eq!(
        l.slice_offset() * itemsize as i64,
        l.slice_offset_in_bytes()
    );
    assert_eq!(offsets(l), r.vals, "{l:?}");
    let c: Vec<usize> = (0..n).collect();
    let f: Vec<usize> = (0..n).rev().collect();
    let (cc, fc) = (consecutive(r, &c), consecutive(r, &f));
    assert_eq!(l.is_contiguous_c(), cc, "{l:?}");
    assert_eq!(l.is_contiguous_f(), fc, "{l:?}");
    let any = cc || fc || consecutive(r, &l.stride_order());
    assert_eq!(l.is_contiguous_any(), any, "{l:?}");
    assert_eq!(l.is_dense(), any && l.slice_offset() == 0);
    let mut sorted = r.vals.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(l.is_unique(), sorted.len() == r.vals.len(), "{l:?}");
    let zero = vec![0; n];
    if r.vals.is_empty() {
        assert_eq!(l.strides(), &zero[..]);
    } else {
        for i in 0..n {
            if r.shape[i] > 1 {
                let mut at1 = zero.clone();
                at1[i] = 1;
                assert_eq!(l.strides()[i], r.at(&at1) - r.at(&zero), "{l:?} axis {i}");
            }
        }
    }
    let bytes: Vec<i64> = l.strides().iter().map(|s| s * itemsize as i64).collect();
    assert_eq!(l.strides_in_bytes(), bytes);
    // The envelope.
    let (lo, hi) = l.offset_bounds();
    if r.vals.is_empty() {
        assert_eq!((lo, hi), (0, -1));
    } else {
        assert_eq!(lo, *sorted.first().unwrap());
        assert_eq!(hi, *sorted.last().unwrap());
        assert!(0 <= lo && lo <= hi && hi < original_volume);
        if l.is_dense() {
            assert_eq!((lo, hi), (0, volume(&r.shape) - 1));
        }
    }
    let req = l.required_size_in_bytes().unwrap();
    assert_eq!(req, ((hi + 1) * itemsize as i64) as u64);
    assert!(req <= (original_volume * itemsize as i64) as u64);
}

/// `DenseOrder`: `IMPLICIT_C` (no strides given), `C`, `F`.
#[derive(Clone, Copy, Debug)]
enum Order {
    Implicit,
    C,
    F,
}
const ORDERS: [Order; 3] = [Order::Implicit, Order::C, Order::F];

/// `_setup_layout_and_np_ref`: the layout and its reference, checked.
fn setup(shape: &[i64], itemsize: usize, order: Order) -> (StridedLayout, Ref) {
    let n = shape.len();
    let (l, axes): (_, Vec<usize>) = match order {
        Order::Implicit => (
            StridedLayout::new(shape, None, itemsize).unwrap(),
            (0..n).collect(),
        ),
        Order::C => (
            StridedLayout::dense(shape, itemsize, &StrideOrder::C).unwrap(),
            (0..n).collect(),
        ),
        Order::F => (
            StridedLayout::dense(shape, itemsize, &StrideOrder::F).unwrap(),
            (0..n).rev().collect(),
        ),
    };
    let r = Ref::dense(shape, &axes);
    check(&l, &r, volume(shape), itemsize);
    (l, r)
}

fn setup_axes(shape: &[i64], itemsize: usize, axes: &[usize]) -> (StridedLayout, Ref) {
    let l = StridedLayout::dense(shape, itemsize, &StrideOrder::Axes(axes.to_vec())).unwrap();
    let r = Ref::dense(shape, axes);
    check(&l, &r, volume(shape), itemsize);
    (l, r)
}

/// Every permutation of `0..n`.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

/// Python's `random_permutations`: all of up to three axes, else a fixed few.
fn some_permutations(n: usize) -> Vec<Vec<usize>> {
    if n <= 3 {
        return permutations(n);
    }
    let id: Vec<usize> = (0..n).collect();
    let rev: Vec<usize> = (0..n).rev().collect();
    let rot: Vec<usize> = (0..n).map(|i| (i + 1) % n).collect();
    let swap: Vec<usize> = (0..n).map(|i| i ^ 1).map(|i| i.min(n - 1)).collect();
    let mut out = vec![id, rev, rot];
    if n % 2 == 0 {
        out.push(swap);
    }
    out
}

/// `long_shape(rng, ndim, k, m)`: `min(i + 2, m)` for `i < k`, then ones,
/// spread over the axes (a fixed shuffle).
fn long_shape(ndim: usize, k: usize, m: i64) -> Vec<i64> {
    let mut shape = vec![1; ndim];
    for i in 0..k {
        shape[(i * 13 + 5) % ndim] = (i as i64 + 2).min(m);
    }
    shape
}

fn inv(perm: &[usize]) -> Vec<usize> {
    let mut out = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        out[p] = i;
    }
    out
}

fn as_i64(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&x| x as i64).collect()
}

/// `s(start, stop, step)`: Python's `start:stop:step`.
fn s(start: Option<i64>, stop: Option<i64>, step: i64) -> AxisSlice {
    AxisSlice::range(start, stop, step)
}
const ALL: AxisSlice = AxisSlice::ALL;
fn ix(i: i64) -> AxisSlice {
    AxisSlice::Index(i)
}

fn kind<T: std::fmt::Debug>(r: cudars_core::Result<T>, needle: &str) -> InvalidKind {
    let e = r.unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
    e.invalid_kind().unwrap()
}

/// Shapes `()`, `(5,)`, `(7, 9)`, `(2, 3, 4)`, dense in every stride order:
/// the layout matches NumPy's array of that order and reports the order.
#[test]
fn test_dense_with_permutation_as_stride_order() {
    let mut k = 0;
    for shape in [&[][..], &[5], &[7, 9], &[2, 3, 4]] {
        for order in permutations(shape.len()) {
            let itemsize = ITEMSIZES[k % 5];
            k += 1;
            let (l, _) = setup_axes(shape, itemsize, &order);
            assert_eq!(l.stride_order(), order);
        }
    }
}

/// Dense C, F and implicit-C layouts of several shapes (a 64-axis one
/// included), permuted: NumPy's `transpose`, and the stride order is the
/// inverse permutation (reversed for F) where it is unique.
#[test]
fn test_permuted() {
    let shapes: Vec<Vec<i64>> = vec![
        vec![],
        vec![1],
        vec![2, 3],
        vec![5, 6, 7],
        vec![5, 1, 7],
        vec![5, 2, 3, 4],
        long_shape(64, 5, 6),
    ];
    let mut k = 0;
    for shape in &shapes {
        for perm in some_permutations(shape.len()).into_iter().take(3) {
            for order in ORDERS {
                let itemsize = ITEMSIZES[k % 5];
                k += 1;
                let (l, r) = setup(shape, itemsize, order);
                let p = l.permuted(&as_i64(&perm)).unwrap();
                let rp = r.transpose(&perm);
                check(&p, &rp, volume(shape), itemsize);
                if rp.shape.iter().filter(|&&e| e == 1).count() <= 1 {
                    let mut expected = inv(&perm);
                    if matches!(order, Order::F) {
                        expected.reverse();
                    }
                    assert_eq!(p.stride_order(), expected, "{shape:?} {perm:?} {order:?}");
                }
            }
        }
    }
}

/// Wrong permutations: a length other than the dimensions, an axis twice,
/// an axis out of range. Python: `ValueError` with those messages.
#[test]
fn test_permuted_validation() {
    let cases: [(&[i64], &[i64], &str); 5] = [
        (&[], &[5], "the same length as the number of dimensions"),
        (&[1], &[0, 0], "the same length as the number of dimensions"),
        (&[2, 5, 3], &[1, 0, 1], "appears multiple times"),
        (&[5, 6, 7], &[1, 3, 0], "out of range for"),
        (&[5, 6, 7], &[1, -2000, 0], "out of range for"),
    ];
    for (shape, perm, msg) in cases {
        for order in ORDERS {
            let (l, _) = setup(shape, 4, order);
            kind(l.permuted(perm), msg);
        }
    }
}

/// Slices as the Python cases have them (each list entry applied in turn),
/// compared with NumPy's indexing, offsets included; a zero step, too many
/// slices and an index out of range are refused.
#[test]
fn test_slice() {
    let n = None;
    let long = long_shape(64, 5, 6);
    let rev64 = vec![s(n, n, -1); 64];
    type Case<'a> = (&'a [i64], Vec<Vec<AxisSlice>>, Option<&'a str>);
    let cases: Vec<Case<'_>> = vec![
        (&[], vec![vec![]], None),
        (&[12], vec![vec![ALL]], None),
        (&[13], vec![vec![s(n, n, -1)]], None),
        (&[13], vec![vec![s(n, n, -1)], vec![s(n, n, -1)]], None),
        (
            &[13],
            vec![
                vec![s(n, n, -1)],
                vec![s(Some(1), Some(-1), 1)],
                vec![s(n, n, -1)],
            ],
            None,
        ),
        (&[13], vec![vec![s(Some(2), Some(-3), 1)]], None),
        (&[13], vec![vec![s(Some(2), Some(-3), 2)]], None),
        (&[13], vec![vec![s(Some(-3), Some(2), -2)]], None),
        (
            &[13],
            vec![vec![s(Some(-3), Some(2), -2)], vec![s(Some(1), Some(3), 1)]],
            None,
        ),
        (
            &[3, 5],
            vec![vec![s(n, Some(2), 1)], vec![ALL, s(Some(3), n, 1)]],
            None,
        ),
        (&[3, 5], vec![vec![s(Some(5), Some(4), 1)]], None),
        (
            &[3, 5],
            vec![vec![ALL, s(n, n, 0)]],
            Some("slice step cannot be zer"),
        ),
        (
            &[3, 5],
            vec![vec![ALL, s(n, Some(-1), 1), s(n, Some(2), 1)]],
            Some("is greater than the number of dimensions"),
        ),
        (
            &[11, 12, 3],
            vec![vec![ALL, ix(0), s(n, Some(-1), 1)]],
            None,
        ),
        (
            &[11, 12, 3],
            vec![vec![ix(0), ix(1), s(n, Some(-1), 1)]],
            None,
        ),
        (&[11, 12, 3, 5], vec![vec![ix(0)], vec![ix(1)]], None),
        (
            &[11, 12, 3, 5],
            vec![vec![ALL, ix(1), s(n, Some(-1), 1)]],
            None,
        ),
        (&[11, 12, 3], vec![vec![ix(0), ix(1), ix(2)]], None),
        (
            &[11, 12, 3],
            vec![vec![ix(0), ix(1), ix(5)]],
            Some("out of range for axis"),
        ),
        (&[11, 12, 3], vec![vec![ix(-2)]], None),
        (
            &[11, 12, 3],
            vec![vec![ix(-42)]],
            Some("out of range for axis"),
        ),
        (&long, vec![rev64], None),
    ];
    let mut k = 0;
    for (shape, slices, err) in cases {
        for order in ORDERS {
            let itemsize = ITEMSIZES[k % 5];
            k += 1;
            let (mut l, mut r) = setup(shape, itemsize, order);
            if let Some(msg) = err {
                let e = slices.iter().try_fold(l.clone(), |l, sl| l.sliced(sl));
                let kd = kind(e, msg);
                if msg.contains("out of range") || msg.contains("greater") {
                    assert_eq!(kd, InvalidKind::OutOfRange);
                }
                continue;
            }
            for sl in &slices {
                let sliced = l.sliced(sl).unwrap();
                let rs = r.slice(sl);
                check(&sliced, &rs, volume(shape), itemsize);
                // `_cmp_slice_offset`: the offsets moved as NumPy's pointer did.
                if !rs.shape.is_empty() && !rs.vals.is_empty() && !r.vals.is_empty() {
                    let first = |x: &Ref| x.vals[0];
                    assert_eq!(
                        sliced.slice_offset_in_bytes() - l.slice_offset_in_bytes(),
                        (first(&rs) - first(&r)) * itemsize as i64
                    );
                }
                l = sliced;
                r = rs;
            }
        }
    }
}

/// `reshaped` against NumPy's `reshape(copy=False)`: the Python cases, with
/// each refusal's message (the strides that cannot express the new shape are
/// the cases NumPy cannot reshape without a copy either).
#[test]
fn test_reshape() {
    let n = None;
    const VOL: &str = "must be equal";
    const NEG: &str = "Extents must be non-negative";
    const MULTI: &str = "at most one -1 extent";
    const AMB: &str = "The -1 extent is ambiguous";
    const DIV: &str = "must be divisible by the specified sub-volume";
    const STRIDE: &str = "Layout strides are incompatible with the new shape";
    let long = long_shape(64, 5, 6);
    type Case<'a> = (
        &'a [i64],
        Option<&'a [usize]>,
        Option<Vec<AxisSlice>>,
        &'a [i64],
        Option<&'a str>,
    );
    let r3 = s(n, n, -1);
    let cases: Vec<Case<'_>> = vec![
        (&[], None, None, &[], None),
        (&[], None, None, &[1], None),
        (&[], None, None, &[-1], None),
        (&[], None, None, &[1, -1, 1], None),
        (&[1], None, None, &[-1], None),
        (&[1], None, None, &[], None),
        (&[12], None, Some(vec![ALL]), &[12], None),
        (&[12], None, None, &[11], Some(VOL)),
        (&[12], None, Some(vec![s(Some(1), n, 1)]), &[11], None),
        (&[0], None, None, &[0], None),
        (&[0], None, None, &[1, 3], Some(VOL)),
        (&[3], None, Some(vec![s(Some(3), n, 1)]), &[3], Some(VOL)),
        (&[18], None, None, &[0], Some(VOL)),
        (&[3], None, Some(vec![s(Some(2), Some(-1), 1)]), &[0], None),
        (&[3], None, Some(vec![s(Some(3), n, 1)]), &[-1], None),
        (&[0], None, None, &[1, -1], None),
        (&[0], None, None, &[0, -1], Some(AMB)),
        (&[3, 0, 3], None, None, &[2, 3, 4, 5, 6, 7, 0, 12], None),
        (&[3, 0, 3], None, None, &[0], None),
        (&[12], None, None, &[2, 3, 2], None),
        (&[12], None, None, &[2, 6], None),
        (&[12], None, None, &[4, 3], None),
        (&[12], None, None, &[3, 4], None),
        (&[7, 12], None, None, &[7, 12], None),
        (&[7, 12], None, None, &[12, 7], None),
        (&[12, 11], None, None, &[2, 3, 2, 11], None),
        (&[12, 11], None, None, &[2, 3, 11, 2], None),
        (&[12, 11], None, None, &[2, 11, 3, 2], None),
        (&[12, 11], None, None, &[11, 2, 3, 2], None),
        (&[12, 11], None, None, &[2, 3, 2, -1], None),
        (&[12, 11], None, None, &[2, 3, -1, 2], None),
        (&[12, 11], None, None, &[2, -1, 3, 2], None),
        (&[12, 11], None, None, &[-1, 2, 3, 2], None),
        (&[12, 11], None, None, &[2, 3, -1, 11], None),
        (&[12, 11], None, None, &[2, 3, 11, -1], None),
        (&[12, 11], None, None, &[-1, 11, 3, 2], None),
        (&[12, 11], None, None, &[11, 2, -1, 2], None),
        (&[5, 12], None, None, &[2, 5, 6], None),
        (&[2, 3, 2], None, None, &[12], None),
        (&[2, 3, 2], None, None, &[6, 2], None),
        (&[2, 3, 2], None, None, &[2, 3, 2], None),
        (&[2, 3, 2], Some(&[1, 2, 0]), None, &[6, 2], None),
        (&[2, 3, 2], Some(&[1, 2, 0]), None, &[2, 6], Some(STRIDE)),
        (&[2, 3, 2], Some(&[1, 2, 0]), None, &[12], Some(STRIDE)),
        (&[2, 3, 2], Some(&[1, 0, 2]), None, &[3, 2, 2], None),
        (&[2, 3, 2], Some(&[1, 0, 2]), None, &[3, 4], Some(STRIDE)),
        (&[2, 3, 2], Some(&[1, 0, 2]), None, &[6, 2], Some(STRIDE)),
        (&[2, 3, 2], Some(&[1, 0, 2]), None, &[12], Some(STRIDE)),
        (
            &[10, 10, 10],
            None,
            Some(vec![r3, r3, ALL]),
            &[10, 10, 10],
            None,
        ),
        (&[10, 10, 10], None, Some(vec![r3, r3, r3]), &[1000], None),
        (
            &[10, 10, 10],
            None,
            Some(vec![r3, r3, ALL]),
            &[100, 10],
            None,
        ),
        (
            &[10, 10, 10],
            None,
            Some(vec![r3, r3, ALL]),
            &[10, 100],
            Some(STRIDE),
        ),
        (
            &[10, 10, 10],
            None,
            Some(vec![ALL, ALL, r3]),
            &[100, 10],
            None,
        ),
        (
            &[10, 10, 10],
            None,
            Some(vec![ALL, ALL, r3]),
            &[10, 100],
            Some(STRIDE),
        ),
        (
            &[10, 10, 10],
            None,
            Some(vec![r3, ALL, r3]),
            &[1000],
            Some(STRIDE),
        ),
        (
            &[10, 10, 10],
            Some(&[1, 0, 2]),
            Some(vec![r3, r3]),
            &[100, 10],
            Some(STRIDE),
        ),
        (
            &[5, 3],
            None,
            Some(vec![s(n, Some(-1), 1), ALL]),
            &[12],
            None,
        ),
        (
            &[13, 3],
            None,
            Some(vec![s(Some(1), n, 1), ALL]),
            &[6, 6],
            None,
        ),
        (
            &[12, 4],
            None,
            Some(vec![ALL, s(n, Some(-1), 1)]),
            &[6, 6],
            Some(STRIDE),
        ),
        (
            &[12, 4],
            None,
            Some(vec![ALL, s(n, Some(-1), 1)]),
            &[6, 2, 3],
            None,
        ),
        (&[7, 6, 5], None, None, &[70, -1], None),
        (&[7, 6, 5], None, None, &[-1, 70], None),
        (&[7, 6, 5], None, None, &[71, -1], Some(DIV)),
        (&[7, 6, 5], None, None, &[-1, 71], Some(DIV)),
        (&[7, 6, 5], None, None, &[71, -2], Some(NEG)),
        (&[7, 6, 5], None, None, &[-2, 71], Some(NEG)),
        (&[7, 6, 5], None, None, &[-1, 6, -1], Some(MULTI)),
        (&[7, 6, 5], None, None, &[-2, -1, -1], Some(NEG)),
        (&[7, 6, 5], None, None, &[-2, -1, -2], Some(NEG)),
        (&[7, 6, 5], None, None, &[-7, 6, -5], Some(NEG)),
        (&[7, 6, 5], None, None, &[5, 0, -1], Some(AMB)),
        (&[7, 0, 5], None, None, &[5, 0, -1], Some(AMB)),
        (&long, None, None, &[60, 12], None),
    ];
    let mut k = 0;
    for (shape, perm, slices, new_shape, err) in cases {
        for order in [Order::C, Order::Implicit] {
            let itemsize = ITEMSIZES[k % 5];
            k += 1;
            let (mut l, mut r) = setup(shape, itemsize, order);
            if let Some(p) = perm {
                l = l.permuted(&as_i64(p)).unwrap();
                r = r.transpose(p);
            }
            if let Some(sl) = &slices {
                l = l.sliced(sl).unwrap();
                r = r.slice(sl);
            }
            check(&l, &r, volume(shape), itemsize);
            match err {
                None => {
                    let re = l.reshaped(new_shape).unwrap();
                    check(&re, &r.reshape(new_shape), volume(shape), itemsize);
                }
                Some(msg) => {
                    kind(l.reshaped(new_shape), msg);
                }
            }
        }
    }
}

/// `flattened_axis_mask` as Python's bit strings, `flattened()` (and with
/// the mask, and an axis range), the shape and strides Python expects.
#[test]
fn test_flatten() {
    let n = None;
    let rev2 = vec![ALL, ALL, ALL, ALL, s(n, n, -2)];
    let mut long_mask = "0".to_string();
    long_mask.push_str(&"1".repeat(63));
    type Case<'a> = (
        Vec<i64>,
        Option<&'a [usize]>,
        Option<Vec<AxisSlice>>,
        &'a [i64],
        &'a [i64],
        String,
        Option<(i64, i64)>,
    );
    let cases: Vec<Case<'_>> = vec![
        (vec![], None, None, &[1], &[1], String::new(), None),
        (
            vec![12],
            None,
            Some(vec![ALL]),
            &[12],
            &[1],
            "0".into(),
            None,
        ),
        (
            vec![1, 2, 3, 4, 5],
            None,
            None,
            &[120],
            &[1],
            "01111".into(),
            None,
        ),
        (
            vec![1, 2, 3, 0, 5],
            None,
            None,
            &[0],
            &[0],
            "01111".into(),
            None,
        ),
        (
            vec![5, 1, 2, 4, 3],
            None,
            Some(rev2.clone()),
            &[40, 2],
            &[3, -2],
            "01110".into(),
            None,
        ),
        (
            vec![5, 1, 2, 4, 3],
            None,
            Some(rev2.clone()),
            &[10, 4, 2],
            &[12, 3, -2],
            "01110".into(),
            Some((0, 2)),
        ),
        (
            vec![5, 1, 2, 4, 3],
            None,
            Some(rev2.clone()),
            &[5, 2, 4, 2],
            &[24, 12, 3, -2],
            "01110".into(),
            Some((1, 2)),
        ),
        (
            vec![5, 1, 2, 4, 3],
            None,
            Some(rev2.clone()),
            &[5, 8, 2],
            &[24, 3, -2],
            "01110".into(),
            Some((1, 3)),
        ),
        (
            vec![5, 1, 2, 4, 3],
            None,
            Some(rev2.clone()),
            &[5, 8, 2],
            &[24, 3, -2],
            "01110".into(),
            Some((1, 4)),
        ),
        (
            vec![5, 2, 4, 3],
            None,
            Some(vec![ALL, s(n, n, -1), ALL, ALL]),
            &[5, 2, 12],
            &[24, -12, 1],
            "0001".into(),
            None,
        ),
        (
            vec![5, 7, 4, 3],
            None,
            Some(vec![ALL, s(n, n, -1), s(n, n, -1)]),
            &[5, 28, 3],
            &[84, -3, 1],
            "0010".into(),
            None,
        ),
        (
            vec![5, 4, 3, 7],
            Some(&[2, 3, 0, 1]),
            Some(vec![ALL]),
            &[21, 20],
            &[1, 21],
            "0101".into(),
            None,
        ),
        (
            vec![5, 4, 3, 7],
            Some(&[3, 2, 0, 1]),
            None,
            &[7, 3, 20],
            &[1, 7, 21],
            "0001".into(),
            None,
        ),
        (
            long_shape(64, 4, 5),
            None,
            None,
            &[120],
            &[1],
            long_mask,
            None,
        ),
    ];
    let mut k = 0;
    for (shape, perm, slices, exp_shape, exp_strides, exp_mask, range) in cases {
        for order in [Order::C, Order::Implicit] {
            let itemsize = ITEMSIZES[k % 5];
            k += 1;
            let (mut l, mut r) = setup(&shape, itemsize, order);
            if let Some(p) = perm {
                l = l.permuted(&as_i64(p)).unwrap();
                r = r.transpose(p);
            }
            if let Some(sl) = &slices {
                l = l.sliced(sl).unwrap();
                r = r.slice(sl);
            }
            check(&l, &r, volume(&shape), itemsize);
            let mask = l.flattened_axis_mask();
            let bits: String = (0..l.ndim())
                .map(|i| if mask & (1 << i) != 0 { '1' } else { '0' })
                .collect();
            assert_eq!(bits, exp_mask, "{shape:?}");
            let flat = match range {
                None => {
                    let f = l.flattened();
                    assert_eq!(l.flattened_masked(mask), f);
                    assert_eq!(f.flattened_axis_mask(), 0);
                    f
                }
                Some((a, b)) => l.flattened_axes(a, b).unwrap(),
            };
            assert_eq!(flat.shape(), exp_shape, "{shape:?} {range:?}");
            assert_eq!(flat.strides(), exp_strides, "{shape:?} {range:?}");
            assert_eq!(flat.itemsize(), itemsize);
            assert_eq!(flat.slice_offset(), l.slice_offset());
        }
    }
}

/// Two layouts flattened with the intersection of their masks give the
/// expected dense layouts (and `StridedLayout::flatten_together` does it in
/// one call).
#[test]
fn test_flatten_together() {
    #[derive(Clone)]
    enum O<'a> {
        C,
        Implicit,
        Axes(&'a [usize]),
    }
    let mk = |shape: &[i64], itemsize: usize, o: &O<'_>| -> (StridedLayout, Ref) {
        match o {
            O::C => setup(shape, itemsize, Order::C),
            O::Implicit => setup(shape, itemsize, Order::Implicit),
            O::Axes(a) => setup_axes(shape, itemsize, a),
        }
    };
    type Spec<'a> = (&'a [i64], usize, O<'a>);
    let cases: Vec<[Spec<'_>; 4]> = vec![
        [
            (&[], 2, O::C),
            (&[], 4, O::C),
            (&[1], 2, O::C),
            (&[1], 4, O::C),
        ],
        [
            (&[], 2, O::Implicit),
            (&[], 4, O::Implicit),
            (&[1], 2, O::C),
            (&[1], 4, O::C),
        ],
        [
            (&[2, 7, 13, 5], 8, O::C),
            (&[3, 5, 11, 1], 4, O::C),
            (&[910], 8, O::C),
            (&[165], 4, O::C),
        ],
        [
            (&[2, 7, 13, 5], 8, O::Implicit),
            (&[3, 5, 11, 1], 4, O::Implicit),
            (&[910], 8, O::C),
            (&[165], 4, O::C),
        ],
        [
            (&[5, 7, 13, 2], 4, O::Axes(&[3, 1, 2, 0])),
            (&[3, 5, 11, 1], 2, O::Implicit),
            (&[5, 91, 2], 4, O::Axes(&[2, 1, 0])),
            (&[3, 55, 1], 2, O::C),
        ],
        [
            (&[2, 7, 13, 5], 16, O::C),
            (&[11, 1, 3, 5], 1, O::Axes(&[2, 3, 0, 1])),
            (&[14, 65], 16, O::C),
            (&[11, 15], 1, O::Axes(&[1, 0])),
        ],
        [
            (&[4, 5, 11, 2, 3, 7], 4, O::Axes(&[5, 3, 4, 0, 1, 2])),
            (&[3, 8, 5, 6, 7, 9], 4, O::Axes(&[0, 1, 3, 4, 5, 2])),
            (&[20, 11, 6, 7], 4, O::Axes(&[3, 2, 0, 1])),
            (&[24, 5, 42, 9], 4, O::Axes(&[0, 2, 3, 1])),
        ],
    ];
    for [a, b, ea, eb] in cases {
        let (l0, _) = mk(a.0, a.1, &a.2);
        let (l1, _) = mk(b.0, b.1, &b.2);
        let (e0, _) = mk(ea.0, ea.1, &ea.2);
        let (e1, _) = mk(eb.0, eb.1, &eb.2);
        let mask = l0.flattened_axis_mask() & l1.flattened_axis_mask();
        let (f0, f1) = (l0.flattened_masked(mask), l1.flattened_masked(mask));
        for (f, e, orig) in [(&f0, &e0, &l0), (&f1, &e1, &l1)] {
            assert_eq!(f, e);
            assert_eq!(f.is_contiguous_c(), e.is_contiguous_c());
            assert_eq!(f.is_contiguous_f(), e.is_contiguous_f());
            assert_eq!(f.is_contiguous_any(), e.is_contiguous_any());
            assert_eq!(f.is_unique(), e.is_unique());
            // The envelope of the original.
            assert_eq!(f.offset_bounds(), orig.offset_bounds());
        }
        assert_eq!(
            StridedLayout::flatten_together(&[&l0, &l1]).unwrap(),
            vec![f0, f1]
        );
    }
}

/// `squeezed` against NumPy's `squeeze`; an empty layout becomes `(0,)`,
/// strides `(0,)`; the offset is kept.
#[test]
fn test_squeezed() {
    let n = None;
    type Case<'a> = (Vec<i64>, Option<&'a [usize]>, Option<Vec<AxisSlice>>);
    let cases: Vec<Case<'_>> = vec![
        (vec![], None, None),
        (vec![12], None, None),
        (vec![1, 5, 4, 3], None, None),
        (
            vec![1, 5, 1, 4, 3],
            None,
            Some(vec![ALL, s(Some(-1), n, 1), ALL]),
        ),
        (
            vec![1, 5, 4, 3],
            None,
            Some(vec![
                ALL,
                s(Some(-1), n, 1),
                s(n, Some(1), 1),
                s(Some(1), Some(2), 1),
            ]),
        ),
        (
            vec![7, 5, 3],
            Some(&[2, 0, 1]),
            Some(vec![s(n, n, -1), s(Some(3), Some(2), -1), ALL]),
        ),
        (
            vec![7, 5, 3],
            Some(&[2, 0, 1]),
            Some(vec![ALL, s(Some(3), Some(2), 1), ALL]),
        ),
        (long_shape(64, 64, 1), None, None),
        (long_shape(33, 3, 3), None, None),
    ];
    let mut k = 0;
    for (shape, perm, slices) in cases {
        for order in ORDERS {
            let itemsize = ITEMSIZES[k % 5];
            k += 1;
            let (mut l, mut r) = setup(&shape, itemsize, order);
            if let Some(p) = perm {
                l = l.permuted(&as_i64(p)).unwrap();
                r = r.transpose(p);
            }
            if let Some(sl) = &slices {
                l = l.sliced(sl).unwrap();
                r = r.slice(sl);
            }
            check(&l, &r, volume(&shape), itemsize);
            let sq = l.squeezed();
            if r.vals.is_empty() {
                assert_eq!((sq.shape(), sq.strides()), (&[0i64][..], &[0i64][..]));
            } else {
                check(&sq, &r.squeeze(), volume(&shape), itemsize);
            }
            assert_eq!(sq.slice_offset(), l.slice_offset());
        }
    }
}

/// `unsqueezed(axes)` for every combination of up to two new axes, against
/// NumPy's `expand_dims`.
#[test]
fn test_unsqueezed_layout() {
    let n = None;
    let cases: Vec<(Vec<i64>, Option<Vec<AxisSlice>>)> = vec![
        (vec![], None),
        (vec![7], None),
        (
            vec![4, 5, 7, 11],
            Some(vec![
                s(Some(1), Some(-1), 1),
                s(n, n, -1),
                s(Some(2), Some(-1), 1),
                s(n, n, 3),
            ]),
        ),
    ];
    let mut k = 0;
    for (shape, slices) in cases {
        for order in ORDERS {
            for num in 0..3usize {
                let out = shape.len() + num;
                // itertools.combinations(range(out), num)
                let combos: Vec<Vec<i64>> = (0u64..1 << out)
                    .filter(|m| m.count_ones() as usize == num)
                    .map(|m| (0..out as i64).filter(|&i| m & (1 << i) != 0).collect())
                    .collect();
                for axes in combos {
                    let itemsize = ITEMSIZES[k % 5];
                    k += 1;
                    let (mut l, mut r) = setup(&shape, itemsize, order);
                    if let Some(sl) = &slices {
                        l = l.sliced(sl).unwrap();
                        r = r.slice(sl);
                    }
                    let u = l.unsqueezed(&axes).unwrap();
                    check(&u, &r.expand_dims(&axes), volume(&shape), itemsize);
                }
            }
        }
    }
}

/// `max_compatible_itemsize(axis)` and `repacked(new_itemsize, axis)` as
/// NumPy's `view(dtype)` along the stride-1 axis, and back.
#[test]
fn test_packed_unpacked() {
    let n = None;
    let mut long_c = vec![1, 3];
    long_c.extend(vec![1; 61]);
    long_c.push(4);
    let mut long_f = vec![4, 3];
    long_f.extend(vec![1; 61]);
    long_f.push(3);
    type Case<'a> = (
        Vec<i64>,
        Option<&'a [usize]>,
        Option<Vec<AxisSlice>>,
        Order,
        usize,
        i64,
        usize,
        usize,
    );
    use Order::{C, F, Implicit};
    let last = vec![ALL, ALL, s(Some(-1), n, 1)];
    let cases: Vec<Case<'_>> = vec![
        (vec![12], None, None, C, 1, -1, 4, 1),
        (vec![12], None, None, Implicit, 1, -1, 4, 1),
        (vec![12], None, None, F, 1, 0, 4, 1),
        (vec![12], None, None, C, 4, -1, 16, 8),
        (vec![12], None, None, Implicit, 4, -1, 16, 8),
        (vec![12], None, None, F, 4, 0, 16, 8),
        (vec![16, 5, 4, 6], None, None, C, 2, -1, 4, 4),
        (vec![16, 5, 4, 6], None, None, Implicit, 2, -1, 4, 4),
        (vec![16, 5, 4, 6], None, None, F, 2, 0, 16, 4),
        (vec![11, 5, 9], None, Some(last.clone()), C, 2, 2, 2, 2),
        (
            vec![11, 5, 9],
            None,
            Some(last.clone()),
            Implicit,
            2,
            2,
            2,
            2,
        ),
        (vec![11, 5, 9], None, Some(last.clone()), F, 2, 0, 2, 2),
        (
            vec![12, 3, 24],
            Some(&[1, 2, 0]),
            Some(vec![s(n, n, -1), s(Some(20), n, 1), s(Some(1), n, 1)]),
            C,
            2,
            1,
            8,
            8,
        ),
        (
            vec![12, 3, 24],
            Some(&[1, 2, 0]),
            Some(vec![s(Some(1), n, 1), s(n, n, -1), s(Some(10), n, 1)]),
            F,
            2,
            2,
            4,
            4,
        ),
        (long_c.clone(), None, None, C, 2, -1, 8, 8),
        (long_c.clone(), None, None, Implicit, 2, -1, 8, 4),
        (long_f.clone(), None, None, F, 2, 0, 8, 4),
    ];
    for (shape, perm, slices, order, itemsize, axis, max, new) in cases {
        let (mut l, mut r) = setup(&shape, itemsize, order);
        if let Some(p) = perm {
            l = l.permuted(&as_i64(p)).unwrap();
            r = r.transpose(p);
        }
        if let Some(sl) = &slices {
            l = l.sliced(sl).unwrap();
            r = r.slice(sl);
        }
        check(&l, &r, volume(&shape), itemsize);
        assert_eq!(
            l.max_compatible_itemsize(16, axis).unwrap(),
            max,
            "{shape:?}"
        );
        let packed = l.repacked(new, axis).unwrap();
        // The reference: every `v`-th offset along the axis, in units of `new`.
        let v = (new / itemsize) as i64;
        let ax = if axis < 0 {
            axis + shape.len() as i64
        } else {
            axis
        } as usize;
        let mut pshape = r.shape.clone();
        pshape[ax] /= v;
        let vals = all_indices(&pshape)
            .map(|mut idx| {
                idx[ax] *= v;
                let o = r.at(&idx);
                assert_eq!(o % v, 0);
                o / v
            })
            .collect();
        let pr = Ref {
            shape: pshape,
            vals,
        };
        check(&packed, &pr, volume(&shape) / v, new);
        assert_eq!(packed.slice_offset() * v, l.slice_offset());
        let unpacked = packed.repacked(itemsize, axis).unwrap();
        check(&unpacked, &r, volume(&shape), itemsize);
    }
}

/// `broadcast_to(new_shape)` against NumPy's `broadcast_to`; unique only
/// where nothing repeats.
#[test]
fn test_broadcast_layout() {
    let n = None;
    let mut big = vec![401, 3];
    big.extend(vec![1; 59]);
    big.extend([2, 4, 3]);
    type Case = (Vec<i64>, Option<Vec<AxisSlice>>, Vec<i64>);
    let a = vec![s(Some(1), Some(-1), 1), s(n, n, -1)];
    let b = vec![s(n, n, -1), s(Some(3), Some(4), 1)];
    let cases: Vec<Case> = vec![
        (vec![], None, vec![]),
        (vec![], None, vec![1]),
        (vec![], None, vec![17, 1, 5]),
        (vec![1], None, vec![5]),
        (vec![1], None, vec![3, 5, 2]),
        (vec![7], None, vec![7]),
        (vec![7], None, vec![2, 7]),
        (vec![5, 11], Some(a.clone()), vec![3, 11]),
        (vec![5, 11], Some(a.clone()), vec![7, 3, 11]),
        (vec![5, 11], Some(b.clone()), vec![5, 7]),
        (vec![5, 11], Some(b.clone()), vec![5, 30]),
        (vec![5, 11], Some(b.clone()), vec![4, 5, 12]),
        (vec![5, 11], Some(vec![s(Some(-1), n, 1)]), vec![4, 13, 11]),
        (vec![2, 3, 3], Some(vec![ALL, s(Some(1), Some(2), 1)]), big),
    ];
    let mut k = 0;
    for (shape, slices, new_shape) in cases {
        for order in ORDERS {
            let itemsize = ITEMSIZES[k % 5];
            k += 1;
            let (mut l, mut r) = setup(&shape, itemsize, order);
            if let Some(sl) = &slices {
                l = l.sliced(sl).unwrap();
                r = r.slice(sl);
            }
            let bc = l.broadcast_to(&new_shape).unwrap();
            let br = r.broadcast_to(&new_shape);
            check(&bc, &br, volume(&shape), itemsize);
            assert!(l.is_unique());
            let diff = new_shape.len() - r.shape.len();
            let expect_unique = new_shape[..diff].iter().all(|&e| e == 1)
                && (0..r.shape.len()).all(|i| new_shape[i + diff] == r.shape[i]);
            assert_eq!(bc.is_unique(), expect_unique, "{shape:?} -> {new_shape:?}");
        }
    }
}

/// `to_dense('C' | 'F' | 'K' | permutation)` against NumPy's `copy(order=)`:
/// dense, of the layout's shape, filling `[0, volume)`.
#[test]
fn test_to_dense() {
    let n = None;
    type Case<'a> = (&'a [i64], Option<&'a [usize]>, Option<Vec<AxisSlice>>);
    let cases: Vec<Case<'_>> = vec![
        (&[], None, None),
        (&[1], None, None),
        (&[7], None, None),
        (&[7], None, Some(vec![s(Some(3), Some(6), 1)])),
        (&[7], None, Some(vec![s(n, n, -1)])),
        (&[5, 11], None, None),
        (&[5, 11], None, Some(vec![s(Some(1), Some(-1), 1)])),
        (
            &[5, 11],
            None,
            Some(vec![s(n, n, -1), s(Some(3), Some(10), 1)]),
        ),
        (
            &[5, 11],
            None,
            Some(vec![s(Some(1), Some(4), 1), s(n, n, -1)]),
        ),
        (&[5, 11], None, Some(vec![s(Some(-1), n, 1)])),
        (&[3, 5, 7], Some(&[1, 0, 2]), None),
    ];
    let mut k = 0;
    for (shape, perm, slices) in cases {
        for order in ORDERS {
            let mut new_orders = vec![StrideOrder::C, StrideOrder::F, StrideOrder::Keep];
            new_orders.extend(
                some_permutations(shape.len())
                    .into_iter()
                    .map(StrideOrder::Axes),
            );
            for new_order in new_orders {
                let itemsize = ITEMSIZES[k % 5];
                k += 1;
                let (mut l, mut r) = setup(shape, itemsize, order);
                if let Some(p) = perm {
                    l = l.permuted(&as_i64(p)).unwrap();
                    r = r.transpose(p);
                }
                if let Some(sl) = &slices {
                    l = l.sliced(sl).unwrap();
                    r = r.slice(sl);
                }
                let dense = l.to_dense(&new_order).unwrap();
                let axes = match &new_order {
                    StrideOrder::C => (0..r.shape.len()).collect(),
                    StrideOrder::F => (0..r.shape.len()).rev().collect(),
                    StrideOrder::Keep => l.stride_order(),
                    StrideOrder::Axes(a) => a.clone(),
                };
                // NumPy's copy in that order: a fresh arange in the order.
                let dr = Ref::dense(&r.shape, &axes);
                check(&dense, &dr, volume(&r.shape).max(1), itemsize);
                assert!(dense.is_dense());
                let vol = volume(&r.shape);
                assert_eq!(
                    dense.required_size_in_bytes().unwrap(),
                    (vol * itemsize as i64) as u64
                );
                assert_eq!(dense.offset_bounds(), (0, vol - 1));
            }
        }
    }
}

/// Equality is by value: two dense `(5, 3, 7)` layouts are equal, one of
/// `(5, 3, 8)` is not.
#[test]
fn test_eq_reflexive_and_value_equality() {
    let a = StridedLayout::dense(&[5, 3, 7], 4, &StrideOrder::C).unwrap();
    let b = StridedLayout::dense(&[5, 3, 7], 4, &StrideOrder::C).unwrap();
    let c = StridedLayout::dense(&[5, 3, 8], 4, &StrideOrder::C).unwrap();
    #[allow(clippy::eq_op)]
    {
        assert!(a == a);
    }
    assert_eq!(a, b);
    assert_ne!(a, c);
}
