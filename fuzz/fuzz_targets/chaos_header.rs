//! The signed chaos header (SPEC §9). Two inputs per case: the raw bytes as a header, and the
//! bytes as the signed fields with a valid signature appended, so the field parser behind
//! the HMAC check is reached. Invariants: no panic; an accepted spec re-signs to a header that
//! verifies to the same spec.
#![no_main]

use hmac::{Hmac, Mac};
use kosha_resilience::chaos;
use libfuzzer_sys::fuzz_target;
use sha2::Sha256;

const KEY: &[u8] = b"fuzz-key-0123456789abcdef0123456789abcdef";
const NOW_S: u64 = 1_796_040_000;

fuzz_target!(|data: &[u8]| {
    let _ = chaos::verify(data, KEY, NOW_S);
    let mut mac = Hmac::<Sha256>::new_from_slice(KEY).expect("key");
    mac.update(data);
    let mut header = data.to_vec();
    header.extend_from_slice(b";sig=");
    for byte in mac.finalize().into_bytes() {
        header.extend_from_slice(format!("{byte:02x}").as_bytes());
    }
    if let Ok(spec) = chaos::verify(&header, KEY, NOW_S) {
        let again = spec.sign(KEY).expect("sign");
        assert_eq!(chaos::verify(again.as_bytes(), KEY, NOW_S).ok(), Some(spec));
    }
});
