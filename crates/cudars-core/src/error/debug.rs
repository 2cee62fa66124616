//! `{:?}` of an [`Error`]: the report, as `anyhow` lays it out (what
//! `fn main() -> Result<(), Error>` prints); `{:#?}`: the variant and its fields.

use super::Error;

impl std::fmt::Debug for Error {
    /// `{:?}`: the report (the error, then each cause under "Caused by:"), as
    /// `anyhow` prints one, which is what `fn main() -> Result<(), Error>`
    /// shows; `{:#?}`: the variant and its fields.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !f.alternate() {
            return write_chain(self, f);
        }
        match self {
            Self::Driver { context, source } => f
                .debug_struct("Driver")
                .field("context", context)
                .field("source", source)
                .finish(),
            Self::Unavailable { context, reason } => f
                .debug_struct("Unavailable")
                .field("context", context)
                .field("reason", reason)
                .finish(),
            Self::InvalidArgument {
                context,
                kind,
                message,
            } => f
                .debug_struct("InvalidArgument")
                .field("context", context)
                .field("kind", kind)
                .field("message", message)
                .finish(),
            Self::Compile {
                context,
                log,
                source,
            } => f
                .debug_struct("Compile")
                .field("context", context)
                .field("log", log)
                .field("source", source)
                .finish(),
            Self::Tool { context, source } => f
                .debug_struct("Tool")
                .field("context", context)
                .field("source", source)
                .finish(),
            #[cfg(feature = "nvml")]
            Self::Nvml { context, source } => f
                .debug_struct("Nvml")
                .field("context", context)
                .field("source", source)
                .finish(),
            Self::Io { context, source } => f
                .debug_struct("Io")
                .field("context", context)
                .field("source", source)
                .finish(),
            Self::Pathfinder { context, source } => f
                .debug_struct("Pathfinder")
                .field("context", context)
                .field("source", source)
                .finish(),
            Self::Unsupported {
                context,
                message,
                requires,
            } => f
                .debug_struct("Unsupported")
                .field("context", context)
                .field("message", message)
                .field("requires", requires)
                .finish(),
            Self::HostCallbackPanicked { context, panic } => f
                .debug_struct("HostCallbackPanicked")
                .field("context", context)
                .field("panic", panic)
                .finish(),
        }
    }
}

/// Writes `error` and its causes as `anyhow` reports them: the error, then,
/// if it has causes, a blank line, `Caused by:` and each cause on a line of its
/// own (numbered when there are several), a cause of several lines indented
/// under its first.
fn write_chain(
    error: &(dyn std::error::Error + 'static),
    f: &mut std::fmt::Formatter<'_>,
) -> std::fmt::Result {
    write!(f, "{error}")?;
    let causes: Vec<&(dyn std::error::Error + 'static)> =
        std::iter::successors(error.source(), |e| e.source()).collect();
    if causes.is_empty() {
        return Ok(());
    }
    f.write_str("\n\nCaused by:")?;
    let numbered = causes.len() > 1;
    for (i, cause) in causes.iter().enumerate() {
        let text = cause.to_string();
        let indent = if numbered {
            write!(f, "\n{i:>5}: ")?;
            "\n       "
        } else {
            f.write_str("\n    ")?;
            "\n    "
        };
        let mut lines = text.lines();
        f.write_str(lines.next().unwrap_or(""))?;
        for line in lines {
            f.write_str(indent)?;
            f.write_str(line)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a chain of causes, as `std::io::Error`s can carry.
    #[derive(Debug)]
    struct Level(&'static str, Option<Box<Level>>);

    impl std::fmt::Display for Level {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Level {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1
                .as_deref()
                .map(|l| l as &(dyn std::error::Error + 'static))
        }
    }

    fn io(chain: Level) -> Error {
        Error::Io {
            context: "reading `k.cubin`".into(),
            source: std::io::Error::other(chain),
        }
    }

    #[test]
    fn debug_prints_the_report_and_alternate_debug_the_fields() {
        // One cause: on its own line, unnumbered.
        let one = io(Level("disk on fire", None));
        assert_eq!(one.to_string(), "reading `k.cubin`");
        assert_eq!(
            format!("{one:?}"),
            "reading `k.cubin`\n\nCaused by:\n    disk on fire"
        );
        // Several: numbered, a cause of several lines indented under its first.
        let deep = io(Level(
            "outer",
            Some(Box::new(Level("inner\nsecond line", None))),
        ));
        assert_eq!(
            format!("{deep:?}"),
            "reading `k.cubin`\n\nCaused by:\n    0: outer\n    1: inner\n       second line"
        );
        // No cause: the message alone.
        let bare = Error::invalid("launching `k`", "the grid is empty");
        assert_eq!(format!("{bare:?}"), "launching `k`: the grid is empty");
        // `{:#?}`: the variant and its fields, for matching by eye.
        let fields = format!("{bare:#?}");
        assert!(fields.starts_with("InvalidArgument {"), "{fields}");
        assert!(fields.contains("kind: Other"), "{fields}");
        // What `fn main() -> Result<(), Error>` prints is the `{:?}`.
        assert!(format!("Error: {one:?}").contains("Caused by:"));
    }
}
