//! Tiny generated PNG thumbnails: one per ad, colored from its id, written
//! without an image library (stored deflate blocks, `CRC-32`, Adler-32).

const SIDE: u32 = 16;

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xedb8_8320 & mask);
        }
    }
    !crc
}

fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in bytes {
        a = (a + u32::from(x)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A zlib stream of stored (uncompressed) deflate blocks.
fn zlib_stored(raw: &[u8]) -> Vec<u8> {
    let mut z = vec![0x78, 0x01];
    let mut blocks = raw.chunks(65_535).peekable();
    if blocks.peek().is_none() {
        z.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        z.push(u8::from(blocks.peek().is_none()));
        let len = block.len() as u16;
        z.extend_from_slice(&len.to_le_bytes());
        z.extend_from_slice(&(!len).to_le_bytes());
        z.extend_from_slice(block);
    }
    z.extend_from_slice(&adler32(raw).to_be_bytes());
    z
}

/// The thumbnail of `ad_id`: a 16×16 RGB PNG, two colors derived from the id.
pub fn thumbnail(ad_id: &str) -> Vec<u8> {
    let h = ad_id.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    let fg = [(h >> 16) as u8 | 0x40, (h >> 8) as u8 | 0x40, h as u8 | 0x40];
    let bg = [fg[0] / 3, fg[1] / 3, fg[2] / 3];
    let mut raw = Vec::with_capacity(((SIDE * 3 + 1) * SIDE) as usize);
    for y in 0..SIDE {
        raw.push(0); // filter: none
        for x in 0..SIDE {
            let px = if (x + y) % 6 < 3 { fg } else { bg };
            raw.extend_from_slice(&px);
        }
    }
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&SIDE.to_be_bytes());
    ihdr.extend_from_slice(&SIDE.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit RGB, deflate, no filter, no interlace
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(&mut png, b"IDAT", &zlib_stored(&raw));
    chunk(&mut png, b"IEND", &[]);
    png
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
    }

    #[test]
    fn png_shape() {
        let a = thumbnail("120200000000000301");
        assert!(a.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert_eq!(&a[12..16], b"IHDR");
        assert!(a.ends_with(&[0xae, 0x42, 0x60, 0x82]), "IEND's CRC");
        assert_eq!(a, thumbnail("120200000000000301"));
        assert_ne!(a, thumbnail("120200000000000302"));
    }
}
