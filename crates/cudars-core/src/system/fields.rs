//! Field values: many device counters read in one NVML call
//! (`nvmlDeviceGetFieldValues`), each typed and each with its own error.

use std::ffi::c_int;

use cudars_bindings::IntoResult as _;
use cudars_bindings::nvml::*;

use crate::error::{Error, Result};
use crate::system::device::SystemDevice;
use crate::system::nvml::NvmlCheck as _;

/// A field to read: one of NVML's `NVML_FI_*` ids
/// (`cudars_bindings::nvml::NVML_FI_DEV_POWER_INSTANT`, …) and, for fields kept
/// per link or per GPU instance, the scope (the NVLink number, …); 0 otherwise.
/// A `u32` converts into an unscoped field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldId {
    /// The `NVML_FI_*` id.
    pub id: u32,
    /// The scope (an NVLink number, …); 0 for device-wide fields.
    pub scope: u32,
}

impl FieldId {
    /// A device-wide field.
    pub const fn new(id: u32) -> Self {
        Self { id, scope: 0 }
    }

    /// A field of one scope (an NVLink, …).
    pub const fn scoped(id: u32, scope: u32) -> Self {
        Self { id, scope }
    }
}

impl From<u32> for FieldId {
    fn from(id: u32) -> Self {
        Self::new(id)
    }
}

/// A field's value, in the type NVML reported it in.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum FieldValue {
    /// A `double`.
    F64(f64),
    /// An `unsigned int`.
    U32(u32),
    /// An `unsigned long` or `unsigned long long`.
    U64(u64),
    /// A `signed long long`.
    I64(i64),
    /// A `signed int`.
    I32(i32),
    /// An `unsigned short`.
    U16(u16),
}

impl FieldValue {
    /// The value as an `f64` (exact for every integer up to 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Self::F64(v) => v,
            Self::U32(v) => f64::from(v),
            Self::U64(v) => v as f64,
            Self::I64(v) => v as f64,
            Self::I32(v) => f64::from(v),
            Self::U16(v) => f64::from(v),
        }
    }

    /// The value as an `i128`, when it is an integer.
    pub fn as_integer(self) -> Option<i128> {
        match self {
            Self::F64(_) => None,
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => Some(v.into()),
            Self::I64(v) => Some(v.into()),
            Self::I32(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
        }
    }
}

/// One field read by [`SystemDevice::field_values`] (`FieldValue` in Python).
#[derive(Debug)]
#[non_exhaustive]
pub struct FieldSample {
    /// The field asked for.
    pub field: FieldId,
    /// When NVML sampled it, in microseconds since 1970.
    pub timestamp_us: i64,
    /// How long NVML took to update it, in microseconds.
    pub latency_us: i64,
    /// Its value, or why NVML could not read this field
    /// ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) for a field the
    /// device does not have).
    pub value: Result<FieldValue>,
}

/// The sample NVML wrote into `raw`, on device `device` (for error contexts).
fn decode(raw: &nvmlFieldValue_t, device: &SystemDevice) -> FieldSample {
    let field = FieldId::scoped(raw.fieldId, raw.scopeId);
    let ctx = || {
        device.ctx(
            &format!("reading field {} (scope {})", raw.fieldId, raw.scopeId),
            "nvmlDeviceGetFieldValues",
        )
    };
    let value = match raw.nvmlReturn.result() {
        Err(e) => Err(Error::nvml(ctx(), e)),
        // SAFETY: NVML wrote the union member `valueType` names.
        Ok(()) => unsafe {
            let v = &raw.value;
            match raw.valueType {
                NVML_VALUE_TYPE_DOUBLE => Ok(FieldValue::F64(v.dVal)),
                NVML_VALUE_TYPE_UNSIGNED_INT => Ok(FieldValue::U32(v.uiVal)),
                NVML_VALUE_TYPE_UNSIGNED_LONG => {
                    // `c_ulong` is 64 bits on Linux, 32 on Windows.
                    #[allow(clippy::useless_conversion)]
                    let v = u64::from(v.ulVal);
                    Ok(FieldValue::U64(v))
                }
                NVML_VALUE_TYPE_UNSIGNED_LONG_LONG => Ok(FieldValue::U64(v.ullVal)),
                NVML_VALUE_TYPE_SIGNED_LONG_LONG => Ok(FieldValue::I64(v.sllVal)),
                NVML_VALUE_TYPE_SIGNED_INT => Ok(FieldValue::I32(v.siVal)),
                NVML_VALUE_TYPE_UNSIGNED_SHORT => Ok(FieldValue::U16(v.usVal)),
                other => Err(Error::unsupported(
                    ctx(),
                    format!(
                        "NVML returned a value of a type this crate does not know ({})",
                        other.0
                    ),
                )),
            }
        },
    };
    FieldSample {
        field,
        timestamp_us: raw.timestamp,
        latency_us: raw.latencyUsec,
        value,
    }
}

/// NVML's request array for `fields`, or an argument error when there are more
/// than a `c_int` counts.
fn requests(fields: &[FieldId], context: &str) -> Result<(Vec<nvmlFieldValue_t>, c_int)> {
    let n = c_int::try_from(fields.len()).map_err(|_| {
        Error::out_of_range(
            context.to_owned(),
            format!("{} fields are more than NVML takes at once", fields.len()),
        )
    })?;
    let raw = fields
        .iter()
        .map(|f| nvmlFieldValue_t {
            fieldId: f.id,
            scopeId: f.scope,
            ..Default::default()
        })
        .collect();
    Ok((raw, n))
}

