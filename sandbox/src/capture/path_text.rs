//! Paths in JSON without loss: a path that is UTF-8 is a string (as before), any other is
//! `{"bytes": [...]}`, its raw bytes. A file a command names in another encoding is recorded,
//! kept and undone like any other, never a panic at serialization.
//!
//! ```
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Named(#[serde(with = "golato_sandbox::capture::path_text")] std::path::PathBuf);
//! use std::os::unix::ffi::OsStrExt as _;
//! let odd = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(b"/w/caf\xe9"));
//! let json = serde_json::to_string(&Named(odd.clone())).unwrap();
//! assert_eq!(json, r#"{"bytes":[47,119,47,99,97,102,233]}"#);
//! assert_eq!(serde_json::from_str::<Named>(&json).unwrap().0, odd);
//! assert_eq!(serde_json::to_string(&Named("/w/a".into())).unwrap(), r#""/w/a""#);
//! ```

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Text<'a> {
    Plain(std::borrow::Cow<'a, str>),
    Bytes { bytes: Vec<u8> },
}

impl Text<'_> {
    fn of(path: &Path) -> Text<'_> {
        match path.to_str() {
            Some(text) => Text::Plain(text.into()),
            None => Text::Bytes {
                bytes: path.as_os_str().as_bytes().to_vec(),
            },
        }
    }

    fn path(self) -> PathBuf {
        match self {
            Text::Plain(text) => PathBuf::from(text.into_owned()),
            Text::Bytes { bytes } => PathBuf::from(OsString::from_vec(bytes)),
        }
    }
}

/// Writes `path`.
pub fn serialize<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    Text::of(path).serialize(serializer)
}

/// Reads a path either way it may be written.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<PathBuf, D::Error> {
    Text::deserialize(deserializer).map(Text::path)
}

/// The same for an `Option<PathBuf>`.
pub mod optional {
    use super::*;

    /// Writes `path` (`null` for none).
    pub fn serialize<S: Serializer>(
        path: &Option<PathBuf>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        path.as_deref().map(Text::of).serialize(serializer)
    }

    /// Reads it back.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<PathBuf>, D::Error> {
        Ok(Option::<Text<'static>>::deserialize(deserializer)?.map(Text::path))
    }
}

/// The same for a `Vec<PathBuf>`.
pub mod many {
    use super::*;

    /// Writes `paths`.
    pub fn serialize<S: Serializer>(paths: &[PathBuf], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(paths.iter().map(|path| Text::of(path)))
    }

    /// Reads them back.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<PathBuf>, D::Error> {
        Ok(Vec::<Text<'static>>::deserialize(deserializer)?
            .into_iter()
            .map(Text::path)
            .collect())
    }
}
