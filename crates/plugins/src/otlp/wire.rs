//! A protobuf reader that borrows: walks a message's fields in the bytes as they are, so that
//! the input's hot path (a log record's strings) makes no `String` of its own before the
//! event's values. Used by [`super::logs::decode_events`]; everything else decodes with prost.
//!
//! Field by field: a key (field number and wire type, a varint), then a varint, eight or four
//! bytes, or a length and that many bytes. Groups (wire types 3 and 4, long deprecated) and
//! anything that runs past the end are errors.

/// One field's payload.
#[derive(Clone, Copy, Debug)]
pub enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    /// Length-delimited: a string, bytes, a message or a packed list.
    Bytes(&'a [u8]),
}

impl<'a> Field<'a> {
    /// The payload of a length-delimited field; an error for any other wire type.
    pub fn bytes(self) -> Result<&'a [u8], String> {
        match self {
            Field::Bytes(b) => Ok(b),
            other => Err(format!(
                "expected a length-delimited field, found {other:?}"
            )),
        }
    }

    /// A string field's text, checked as UTF-8.
    pub fn text(self) -> Result<&'a str, String> {
        std::str::from_utf8(self.bytes()?).map_err(|e| format!("a string that is not UTF-8: {e}"))
    }

    pub fn varint(self) -> Result<u64, String> {
        match self {
            Field::Varint(v) => Ok(v),
            other => Err(format!("expected a varint field, found {other:?}")),
        }
    }

    pub fn fixed32(self) -> Result<u32, String> {
        match self {
            Field::Fixed32(v) => Ok(v),
            other => Err(format!("expected a fixed32 field, found {other:?}")),
        }
    }

    pub fn fixed64(self) -> Result<u64, String> {
        match self {
            Field::Fixed64(v) => Ok(v),
            other => Err(format!("expected a fixed64 field, found {other:?}")),
        }
    }
}

/// The fields of one message, in the order they are written.
pub struct Fields<'a> {
    buf: &'a [u8],
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Fields<'a> {
        Fields { buf }
    }

    /// The next field's number and payload; `None` at the end.
    #[inline]
    pub fn next_field(&mut self) -> Result<Option<(u32, Field<'a>)>, String> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|n| *n != 0)
            .ok_or_else(|| format!("invalid field number {}", key >> 3))?;
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => Field::Fixed64(u64::from_le_bytes(
                self.take(8)?.try_into().expect("8 bytes"),
            )),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "length too large")?;
                Field::Bytes(self.take(len)?)
            }
            5 => Field::Fixed32(u32::from_le_bytes(
                self.take(4)?.try_into().expect("4 bytes"),
            )),
            t => return Err(format!("unsupported wire type {t} (field {number})")),
        };
        Ok(Some((number, field)))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.buf.len() < n {
            return Err("a field runs past the end of its message".into());
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, String> {
        // Most varints here (keys, lengths, small numbers) are one byte.
        if let Some((&b, rest)) = self.buf.split_first() {
            if b < 0x80 {
                self.buf = rest;
                return Ok(u64::from(b));
            }
        }
        self.long_varint()
    }

    fn long_varint(&mut self) -> Result<u64, String> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some((&b, rest)) = self.buf.split_first() else {
                return Err("a varint runs past the end of its message".into());
            };
            self.buf = rest;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err("a varint longer than 10 bytes".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_wire_type_and_refuses_what_runs_past_the_end() {
        // 1: varint 300; 2: "hi"; 3: fixed64 1; 4: fixed32 2.
        let msg = [
            0x08, 0xac, 0x02, 0x12, 0x02, b'h', b'i', 0x19, 1, 0, 0, 0, 0, 0, 0, 0, 0x25, 2, 0, 0,
            0,
        ];
        let mut f = Fields::new(&msg);
        let mut got = Vec::new();
        while let Some((n, v)) = f.next_field().unwrap() {
            got.push(format!("{n}:{v:?}"));
        }
        assert_eq!(
            got,
            [
                "1:Varint(300)",
                "2:Bytes([104, 105])",
                "3:Fixed64(1)",
                "4:Fixed32(2)"
            ]
        );
        for bad in [
            &[0x12, 0x05, b'a'][..],
            &[0x08, 0xff],
            &[0x0b],
            &[0x00, 0x00],
        ] {
            let mut f = Fields::new(bad);
            assert!(f.next_field().is_err(), "{bad:?}");
        }
        assert!(Field::Bytes(&[0xff]).text().is_err());
        assert!(Field::Varint(1).bytes().is_err());
    }
}