impl SystemDevice {
    /// Reads `fields` in one call (`nvmlDeviceGetFieldValues`;
    /// `get_field_values` in Python): one [`FieldSample`] per field, in order,
    /// each with its own value or error. To fail on the first field that could
    /// not be read (Python's `FieldValues.validate`), collect the values:
    ///
    /// ```no_run
    /// use cudars_core::cudars_bindings::nvml::{NVML_FI_DEV_MEMORY_TEMP, NVML_FI_DEV_POWER_INSTANT};
    /// use cudars_core::system::{FieldId, FieldValue, SystemDevice};
    ///
    /// let dev = SystemDevice::new(0)?;
    /// let fields = [FieldId::new(NVML_FI_DEV_POWER_INSTANT), NVML_FI_DEV_MEMORY_TEMP.into()];
    /// let values: Vec<FieldValue> = dev
    ///     .field_values(&fields)?
    ///     .into_iter()
    ///     .map(|s| s.value)
    ///     .collect::<Result<_, _>>()?;
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// NVML's error for the call as a whole; [`Error::InvalidArgument`] for more
    /// fields than a `c_int` counts. Errors of single fields are in their
    /// samples.
    pub fn field_values(&self, fields: &[FieldId]) -> Result<Vec<FieldSample>> {
        if fields.is_empty() {
            return Ok(Vec::new());
        }
        let what = "reading field values";
        let (mut raw, n) = requests(fields, what)?;
        // SAFETY: the handle is valid (see the type's docs); `raw` holds `n`
        // requests, each with its field and scope set.
        unsafe { nvmlDeviceGetFieldValues(self.handle, n, raw.as_mut_ptr()) }
            .check(|| self.ctx(what, "nvmlDeviceGetFieldValues"))?;
        Ok(raw.iter().map(|r| decode(r, self)).collect())
    }

    /// Resets `fields` to 0 where NVML can (`nvmlDeviceClearFieldValues`;
    /// `clear_field_values` in Python): counters such as NVLink error counts.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind) without
    /// root); [`Error::InvalidArgument`] for more fields than a `c_int` counts.
    pub fn clear_field_values(&self, fields: &[FieldId]) -> Result<()> {
        if fields.is_empty() {
            return Ok(());
        }
        let what = "clearing field values";
        let (mut raw, n) = requests(fields, what)?;
        // SAFETY: the handle is valid (see the type's docs); `raw` holds `n`
        // requests, each with its field and scope set.
        unsafe { nvmlDeviceClearFieldValues(self.handle, n, raw.as_mut_ptr()) }
            .check(|| self.ctx(what, "nvmlDeviceClearFieldValues"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> SystemDevice {
        SystemDevice {
            handle: std::ptr::null_mut(),
            index: 3,
            mig: None,
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "loads NVML (dlopen), which Miri cannot run")]
    fn samples_decode_by_value_type_and_keep_their_errors() {
        let mut raw = nvmlFieldValue_t {
            fieldId: NVML_FI_DEV_POWER_INSTANT,
            scopeId: 2,
            timestamp: 1_700_000_000_000_000,
            latencyUsec: 12,
            valueType: NVML_VALUE_TYPE_UNSIGNED_INT,
            ..Default::default()
        };
        raw.value.uiVal = 250_000;
        let s = decode(&raw, &device());
        assert_eq!(s.field, FieldId::scoped(NVML_FI_DEV_POWER_INSTANT, 2));
        assert_eq!((s.timestamp_us, s.latency_us), (1_700_000_000_000_000, 12));
        assert_eq!(s.value.unwrap(), FieldValue::U32(250_000));

        raw.valueType = NVML_VALUE_TYPE_DOUBLE;
        raw.value.dVal = 1.5;
        assert_eq!(decode(&raw, &device()).value.unwrap(), FieldValue::F64(1.5));
        raw.valueType = NVML_VALUE_TYPE_SIGNED_LONG_LONG;
        raw.value.sllVal = -7;
        let v = decode(&raw, &device()).value.unwrap();
        assert_eq!(
            (v, v.as_integer(), v.as_f64()),
            (FieldValue::I64(-7), Some(-7), -7.0)
        );

        // A field the device does not have: NVML's error, typed.
        raw.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        let e = decode(&raw, &device()).value.unwrap_err();
        assert_eq!(
            e.nvml_kind(),
            Some(crate::error::NvmlErrorKind::NotSupported)
        );
        assert!(e.to_string().contains("of NVML device 3"), "{e}");

        // A value type this crate does not know is an error, not a guess.
        raw.nvmlReturn = NVML_SUCCESS;
        raw.valueType = nvmlValueType_t(42);
        assert!(matches!(
            decode(&raw, &device()).value,
            Err(Error::Unsupported { .. })
        ));
    }

    #[test]
    fn requests_carry_ids_and_scopes() {
        let (raw, n) = requests(&[FieldId::new(5), FieldId::scoped(9, 1)], "t").unwrap();
        assert_eq!(n, 2);
        assert_eq!((raw[0].fieldId, raw[0].scopeId), (5, 0));
        assert_eq!((raw[1].fieldId, raw[1].scopeId), (9, 1));
        assert_eq!(FieldId::from(7), FieldId::new(7));
    }
}
