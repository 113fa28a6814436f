//! The protobuf wire format: varints and tagged fields, with errors instead of panics on
//! truncated or malformed input.

/// One field's payload as it appears on the wire.
#[derive(Clone, Copy, Debug)]
pub(super) enum Wire<'a> {
    Varint(u64),
    Fixed64,
    LengthDelimited(&'a [u8]),
    Fixed32,
}

impl Wire<'_> {
    pub(super) fn type_name(&self) -> &'static str {
        match self {
            Wire::Varint(_) => "varint",
            Wire::Fixed64 => "64-bit",
            Wire::LengthDelimited(_) => "length-delimited",
            Wire::Fixed32 => "32-bit",
        }
    }
}

/// Iterates over the fields of one encoded message.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(format!("truncated varint at byte {}", self.pos));
            };
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(format!("varint overflows 64 bits at byte {}", self.pos - 1));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("varint longer than 10 bytes at byte {}", self.pos))
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(len).filter(|end| *end <= self.buf.len()).ok_or_else(|| {
            format!(
                "field of {len} bytes at byte {} runs past the end of its {}-byte message",
                self.pos,
                self.buf.len()
            )
        })?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    /// The next `(field number, payload)`, or `None` at the end of the message.
    pub(super) fn next_field(&mut self) -> Result<Option<(u64, Wire<'a>)>, String> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let number = tag >> 3;
        if number == 0 {
            return Err(format!("field number 0 at byte {}", self.pos));
        }
        let wire = match tag & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Wire::Fixed64
            }
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| "length does not fit in memory".to_string())?;
                Wire::LengthDelimited(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed32
            }
            other => {
                return Err(format!(
                    "unsupported wire type {other} for field {number} (groups are not used by Kubernetes)"
                ));
            }
        };
        Ok(Some((number, wire)))
    }
}
