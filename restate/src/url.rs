//! URLs of a Restate server's APIs: segments joined on a base.

/// `base` with `segments` appended to its path (an empty last segment dropped first).
pub(crate) fn with_segments(base: &reqwest::Url, segments: &[&str]) -> reqwest::Url {
    let mut url = base.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
    url
}
