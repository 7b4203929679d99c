//! `--compare`: the same page in two crawls, how much of its picture and its text changed.
//!
//! The thumbnails are decoded (the `png` crate) to RGBA and compared at the same size: when
//! they differ in size, both are sampled (nearest pixel) at the smaller width and height. A
//! pixel differs when one channel differs by more than [`TOLERANCE`], so the few levels
//! a resampled anti-aliased edge moves by do not count as change.

use super::browse::Replayed;
use crate::commands::diff::{diff_lines, Op};

/// Largest difference of one channel (0..=255) that still counts as the same pixel.
const TOLERANCE: u8 = 16;

/// One page of both crawls.
#[derive(Debug, Clone)]
pub(super) struct Pair {
    pub(super) url: String,
    /// Share of pixels that differ (0..=1); 1 when either thumbnail is missing.
    pub(super) pixel_diff: f64,
    /// Lines of text added or removed between the two.
    pub(super) text_diff: usize,
    pub(super) this: Replayed,
    pub(super) other: Replayed,
}

/// A decoded image: width, height and RGBA pixels.
struct Rgba {
    width: usize,
    height: usize,
    pixels: Vec<u8>,
}

/// Pairs the pages replayed in both crawls, most changed first (pixels, then text).
pub(super) fn pair(this: &[Replayed], other: &[Replayed]) -> Vec<Pair> {
    let mut pairs: Vec<Pair> = this
        .iter()
        .filter_map(|a| {
            let b = other.iter().find(|b| b.url == a.url)?;
            Some(Pair {
                url: a.url.clone(),
                pixel_diff: pixel_diff(a.thumbnail.as_deref(), b.thumbnail.as_deref()),
                text_diff: text_diff(&a.text, &b.text),
                this: a.clone(),
                other: b.clone(),
            })
        })
        .collect();
    pairs.sort_by(|x, y| {
        y.pixel_diff
            .total_cmp(&x.pixel_diff)
            .then(y.text_diff.cmp(&x.text_diff))
            .then(x.url.cmp(&y.url))
    });
    pairs
}

/// Share of pixels that differ between two PNGs; 1 when one cannot be decoded (nothing shows
/// they are alike).
pub(super) fn pixel_diff(a: Option<&[u8]>, b: Option<&[u8]>) -> f64 {
    let (Some(a), Some(b)) = (a.and_then(decode), b.and_then(decode)) else {
        return 1.0;
    };
    let (w, h) = (a.width.min(b.width), a.height.min(b.height));
    if w == 0 || h == 0 {
        return 1.0;
    }
    let mut differ = 0usize;
    for y in 0..h {
        for x in 0..w {
            if !alike(a.at(x, y, w, h), b.at(x, y, w, h)) {
                differ += 1;
            }
        }
    }
    differ as f64 / (w * h) as f64
}

fn alike(p: &[u8], q: &[u8]) -> bool {
    p.iter().zip(q).all(|(a, b)| a.abs_diff(*b) <= TOLERANCE)
}

impl Rgba {
    /// The pixel at (x, y) of a `w`×`h` sampling of the image (nearest pixel).
    fn at(&self, x: usize, y: usize, w: usize, h: usize) -> &[u8] {
        let sx = x * self.width / w;
        let sy = y * self.height / h;
        let i = (sy * self.width + sx) * 4;
        &self.pixels[i..i + 4]
    }
}

/// A PNG as RGBA, whatever its colour type and depth; None when it does not decode.
fn decode(bytes: &[u8]) -> Option<Rgba> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    // Palettes expanded, 16-bit cut to 8: every image comes out as 8-bit samples.
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().ok()?;
    let mut buf = vec![0; reader.output_buffer_size()?];
    let info = reader.next_frame(&mut buf).ok()?;
    let (width, height) = (info.width as usize, info.height as usize);
    let samples = &buf[..info.buffer_size()];
    let pixels = match info.color_type {
        png::ColorType::Rgba => samples.to_vec(),
        png::ColorType::Rgb => samples
            .chunks_exact(3)
            .flat_map(|c| [c[0], c[1], c[2], 255])
            .collect(),
        png::ColorType::GrayscaleAlpha => samples
            .chunks_exact(2)
            .flat_map(|c| [c[0], c[0], c[0], c[1]])
            .collect(),
        png::ColorType::Grayscale => samples.iter().flat_map(|g| [*g, *g, *g, 255]).collect(),
        png::ColorType::Indexed => return None,
    };
    (pixels.len() == width * height * 4).then_some(Rgba {
        width,
        height,
        pixels,
    })
}

/// Lines added or removed between two texts.
pub(super) fn text_diff(a: &str, b: &str) -> usize {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    diff_lines(&a, &b)
        .iter()
        .filter(|op| !matches!(op, Op::Same(_)))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `w`×`h` RGB PNG whose left `red` columns are red, the rest white.
    fn png(w: u32, h: u32, red: u32) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut e = png::Encoder::new(&mut out, w, h);
            e.set_color(png::ColorType::Rgb);
            e.set_depth(png::BitDepth::Eight);
            let mut writer = e.write_header().unwrap();
            let mut data = Vec::new();
            for _ in 0..h {
                for x in 0..w {
                    data.extend(if x < red {
                        [255, 0, 0]
                    } else {
                        [255, 255, 255]
                    });
                }
            }
            writer.write_image_data(&data).unwrap();
        }
        out
    }

    #[test]
    fn the_share_of_differing_pixels_is_measured_at_one_size() {
        let white = png(40, 20, 0);
        assert_eq!(pixel_diff(Some(&white), Some(&white)), 0.0);
        let quarter = png(40, 20, 10);
        assert!((pixel_diff(Some(&white), Some(&quarter)) - 0.25).abs() < 1e-9);
        // Twice the size, half red: compared at 40×20 it is half different.
        let big_half = png(80, 40, 40);
        assert!((pixel_diff(Some(&white), Some(&big_half)) - 0.5).abs() < 1e-9);
        assert_eq!(pixel_diff(Some(&white), None), 1.0);
        assert_eq!(pixel_diff(Some(&white), Some(b"not a png")), 1.0);
    }

    #[test]
    fn the_text_diff_counts_lines_added_and_removed() {
        assert_eq!(text_diff("a\nb\nc", "a\nb\nc"), 0);
        assert_eq!(text_diff("a\nb\nc", "a\nX\nc\nd"), 3);
    }
}
