//! Fitting an image into what a model accepts: at most 2000×2000 pixels and 4 MiB of base64.

use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};

/// Largest width or height sent to a model.
pub(super) const MAX_DIMENSION: u32 = 2_000;
/// Largest base64 payload sent to a model (4 MiB).
pub(super) const MAX_BASE64_BYTES: usize = 4 * 1024 * 1024;
/// Largest image file read at all; larger ones are omitted without being read.
pub(super) const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// An image ready to send, or why none could be.
#[derive(Debug)]
pub(super) enum Fitted {
    /// The image as it is.
    Original {
        mime_type: &'static str,
        data: String,
    },
    /// Re-encoded (and possibly resized) to fit.
    Reduced {
        mime_type: &'static str,
        data: String,
        original: (u32, u32),
        displayed: (u32, u32),
    },
    /// Even reduced, nothing fits.
    Omitted { reason: String },
    /// Not decoded: the bytes do not decode, or the header claims more pixels than are ever
    /// decoded (a decompression bomb). Either way they may be text that starts like an image.
    NotDecoded { reason: String },
}

fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Most pixels decoded: 8,000 × 6,000, a large photo. A decompression bomb (a small file that
/// claims 30,000 × 30,000) is refused from its header, before anything is decoded.
pub(super) const MAX_PIXELS: u64 = 48_000_000;

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(50_000);
    limits.max_image_height = Some(50_000);
    // Four bytes a pixel at the most pixels taken, and room for one resized copy.
    limits.max_alloc = Some(MAX_PIXELS * 4 + 64 * 1024 * 1024);
    limits
}

/// Fits `bytes`, an image of type `mime_type`, within the limits. A decode first reserves what
/// it will hold from the process's [`decode_budget`](super::decode_budget), waiting for other
/// decodes to finish if need be (or for `cancelled`).
pub(super) fn fit(bytes: &[u8], mime_type: &'static str, cancelled: &dyn Fn() -> bool) -> Fitted {
    let reader = || {
        let mut reader = ImageReader::new(Cursor::new(bytes));
        reader.limits(limits());
        reader.with_guessed_format()
    };
    let dimensions =
        match reader().and_then(|reader| reader.into_dimensions().map_err(std::io::Error::other)) {
            Ok(dimensions) => dimensions,
            Err(error) => {
                return Fitted::NotDecoded {
                    reason: format!("it could not be decoded ({error})"),
                }
            }
        };
    let (width, height) = dimensions;
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Fitted::NotDecoded {
            reason: format!(
                "it is {width}x{height} pixels, too large to decode (at most {} million pixels)",
                MAX_PIXELS / 1_000_000
            ),
        };
    }
    if width <= MAX_DIMENSION
        && height <= MAX_DIMENSION
        && base64_len(bytes.len()) <= MAX_BASE64_BYTES
    {
        return Fitted::Original {
            mime_type,
            data: encode(bytes),
        };
    }
    let cost = super::decode_budget::decode_cost(width, height, MAX_DIMENSION);
    let Some(_reserved) = super::decode_budget::DECODES.reserve(cost, cancelled) else {
        return Fitted::Omitted {
            reason: "the call was cancelled while it waited for other images to be decoded"
                .to_owned(),
        };
    };
    let image = match reader()
        .map_err(image::ImageError::IoError)
        .and_then(ImageReader::decode)
    {
        Ok(image) => image,
        Err(error) => {
            return Fitted::NotDecoded {
                reason: format!("it could not be decoded ({error})"),
            }
        }
    };
    let scale = f64::min(1.0, f64::from(MAX_DIMENSION) / f64::from(width.max(height)));
    for shrink in [1.0, 0.75, 0.5, 0.35, 0.25] {
        let target_width = ((f64::from(width) * scale * shrink).round() as u32).max(1);
        let target_height = ((f64::from(height) * scale * shrink).round() as u32).max(1);
        let resized = if (target_width, target_height) == (width, height) {
            image.clone()
        } else {
            image.resize(
                target_width,
                target_height,
                image::imageops::FilterType::Triangle,
            )
        };
        if let Some((mime_type, data)) = smallest_fitting(&resized) {
            return Fitted::Reduced {
                mime_type,
                data,
                original: (width, height),
                displayed: (resized.width(), resized.height()),
            };
        }
    }
    Fitted::Omitted {
        reason: format!(
            "even at a quarter of {MAX_DIMENSION} pixels it is over the 4MB base64 limit"
        ),
    }
}

/// PNG if it fits, else JPEG at falling quality.
fn smallest_fitting(image: &DynamicImage) -> Option<(&'static str, String)> {
    let mut png = Vec::new();
    if image
        .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
        .is_ok()
        && base64_len(png.len()) <= MAX_BASE64_BYTES
    {
        return Some(("image/png", encode(&png)));
    }
    let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
    for quality in [85, 70, 55, 40] {
        let mut jpeg = Vec::new();
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, quality);
        if rgb.write_with_encoder(encoder).is_ok() && base64_len(jpeg.len()) <= MAX_BASE64_BYTES {
            return Some(("image/jpeg", encode(&jpeg)));
        }
    }
    None
}
