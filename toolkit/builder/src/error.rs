//! The builder's one error type.

use std::fmt;

/// A builder failure, with what to do about it.
#[derive(Debug)]
pub struct BuildError {
    /// What failed.
    pub step: String,
    /// Output of the failing tool or the reason.
    pub detail: String,
    /// What to do.
    pub hint: String,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.step, self.detail.trim())?;
        if !self.hint.is_empty() {
            write!(f, "\nhint: {}", self.hint)?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildError {}

/// A [`BuildError`] from its three parts.
pub(crate) fn err(
    step: impl Into<String>,
    detail: impl Into<String>,
    hint: impl Into<String>,
) -> BuildError {
    BuildError {
        step: step.into(),
        detail: detail.into(),
        hint: hint.into(),
    }
}
