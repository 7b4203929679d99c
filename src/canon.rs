//! TEMPORARY STUB: replaced by the real SURT module.
pub fn surt(url: &str) -> String {
    url.to_ascii_lowercase()
}
