//! [`Text`]: a string held once however often a message is cloned.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The text of a message part, shared rather than copied: cloning a message (for its events,
/// the transcript and the run's result) costs a reference count, not the text again, so a long
/// answer is held about once. Reads as a `&str` (it derefs to one) and (de)serializes as a
/// JSON string.
///
/// ```
/// use golato::message::Text;
///
/// let text = Text::from("Pro plan");
/// let copy = text.clone();
/// assert_eq!(copy, "Pro plan");
/// assert!(copy.starts_with("Pro"));
/// assert_eq!(serde_json::to_string(&text)?, r#""Pro plan""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Text(Arc<str>);

impl Text {
    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        Text(Arc::from(text))
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        Text(Arc::from(text))
    }
}

impl From<&String> for Text {
    fn from(text: &String) -> Self {
        Text(Arc::from(text.as_str()))
    }
}

impl From<Text> for String {
    fn from(text: Text) -> Self {
        String::from(&*text.0)
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        &*self.0 == other.as_str()
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Text::from)
    }
}
